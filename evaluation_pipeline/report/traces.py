"""Per-candidate traces of the most regressed queries, one small HTML page each (traces/)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from html import escape
from pathlib import Path

import polars as pl

from evaluation_pipeline.analysis.explain import Trace, explain
from evaluation_pipeline.io.atomic import write_text
from evaluation_pipeline.io.storage import HTML_FILE
from evaluation_pipeline.report.format import number
from evaluation_pipeline.report.html import CSS
from evaluation_pipeline.spec import EvaluationSpec


def trace_file_name(ranker: str, query_id: str, cutoff: int) -> str:
    """A file-name-safe, collision-free name: readable part plus a hash of the exact key."""
    key = f"{ranker}\x00{query_id}\x00{cutoff}"
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{ranker}__{query_id}__{cutoff}")[:80]
    return f"{readable}-{hashlib.sha256(key.encode()).hexdigest()[:8]}.html"


def write_regression_traces(
    folder: Path,
    comparison: dict,
    candidates: pl.DataFrame,
    judgments: pl.DataFrame,
    spec: EvaluationSpec,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[dict]:
    """Traces of both rankers for every listed regression; returns report.json ``traces``."""
    wanted = sorted({
        (ranker, r["query_id"], pair["cutoff"])
        for pair in comparison["pairs"] for r in pair["regressions"]
        for ranker in (pair["first"], pair["second"])
    })
    # Only the regressed queries are read again; the rest of the pool never enters a trace.
    query_ids = sorted({query_id for _, query_id, _ in wanted})
    candidates = candidates.filter(pl.col("query_id").cast(pl.String).is_in(query_ids))
    judgments = judgments.filter(pl.col("query_id").cast(pl.String).is_in(query_ids))
    written = []
    for i, (ranker, query_id, cutoff) in enumerate(wanted, start=1):
        trace = explain(candidates, judgments, spec, query_id=query_id, ranker=ranker,
                        cutoff=cutoff)
        name = trace_file_name(ranker, query_id, cutoff)
        write_text(render_trace_html(trace, spec), folder / name)
        written.append({"ranker": ranker, "query_id": query_id, "cutoff": cutoff,
                        "path": f"{folder.name}/{name}", "dcg": trace.dcg,
                        "ideal_dcg": trace.ideal_dcg, "ndcg": trace.ndcg,
                        "status": trace.status})
        if progress is not None:
            progress("traces", i, len(wanted))
    return written


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return escape(str(value))


def _table(frame: pl.DataFrame) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in frame.columns)
    rows = "".join(
        "<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>"
        for row in frame.iter_rows()
    )
    return f"<table><tr>{head}</tr>{rows}</table>"


def render_trace_html(trace: Trace, spec: EvaluationSpec) -> str:
    title = f"Trace: {trace.ranker}, query {trace.query_id}, NDCG@{trace.cutoff}"
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}'
        f"</title><style>{CSS}</style></head><body><h1>{escape(title)}</h1>"
        f"<p>judgments {escape(str(trace.judgment_version))}; status {escape(trace.status)}; "
        f"DCG@{trace.cutoff} {number(trace.dcg, 6)}, ideal DCG@{trace.cutoff} "
        f"{number(trace.ideal_dcg, 6)}, NDCG {number(trace.ndcg, 6)}.</p>"
        f"<p>{escape(spec.describe())}. Positions are after the tie rule; "
        "under averaged ties a group spans position_first..position_last and each member gets "
        "the group's mean discount.</p>"
        f"<h2>Ranked candidates</h2>{_table(trace.candidates)}"
        f"<h2>Ideal order</h2>{_table(trace.ideal)}"
        f'<p><a href="../{HTML_FILE}">back to the report</a></p></body></html>\n'
    )
