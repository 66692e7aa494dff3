"""Per-candidate traces, one small HTML page each (traces/): of the most regressed queries of a
ranker comparison, and of the queries that moved most between two nights (both nights on one
page). The spec's nDCG@K are traced by ``analysis.explain``, every other measure by
``analysis.measure_trace``; a page's file name carries the measure when it is not the spec's
nDCG@K (an nDCG@K page keeps the name it has always had)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path

import polars as pl

from evaluation_pipeline.analysis.explain import Trace, explain_many
from evaluation_pipeline.analysis.measure_trace import MeasureTrace, explain_measures
from evaluation_pipeline.io.atomic import write_text
from evaluation_pipeline.io.storage import HTML_FILE
from evaluation_pipeline.report.format import number
from evaluation_pipeline.report.night_html import shown
from evaluation_pipeline.report.templating import ENVIRONMENT, render
from evaluation_pipeline.spec import EvaluationSpec
from schemas.columns import measure_of, ndcg_name


def trace_file_name(ranker: str, query_id: str, cutoff: int | None,
                    measure: str | None = None) -> str:
    """A file-name-safe, collision-free name: readable part plus a hash of the exact key. The
    spec's nDCG@K (``measure`` None or ``nDCG@<cutoff>``) is keyed by its cutoff, as its pages
    have always been named; any other measure by its canonical name (``RR(rel=2)@10``)."""
    own = measure is None or (cutoff is not None and measure == ndcg_name(cutoff))
    label = cutoff if own else measure
    key = f"{ranker}\x00{query_id}\x00{label}"
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{ranker}__{query_id}__{label}")[:80]
    return f"{readable}-{hashlib.sha256(key.encode()).hexdigest()[:8]}.html"


def write_regression_traces(
    folder: Path,
    comparison: dict,
    candidates: pl.DataFrame,
    judgments: pl.DataFrame,
    spec: EvaluationSpec,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[dict]:
    """Traces of both rankers for every listed regression, of every measure: the spec's
    nDCG@K with its gains, discounts and ideal order, any other measure with its own terms
    (``analysis.measure_trace``); returns report.json ``traces``, each naming its measure."""
    keys = sorted({
        (ranker, r["query_id"], measure_of(pair), pair["cutoff"])
        for pair in comparison["pairs"]
        for r in pair["regressions"] for ranker in (pair["first"], pair["second"])
    }, key=lambda key: (key[0], key[1], key[3] is None, key[3] or 0, key[2]))
    own = [(ranker, query_id, cutoff) for ranker, query_id, measure, cutoff in keys
           if measure == ndcg_name(cutoff)]
    others = [(ranker, query_id, measure) for ranker, query_id, measure, cutoff in keys
              if measure != ndcg_name(cutoff)]
    # Only the regressed queries are read again; the rest of the pool never enters a trace.
    traced = dict(zip(own, explain_many(candidates, judgments, spec, own), strict=True))
    traced |= dict(zip(others, explain_measures(candidates, judgments, spec, others),
                       strict=True))
    written = []
    for i, (ranker, query_id, measure, cutoff) in enumerate(keys, start=1):
        is_own = measure == ndcg_name(cutoff)
        trace = traced[(ranker, query_id, cutoff if is_own else measure)]
        name = trace_file_name(ranker, query_id, cutoff, measure)
        page = (render_trace_html(trace, spec) if is_own
                else render_measure_trace_html(trace, spec))
        write_text(page, folder / name)
        written.append({"ranker": ranker, "query_id": query_id, "cutoff": cutoff,
                        "measure": measure, "path": f"{folder.name}/{name}",
                        "value": trace.ndcg if is_own else trace.value,
                        "dcg": trace.dcg if is_own else None,
                        "ideal_dcg": trace.ideal_dcg if is_own else None,
                        "ndcg": trace.ndcg if is_own else None, "status": trace.status})
        if progress is not None:
            progress("traces", i, len(keys))
    return written


def night_trace_file_name(ranker: str, query_id: str, cutoff: int | None,
                          measure: str | None = None) -> str:
    return "night__" + trace_file_name(ranker, query_id, cutoff, measure)


def mover_queries(nightly: dict, top_cutoff: int) -> list[str]:
    """The query ids whose night traces a report writes (``night_html.shown``'s movers)."""
    return sorted({m["query_id"] for c in shown(nightly, top_cutoff) for m in c["movers"]})


def write_night_traces(folder: Path, nightly: dict, top_cutoff: int, judgments: pl.DataFrame,
                       current: pl.DataFrame, previous: pl.DataFrame, spec: EvaluationSpec
                       ) -> dict:
    """A page per mover listed on the report (``mover_queries``), with both nights' ranked
    candidates and the ideal order under the one judgment version; returns ``nightly`` with
    each listed mover's ``trace`` (its path under the report folder)."""
    def is_ndcg(c: dict) -> bool:
        return c["cutoff"] is not None and measure_of(c) == ndcg_name(c["cutoff"])

    listed = {(c["ranker"], c["cutoff"], measure_of(c)) for c in shown(nightly, top_cutoff)}
    chosen = [c for c in nightly["comparisons"]
              if (c["ranker"], c["cutoff"], measure_of(c)) in listed]
    keys = [(c["ranker"], m["query_id"], c["cutoff"]) for c in chosen if is_ndcg(c)
            for m in c["movers"]]
    others = [(c["ranker"], m["query_id"], measure_of(c)) for c in chosen if not is_ndcg(c)
              for m in c["movers"]]
    # Each night's traces in one pass over the movers' queries.
    nights = dict(zip(keys, zip(explain_many(previous, judgments, spec, keys),
                                explain_many(current, judgments, spec, keys))))
    nights |= dict(zip(others, zip(explain_measures(previous, judgments, spec, others),
                                   explain_measures(current, judgments, spec, others))))
    comparisons = []
    for c in nightly["comparisons"]:
        if (c["ranker"], c["cutoff"], measure_of(c)) not in listed:
            comparisons.append(c)
            continue
        movers = []
        for m in c["movers"]:
            if is_ndcg(c):
                key = (c["ranker"], m["query_id"], c["cutoff"])
                name = night_trace_file_name(*key)
                page = render_night_trace_html(nightly, m, *nights[key], spec)
            else:
                key = (c["ranker"], m["query_id"], measure_of(c))
                name = night_trace_file_name(c["ranker"], m["query_id"], c["cutoff"], key[2])
                page = render_night_measure_trace_html(nightly, m, *nights[key], spec)
            write_text(page, folder / name)
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


# A measure's pages: the NDCG pages' layout, the measure's own columns and formula in place of
# DCG's gain and discount (an nDCG with parameters of its own keeps an ideal order).
_MEASURE_TRACE = ENVIRONMENT.from_string("""\
{% extends "page.html" %}
{% from "macros.html" import frame_table %}
{% block body %}
<h1>{{ title }}</h1><p>judgments {{ judgment_version }}; status {{ status }};
{{ measure }} {{ value }}: {{ formula }}.</p><p>{{ spec }}. Positions are within the list the
measure reads, after the tie rule; under averaged ties a group spans
position_first..position_last.</p>
<h2>Ranked candidates</h2>{{ frame_table(candidates) }}
{% if ideal is not none %}<h2>Ideal order</h2>{{ frame_table(ideal) }}{% endif %}
<p><a href="../{{ report }}">back to the report</a></p>
{% endblock %}
""")

_NIGHT_MEASURE_TRACE = ENVIRONMENT.from_string("""\
{% extends "page.html" %}
{% from "macros.html" import frame_table %}
{% block body %}
<h1>{{ title }}</h1><p>Query {{ query_id }}{% if query_text is not none %}
({{ query_text }}){% endif %}; judgments {{ judgment_version }}; {{ measure }}
{{ value_previous }} on {{ previous_pool }}, {{ value_current }} tonight
({{ difference }}).</p><p>{{ spec }}. Each night's ranked candidates within the measure's
cutoff, positions within the list the measure reads, after the tie rule.</p>
{% for night in nights %}
<h2>{{ night.label }}: status {{ night.status }}, {{ measure }} {{ night.value }}:
{{ night.formula }}</h2>{{ frame_table(night.candidates) }}
{% if night.ideal is not none %}<h3>Ideal order</h3>{{ frame_table(night.ideal) }}{% endif %}
{% endfor %}
<p><a href="../{{ report }}#movers">back to the report</a></p>
{% endblock %}
""")


def _measure_frame(trace: MeasureTrace, top: bool = False) -> dict:
    """A measure trace's table; ``top``: only its positions within the measure's cutoff."""
    frame = trace.candidates
    if top and trace.cutoff is not None:
        frame = frame.filter(pl.col("position_first") <= trace.cutoff)
    return _frame(frame)


def _measure_ideal(trace: MeasureTrace, top: bool = False) -> dict | None:
    if trace.ideal is None:
        return None
    ideal = trace.ideal
    if top and trace.cutoff is not None:
        ideal = ideal.filter(pl.col("ideal_position") <= trace.cutoff)
    return _frame(ideal)


def render_measure_trace_html(trace: MeasureTrace | Trace, spec: EvaluationSpec) -> str:
    """A measure's trace page (the spec's nDCG@K: ``render_trace_html``'s)."""
    if isinstance(trace, Trace):
        return render_trace_html(trace, spec)
    return _MEASURE_TRACE.render(
        title=f"Trace: {trace.ranker}, query {trace.query_id}, {trace.measure}",
        judgment_version=str(trace.judgment_version),
        status=trace.status,
        measure=trace.measure,
        value=number(trace.value, 6),
        formula=trace.formula,
        spec=spec.describe(),
        candidates=_measure_frame(trace),
        ideal=_measure_ideal(trace),
        report=HTML_FILE,
    )


def render_night_measure_trace_html(nightly: dict, mover: dict, previous: MeasureTrace | Trace,
                                    current: MeasureTrace | Trace, spec: EvaluationSpec) -> str:
    """A mover's page of a measure on both nights (the spec's nDCG@K:
    ``render_night_trace_html``'s)."""
    if isinstance(current, Trace):
        return render_night_trace_html(nightly, mover, previous, current, spec)
    nights = ((f"Previous night ({nightly['previous_pool']})", previous), ("Tonight", current))
    return _NIGHT_MEASURE_TRACE.render(
        title=(f"Night over night: {current.ranker}, query {current.query_id}, "
               f"{current.measure}"),
        query_id=current.query_id,
        query_text=mover.get("query_text") or None,
        judgment_version=str(current.judgment_version),
        measure=current.measure,
        value_previous=number(previous.value, 6),
        previous_pool=nightly["previous_pool"],
        value_current=number(current.value, 6),
        difference=number(mover["difference"], 6, signed=True),
        spec=spec.describe(),
        nights=[{
            "label": label, "status": trace.status, "value": number(trace.value, 6),
            "formula": trace.formula, "candidates": _measure_frame(trace, top=True),
            "ideal": _measure_ideal(trace, top=True),
        } for label, trace in nights],
        report=HTML_FILE,
    )
