"""Per-candidate traces, one small HTML page each (traces/): of the most regressed queries of a
ranker comparison, and of the queries that moved most between two nights (both nights on one
page)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path

import polars as pl

from evaluation_pipeline.analysis.explain import Trace, explain_many
from evaluation_pipeline.io.atomic import write_text
from evaluation_pipeline.io.storage import HTML_FILE
from evaluation_pipeline.report.format import number
from evaluation_pipeline.report.night_html import shown
from evaluation_pipeline.report.templating import render
from evaluation_pipeline.spec import EvaluationSpec
from schemas.columns import ndcg_name


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
    # A trace shows each place's NDCG terms: the spec's nDCG@K pairs are traced (the other
    # measures' regressions are listed in report.json without one).
    wanted = sorted({
        (ranker, r["query_id"], pair["cutoff"])
        for pair in comparison["pairs"] if pair["measure"] == ndcg_name(pair["cutoff"])
        for r in pair["regressions"] for ranker in (pair["first"], pair["second"])
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
    nights = ((f"Previous night ({nightly['previous_pool']})", previous), ("Tonight", current))
    return render(
        "night_trace.html",
        title=(f"Night over night: {current.ranker}, query {current.query_id}, "
               f"NDCG@{current.cutoff}"),
        query_id=current.query_id,
        query_text=mover.get("query_text") or None,
        judgment_version=str(current.judgment_version),
        ndcg_previous=number(previous.ndcg, 6),
        previous_pool=nightly["previous_pool"],
        ndcg_current=number(current.ndcg, 6),
        difference=number(mover["difference"], 6, signed=True),
        spec=spec.describe(),
        cutoff=current.cutoff,
        nights=[{
            "label": label, "status": trace.status, "dcg": number(trace.dcg, 6),
            "ideal_dcg": number(trace.ideal_dcg, 6),
            "candidates": _frame(trace.candidates.filter(pl.col("position_first") <= trace.cutoff)),
            "ideal": _frame(trace.ideal.filter(pl.col("ideal_position") <= trace.cutoff)),
        } for label, trace in nights],
        report=HTML_FILE,
    )


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _frame(frame: pl.DataFrame) -> dict:
    """A trace's table as text: its columns, and each row's cells as the page prints them."""
    return {"columns": frame.columns,
            "rows": [[_cell(v) for v in row] for row in frame.iter_rows()]}


def render_trace_html(trace: Trace, spec: EvaluationSpec) -> str:
    return render(
        "trace.html",
        title=f"Trace: {trace.ranker}, query {trace.query_id}, NDCG@{trace.cutoff}",
        judgment_version=str(trace.judgment_version),
        status=trace.status,
        cutoff=trace.cutoff,
        dcg=number(trace.dcg, 6),
        ideal_dcg=number(trace.ideal_dcg, 6),
        ndcg=number(trace.ndcg, 6),
        spec=spec.describe(),
        candidates=_frame(trace.candidates),
        ideal=_frame(trace.ideal),
        report=HTML_FILE,
    )
