"""Per-candidate traces, one small HTML page each (traces/): of the most regressed queries of a
ranker comparison, and of the queries that moved most between two nights (both nights on one
page)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from html import escape
from pathlib import Path

import polars as pl

from evaluation_pipeline.analysis.explain import Trace, explain_many
from evaluation_pipeline.io.atomic import write_text
from evaluation_pipeline.io.storage import HTML_FILE
from evaluation_pipeline.report.format import number
from evaluation_pipeline.report.html import CSS
from evaluation_pipeline.report.night_html import shown
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
    traces = explain_many(candidates, judgments, spec, wanted)
    written = []
    for i, ((ranker, query_id, cutoff), trace) in enumerate(zip(wanted, traces), start=1):
        name = trace_file_name(ranker, query_id, cutoff)
        write_text(render_trace_html(trace, spec), folder / name)
        written.append({"ranker": ranker, "query_id": query_id, "cutoff": cutoff,
                        "path": f"{folder.name}/{name}", "dcg": trace.dcg,
                        "ideal_dcg": trace.ideal_dcg, "ndcg": trace.ndcg,
                        "status": trace.status})
        if progress is not None:
            progress("traces", i, len(wanted))
    return written


def night_trace_file_name(ranker: str, query_id: str, cutoff: int) -> str:
    return "night__" + trace_file_name(ranker, query_id, cutoff)


def mover_queries(nightly: dict, top_cutoff: int) -> list[str]:
    """The query ids whose night traces a report writes (``night_html.shown``'s movers)."""
    return sorted({m["query_id"] for c in shown(nightly, top_cutoff) for m in c["movers"]})


def write_night_traces(folder: Path, nightly: dict, top_cutoff: int, judgments: pl.DataFrame,
                       current: pl.DataFrame, previous: pl.DataFrame, spec: EvaluationSpec
                       ) -> dict:
    """A page per mover listed on the report (``mover_queries``), with both nights' ranked
    candidates and the ideal order under the one judgment version; returns ``nightly`` with
    each listed mover's ``trace`` (its path under the report folder)."""
    listed = {(c["ranker"], c["cutoff"]) for c in shown(nightly, top_cutoff)}
    keys = [(c["ranker"], m["query_id"], c["cutoff"]) for c in nightly["comparisons"]
            if (c["ranker"], c["cutoff"]) in listed for m in c["movers"]]
    # Each night's traces in one pass over the movers' queries.
    nights = dict(zip(keys, zip(explain_many(previous, judgments, spec, keys),
                                explain_many(current, judgments, spec, keys))))
    comparisons = []
    for c in nightly["comparisons"]:
        if (c["ranker"], c["cutoff"]) not in listed:
            comparisons.append(c)
            continue
        movers = []
        for m in c["movers"]:
            key = (c["ranker"], m["query_id"], c["cutoff"])
            name = night_trace_file_name(*key)
            write_text(render_night_trace_html(nightly, m, *nights[key], spec), folder / name)
            movers.append(m | {"trace": f"{folder.name}/{name}"})
        comparisons.append(c | {"movers": movers})
    return nightly | {"comparisons": comparisons}


def render_night_trace_html(nightly: dict, mover: dict, previous: Trace, current: Trace,
                            spec: EvaluationSpec) -> str:
    title = (f"Night over night: {current.ranker}, query {current.query_id}, "
             f"NDCG@{current.cutoff}")
    text = f" ({escape(mover['query_text'])})" if mover.get("query_text") else ""
    parts = [f"<p>Query {escape(current.query_id)}{text}; judgments "
             f"{escape(str(current.judgment_version))}; NDCG {number(previous.ndcg, 6)} on "
             f"{escape(nightly['previous_pool'])}, {number(current.ndcg, 6)} tonight "
             f"({number(mover['difference'], 6, signed=True)}).</p>",
             f"<p>{escape(spec.describe())}. The top {current.cutoff} positions after the tie "
             "rule, each night; the ideal order is the same for both when their candidates "
             "hold the same graded documents.</p>"]
    for label, trace in ((f"Previous night ({nightly['previous_pool']})", previous),
                         ("Tonight", current)):
        top = trace.candidates.filter(pl.col("position_first") <= trace.cutoff)
        parts.append(f"<h2>{escape(label)}: status {escape(trace.status)}, DCG "
                     f"{number(trace.dcg, 6)}, ideal DCG {number(trace.ideal_dcg, 6)}</h2>"
                     f"{_table(top)}<h3>Ideal order</h3>"
                     f"{_table(trace.ideal.filter(pl.col('ideal_position') <= trace.cutoff))}")
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}'
        f"</title><style>{CSS}</style></head><body><h1>{escape(title)}</h1>{''.join(parts)}"
        f'<p><a href="../{HTML_FILE}#movers">back to the report</a></p></body></html>\n'
    )


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
