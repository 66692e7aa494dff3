"""``evaluate``, ``explain``, ``reconcile`` and ``agreement``: the commands ``ndcg-eval
score``, ``explain``, ``reconcile`` and ``agreement`` as functions, on files or on inputs held
in memory (``api.in_memory``).

Each runs the command's own code: the spec as --spec/--profile/--cutoff resolve it, the engine
the registry resolves (``engines.resolve``) and the readers, with every option checked before
any input is read. Inputs in memory are read where they are (``io.table_inputs``); the rows of
an engine that keeps them (``Engine.keeps_rows``) stay in memory, and only an engine that reads
and writes files alone gets them through a temporary folder.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from evaluation_pipeline.analysis.agreement import agreement as agreement_of
from evaluation_pipeline.analysis.agreement import check_ratings
from evaluation_pipeline.analysis.explain import Trace
from evaluation_pipeline.analysis.explain import explain as trace_of
from evaluation_pipeline.analysis.measure_trace import MeasureTrace, explain_measure, is_spec_ndcg
from evaluation_pipeline.analysis.reconcile import ReconcileError, Scorer, plan
from evaluation_pipeline.analysis.reconcile import reconcile as reconciled
from evaluation_pipeline.analysis.reconcile_measures import (
    API_OPTIONS,
    MeasureScorer,
    plan_measure_walk,
    reconcile_measure,
)
from evaluation_pipeline.api import arguments
from evaluation_pipeline.api.arguments import ApiOptionError
from evaluation_pipeline.api.evaluated import Evaluation
from evaluation_pipeline.api.in_memory import (
    Staging,
    as_input,
    is_path,
    read_queries_input,
)
from evaluation_pipeline.engines import (
    AUTO,
    ENGINES,
    EngineResult,
    Resources,
    ScoringInputs,
    ScoringOutput,
    resolve,
)
from evaluation_pipeline.engines.local import read_and_evaluate
from evaluation_pipeline.evaluation import Lineage, read_with_lineage
from evaluation_pipeline.io import leftovers
from evaluation_pipeline.io.budget import Budget
from evaluation_pipeline.io.spec_files import spec_named
from evaluation_pipeline.io.storage import PER_QUERY_FILE
from evaluation_pipeline.io.table_inputs import read_candidates, read_judgments
from evaluation_pipeline.measures.parse import Measure, parse_measure
from evaluation_pipeline.spec import (
    EvaluationSpec,
    SpecError,
    check_cutoffs,
    overridden,
    profile,
)

SpecLike = EvaluationSpec | str | Path | None

__all__ = ["ApiOptionError", "agreement", "evaluate", "explain", "reconcile", "resolve_spec"]


def resolve_spec(spec: SpecLike = None, cutoffs: Sequence[int] | None = None,
                 measures: Sequence[str] | None = None) -> EvaluationSpec:
    """The spec as the CLI resolves --spec, --profile, --measure and --cutoff: None is the
    default profile, a string a profile name or a spec file, a path a spec file. ``measures``
    (None: the spec's own) replace its list of measures, as --measure does; ``cutoffs`` (None:
    the spec's own) go through the spec's check of cutoffs, as --cutoff does: 2.5, 0, True or
    an empty list is refused (``SpecError``), never cut to another K or dropped; they replace
    the list's plain nDCG@K."""
    if spec is None:
        chosen = profile("default")
    elif isinstance(spec, EvaluationSpec):
        chosen = spec
    elif isinstance(spec, str | Path):
        chosen = spec_named(str(spec))
    else:
        raise SpecError(f"spec must be a profile name, a spec file or an EvaluationSpec, "
                        f"not {type(spec).__name__}")
    return overridden(chosen, cutoffs, measures)


def evaluate(
    judgments: Any,
    run: Any,
    *,
    spec: SpecLike = None,
    cutoffs: Sequence[int] | None = None,
    measures: Sequence[str] | None = None,
    queries: Any = None,
    engine: str = AUTO,
    judgment_version: str | None = None,
    pool: str | None = None,
    ranker: str | None = None,
    memory_limit: str | int | None = None,
) -> Evaluation:
    """NDCG@K of ``run`` against ``judgments``, as ``ndcg-eval score`` computes it.

    ``judgments`` and ``run``: a path or URL (a run file, or a pool folder with one run file
    per ranker), a polars or pandas DataFrame or pyarrow Table with the contract's columns, or
    a nested dict (``{query_id: {doc_id: grade}}``; ``{query_id: {doc_id: score}}`` for one
    ranker, ``{ranker: {query_id: {doc_id: score}}}`` for several). ``judgment_version``,
    ``pool`` and ``ranker`` name inputs that carry no such column, as --judgment-version,
    --pool and --ranker do (an in-memory input otherwise reads as ``judgments.parquet`` and
    ``pool/run.parquet``: version ``judgments``, pool ``pool``, ranker ``run``). ``spec``: a
    profile name, a spec file or an ``EvaluationSpec``; ``measures`` (``["nDCG@10",
    "RR(rel=2)@10", "AP(rel=2)"]``, docs/spec.md) replace its list, as --measure does, and
    ``cutoffs`` its nDCG@K. ``per_query`` then holds a row per ranker, query and measure.
    ``queries``: weights and slice columns (a path or a table). ``engine``: as --engine."""
    chosen = resolve_spec(spec, cutoffs, measures)
    if engine not in ENGINES:
        raise ApiOptionError(f"engine {engine!r} is none of {', '.join(ENGINES)}")
    ranker = arguments.text("ranker", ranker)
    budget = Budget.of(arguments.size("memory_limit", memory_limit))
    budget.check_spill_dir()
    table, digest = read_queries_input(queries) if queries is not None else (None, None)
    inputs = ScoringInputs(as_input(judgments, "judgments"), as_input(run, "run"),
                           judgment_version=judgment_version, pool=pool, ranker=ranker)
    result, per_query, lineage = _score(inputs, chosen, engine, budget)
    return Evaluation(per_query, chosen, lineage, result.engine, table, digest,
                      result.judgments, result.candidates, result.notes)


def _score(inputs: ScoringInputs, spec: EvaluationSpec, engine: str, budget: Budget
           ) -> tuple[EngineResult, pl.DataFrame, Lineage]:
    """The engine's result, its per-query rows and their lineage. An engine that keeps its
    rows scores the inputs where they are; another reads files alone and writes one, so its
    tables are staged and its rows read back, from a temporary folder."""
    scorer = resolve(engine, inputs, budget)
    resources = Resources(budget=budget, progress=False)
    if scorer.keeps_rows:
        result = scorer.score(inputs, spec, ScoringOutput(), resources)
        return result, result.per_query, result.lineage
    # Held while it is read (leftovers.scratch_folder): the next run's sweep of the temporary
    # folder, in this process or another, removes only scratch folders no live writer holds.
    with leftovers.scratch_folder("ndcg-eval-") as folder:
        staging = Staging(Path(folder))
        with staging.naming():
            target = Path(folder) / "result" / PER_QUERY_FILE
            target.parent.mkdir()
            result = scorer.score(staging.inputs(inputs), spec, ScoringOutput(target),
                                  resources)
            per_query, lineage = read_with_lineage(target)
    return result, per_query, lineage


def explain(
    judgments: Any,
    run: Any,
    *,
    query: str,
    ranker: str,
    cutoff: int | None = None,
    measure: str | Measure | None = None,
    spec: SpecLike = None,
    judgment_version: str | None = None,
    pool: str | None = None,
) -> Trace | MeasureTrace | list[Trace]:
    """As ``ndcg-eval explain``: the per-candidate trace (gain, discount, contribution) of
    ``ranker``'s NDCG@``cutoff`` on ``query``; without ``cutoff`` one trace per cutoff of the
    spec. ``measure`` (ir_measures' syntax: ``RR(rel=2)@10``, ``AP(rel=2)@100``, ``R@100``)
    traces that measure instead, one trace: each position's part in it under the spec's
    conventions (``analysis.measure_trace``); a plain ``nDCG@K`` is the NDCG trace at K. Given
    with ``measure``, ``cutoff`` must be the measure's own. A one-ranker run in memory is that
    ranker's."""
    query, ranker = arguments.query_id("query", query), arguments.text("ranker", ranker)
    if ranker is None:
        raise ApiOptionError("ranker: name the ranker whose number to trace")
    named = None
    if measure is not None:
        named = measure if isinstance(measure, Measure) else parse_measure(
            arguments.text("measure", measure))
        if cutoff is not None:
            (k,) = check_cutoffs([cutoff])
            if named.cutoff != k:
                raise ApiOptionError(_disagreement(named, k))
        if is_spec_ndcg(named):  # the NDCG trace, as cutoff=K gives it
            cutoff, named = named.cutoff, None
    chosen = resolve_spec(spec, None if cutoff is None or named is not None else [cutoff])
    grades = read_judgments(as_input(judgments, "judgments"), version=judgment_version)
    # A file names its rankers; an in-memory run without a ranker column is this one.
    candidates = read_candidates(as_input(run, "run"), pool=pool,
                                 ranker=None if is_path(run) else ranker)
    if named is not None:
        return explain_measure(candidates, grades, chosen, query_id=query, ranker=ranker,
                               measure=named)
    traces = [trace_of(candidates, grades, chosen, query_id=query, ranker=ranker,
                       cutoff=k) for k in chosen.cutoffs]
    return traces[0] if cutoff is not None else traces


def _disagreement(measure: Measure, cutoff: int) -> str:
    """Why a measure and a cutoff given together are refused: the measure names its own."""
    if "cutoff" not in measure.declaration.params:
        return (f"measure {measure} and cutoff={cutoff} disagree: {measure.name} takes no "
                "cutoff; leave cutoff out")
    name = str(measure).rsplit("@", 1)[0] if measure.cutoff is not None else str(measure)
    own = (f"its cutoff is {measure.cutoff}" if measure.cutoff is not None
           else "it has no cutoff (it reads the whole list)")
    return (f"measure {measure} and cutoff={cutoff} disagree: {own}; give the measure alone, "
            f"{name}@{cutoff} for that cutoff")


def reconcile(
    judgments: Any,
    run: Any,
    source: SpecLike,
    target: SpecLike = None,
    *,
    cutoffs: Sequence[int] | None = None,
    queries: Any = None,
    order: Sequence[str] | None = None,
    shapley: bool = False,
    sensitivity: bool = False,
    measure: str | Measure | None = None,
    to_measure: str | Measure | None = None,
    judgment_version: str | None = None,
    pool: str | None = None,
    ranker: str | None = None,
) -> dict:
    """As ``ndcg-eval reconcile --json``: the walk from spec ``source`` to ``target`` field by
    field, what each convention does to the mean (with ``shapley``, each field's mean
    contribution over all orders; with ``sensitivity``, each field of ``source`` set to each
    alternative). Specs are profile names, spec files or ``EvaluationSpec``s.

    ``measure`` (``"AP(rel=1)@100"``, as --measure) compares that measure instead of NDCG@K,
    on both sides unless ``to_measure`` names the target's (of its family; without ``target``
    the walk stays within ``source``): the measure's differing parameters are steps too
    (``analysis.reconcile_measures``)."""
    shapley = arguments.flag("shapley", shapley)
    sensitivity = arguments.flag("sensitivity", sensitivity)
    ranker = arguments.text("ranker", ranker)
    if measure is not None or to_measure is not None:
        return _reconcile_measure(
            judgments, run, source, target, measure, to_measure, cutoffs=cutoffs,
            queries=queries, order=order, shapley=shapley, sensitivity=sensitivity,
            judgment_version=judgment_version, pool=pool, ranker=ranker)
    if target is None and not sensitivity:
        raise ReconcileError("give a target spec to walk to, or sensitivity=True to vary the "
                             "source alone")
    start = resolve_spec(source)
    end = None if target is None else resolve_spec(target)
    # A string is the CLI's --order F1,F2,...
    order = order.split(",") if isinstance(order, str) else order
    the_plan = plan(start, end, cutoffs=None if cutoffs is None else check_cutoffs(cutoffs),
                    order=None if order is None else arguments.names("order", order),
                    source_label=_label(source),
                    target_label="" if target is None else _label(target))
    needs_rank = the_plan.source.needs_rank or (end is not None and end.needs_rank)
    table = read_queries_input(queries)[0] if queries is not None else None
    inputs = ScoringInputs(as_input(judgments, "judgments"), as_input(run, "run"),
                           judgment_version=judgment_version, pool=pool, ranker=ranker)
    grades, candidates, rows, lineage = read_and_evaluate(inputs, the_plan.source,
                                                          ranks=needs_rank, display=sensitivity)
    scorer = Scorer(grades, candidates, table, lineage)
    scorer.add(the_plan.source, rows)
    return reconciled(scorer, the_plan, shapley=shapley, sensitivity=sensitivity)


def _reconcile_measure(judgments: Any, run: Any, source: SpecLike, target: SpecLike,
                       measure: str | Measure | None, to_measure: str | Measure | None, *,
                       cutoffs: Sequence[int] | None, queries: Any,
                       order: Sequence[str] | str | None, shapley: bool, sensitivity: bool,
                       judgment_version: str | None, pool: str | None, ranker: str | None
                       ) -> dict:
    """``reconcile`` of a measure: its walk through the spec's fields and the measure's
    parameters, every option checked before the inputs are read."""
    if sensitivity:
        raise ReconcileError("sensitivity varies the spec's fields for NDCG@K; with measure= "
                             "give a target spec or to_measure= to walk to")
    if target is None and to_measure is None:
        raise ReconcileError("give a target spec or to_measure= to walk to")
    order = order.split(",") if isinstance(order, str) else order
    names = {"measure": measure, "to_measure": to_measure}
    for name, value in names.items():
        if value is not None and not isinstance(value, Measure):
            names[name] = arguments.text(name, value)
    the_plan = plan_measure_walk(
        resolve_spec(source), None if target is None else resolve_spec(target),
        names["measure"], names["to_measure"],
        cutoffs=None if cutoffs is None else check_cutoffs(cutoffs),
        order=None if order is None else arguments.names("order", order),
        source_label=_label(source), target_label="" if target is None else _label(target),
        options=API_OPTIONS)
    start = the_plan.step_spec(())
    table = read_queries_input(queries)[0] if queries is not None else None
    scoring = ScoringInputs(as_input(judgments, "judgments"), as_input(run, "run"),
                            judgment_version=judgment_version, pool=pool, ranker=ranker)
    grades, candidates, rows, lineage = read_and_evaluate(
        scoring, start, ranks=start.needs_rank or the_plan.target.needs_rank)
    scorer = MeasureScorer(grades, candidates, table, lineage)
    scorer.add(start, rows)
    return reconcile_measure(scorer, the_plan, shapley=shapley)


def agreement(
    judgments: Any,
    run: Any = None,
    *,
    spec: SpecLike = None,
    cutoffs: Sequence[int] | None = None,
    judgment_version: str | None = None,
    pool: str | None = None,
    ranker: str | None = None,
) -> dict:
    """As ``ndcg-eval agreement --json``: how far the raters of a version with a rater column
    agree (Cohen's kappa per pair, Krippendorff's alpha, Fleiss' kappa) and, with ``run``, NDCG
    per ranker under each rater alone and under the spec's rule, and Kendall's tau between the
    raters' orders of the rankers. ``judgments`` takes what ``evaluate`` takes, and the dict
    ``{rater: {query_id: {doc_id: grade}}}``; a version without raters is refused."""
    chosen = resolve_spec(spec, cutoffs)
    ranker = arguments.text("ranker", ranker)
    source = as_input(judgments, "judgments")
    ratings = read_judgments(source, version=judgment_version)
    check_ratings(ratings, chosen, str(source))
    candidates = None if run is None else read_candidates(
        as_input(run, "run"), pool=pool, ranker=None if is_path(run) else ranker)
    return agreement_of(ratings, chosen, candidates)


def _label(spec: SpecLike) -> str:
    """A spec as the reconciliation names it: the profile or file as given, else its id."""
    return spec.spec_id if isinstance(spec, EvaluationSpec) else str(spec or "default")
