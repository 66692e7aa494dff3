"""Reconcile two numbers of one measure family: the walk of ``analysis.reconcile`` through the
measure's own parameters as well as the spec's fields.

A side is a spec and a measure (``AP(rel=1)@100`` under ``default``, ``AP(rel=2)@100`` under
``trec_eval``); both measures are of one family (AP, RR, nDCG, ...: one declaration in
``measures.declarations``). The walk's steps are the differing spec fields that apply to that
family, in spec order, then the differing parameters of the measure (``cutoff``, ``rel``,
``dcg``, ``judged_only``, ``p``, ``max_rel``), in the order the family declares them; a state
of the walk is the source spec with the fields stepped so far set to the target's and the
source measure with the parameters stepped so far set to the target's. nDCG's and DCG's gain is
the measure's ``dcg=`` when it gives one, else the spec's ``gain`` (a spec field step); their
discount is always the spec's (the measure syntax has none).

A spec field that does not apply to the family (``gain`` for RR: RR never reads a gain) is not a
step, and the document lists it with the reason (:func:`not_applicable`). Such a field cannot
move the number, so the walk still ends at the target's number; that is checked when one of
them differs, by scoring the target itself.

Each state is scored by the project's own scorer, ``metric.ndcg.score`` (what every engine's
scoring runs: the NDCG kernel and, in its pass, the measures' compiled pass), on the frames held
in memory, with the state's measure beside the plain nDCG@K a spec must list; the mean compared
is ``aggregation.aggregate_table``'s ``macro_value`` (and ``weighted_value``) of that measure's
rows, per ranker. The walk telescopes, and Shapley averages each step's marginal contribution
over every order (``analysis.reconcile.shapley_values``' formula).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any, NamedTuple

import polars as pl

from evaluation_pipeline.aggregation.aggregate_table import aggregate
from evaluation_pipeline.analysis.measure_trace import is_spec_ndcg
from evaluation_pipeline.analysis.reconcile import (
    FIELDS,
    Mean,
    ReconcileError,
    Scorer,
    check_shapley_bound,
    field_value,
    mean_change,
    movers,
    query_changes,
    shapley_shares,
)
from evaluation_pipeline.measures.declarations import NOT_PROVIDED
from evaluation_pipeline.measures.parse import Measure, MeasureError, parse_measure
from evaluation_pipeline.metric.ndcg import index_judgments, score
from evaluation_pipeline.spec import EvaluationSpec, SpecError
from evaluation_pipeline.stats.intervals import ALL

# The families whose value is a DCG: the spec's gain (unless dcg= gives one) and discount.
_DCG_FAMILIES = ("nDCG", "DCG")
# The families that count R, the relevant documents of the ideal set: a query without one has
# no value of its own, and the spec's no_positive says what it scores.
_NO_POSITIVE_FAMILIES = ("nDCG", "RR", "AP", "R", "Rprec", "Bpref")


class Options(NamedTuple):
    """How the caller names what a refusal is about: the command's options, or the Python
    function's arguments (``API_OPTIONS``)."""

    measure: str = "--measure"
    to_measure: str = "--to-measure"
    cutoffs: str = "--cutoff"
    order: str = "--order"
    source: str = "--from"
    target: str = "--to"


CLI_OPTIONS = Options()
API_OPTIONS = Options("measure=", "to_measure=", "cutoffs=", "order=", "source", "target")


@dataclass(frozen=True)
class MeasurePlan:
    """What is compared: two (spec, measure) sides of one family, and the walk's steps."""

    source: EvaluationSpec
    target: EvaluationSpec
    source_measure: Measure
    target_measure: Measure
    fields: tuple[str, ...]  # the steps, spec fields and measure parameters, in walk order
    order_source: str
    not_applicable: tuple[dict, ...]  # the spec fields that are not steps, and why
    source_label: str = "from"
    target_label: str = "to"

    @property
    def family(self) -> str:
        return self.source_measure.name

    def measure_of(self, changed: Sequence[str]) -> Measure:
        """The source measure with the ``changed`` parameters set to the target's."""
        chosen = {key: (self.target_measure if key in changed else self.source_measure)[key]
                  for key in self.source_measure.declaration.params}
        return measure_with(self.family, chosen)

    def step_spec(self, changed: Sequence[str]) -> EvaluationSpec:
        """The spec a state of the walk is scored under: the source with ``changed`` fields and
        parameters set to the target's."""
        spec = self.source.replace(**{name: getattr(self.target, name)
                                      for name in changed if name in FIELDS})
        return measured(spec, self.measure_of(changed))

    def target_spec(self) -> EvaluationSpec:
        """The target itself, its fields that do not apply included (the number the walk ends
        at, as a plain scoring under the target gives it)."""
        # The source's cutoffs for the plain nDCG@K beside the measure, as every state has them
        # (its measures and headline go first: they may name nDCG@K of other cutoffs).
        target = self.target.replace(measures=None, headline=None, cutoffs=self.source.cutoffs)
        return measured(target, self.target_measure)


def measure_with(family: str, values: dict[str, object]) -> Measure:
    """The measure of ``family`` with these parameter values (``NOT_PROVIDED``: left out), in
    its canonical form: parsed from its name, as any other measure is."""
    cutoff = values.get("cutoff", NOT_PROVIDED)
    shown = ",".join(f"{key}={value!r}" for key, value in values.items()
                     if key != "cutoff" and value is not NOT_PROVIDED)
    name = f"{family}({shown})" if shown else family
    return parse_measure(name if cutoff is NOT_PROVIDED else f"{name}@{cutoff}")


def measured(spec: EvaluationSpec, measure: Measure) -> EvaluationSpec:
    """``spec`` scoring ``measure``: a plain nDCG@K alone (the spec's own), else the measure
    beside the one plain nDCG@K every list of measures holds (its rows are not compared). A
    headline of other measures goes: it would name measures no longer scored."""
    names = [str(measure)] if is_spec_ndcg(measure) else [f"nDCG@{spec.cutoffs[0]}",
                                                          str(measure)]
    return spec.replace(measures=names, headline=None)


def not_applicable(name: str, source: Measure, target: Measure,
                   specs: Sequence[EvaluationSpec]) -> str | None:
    """Why spec field ``name`` cannot move the number of a measure of ``source``'s family on
    any data (so it is not a step), or None when it can. Held against the scorer, field by
    field and family by family, in tests/unit/analysis/test_reconcile_measures.py."""
    family = source.name
    params = source.declaration.params

    def both(key: str, value: object) -> bool:
        return key in params and source[key] == value and target[key] == value

    if name == "gain":
        if any(not isinstance(spec.gain, str) for spec in specs):
            return None  # an explicit map decides which queries have a positive grade
        if family not in _DCG_FAMILIES:
            return f"{family} reads no gain"
        if "dcg" in params and source["dcg"] is not NOT_PROVIDED and (
                target["dcg"] is not NOT_PROVIDED):
            return "both measures give dcg=, which is their gain"
        return None
    if name == "discount" and family not in _DCG_FAMILIES:
        return f"{family} has no DCG discount"
    if name == "ideal" and family == "Judged":
        return "Judged counts the graded places of the list; it has no ideal set"
    if name in ("unknown", "unjudged"):
        if family == "Bpref":
            return "Bpref reads the graded documents alone"
        if family == "Judged":
            return "Judged counts every candidate, before any leaves the list"
        if both("judged_only", True):
            return "both measures are judged_only: they read the graded documents alone"
    if name == "no_positive" and family not in _NO_POSITIVE_FAMILIES:
        return f"{family} has a value without a relevant document"
    return None


def plan_measure_walk(
    source: EvaluationSpec,
    target: EvaluationSpec | None,
    measure: str | Measure | None,
    to_measure: str | Measure | None = None,
    *,
    cutoffs: Sequence[int] | None = None,
    order: Sequence[str] | None = None,
    source_label: str = "from",
    target_label: str = "to",
    options: Options = CLI_OPTIONS,
) -> MeasurePlan:
    """Check the measures, the sides and the order before anything is read or scored.

    ``measure`` is the source side's, and the target's too unless ``to_measure`` names
    another; ``target`` None walks within ``source`` (from one measure to the other).
    ``options``: how the caller names its options in a refusal."""
    if measure is None:
        raise ReconcileError(f"{options.to_measure} is the measure of the target side; give "
                             f"{options.measure} too, the measure of the source side")
    if cutoffs:
        raise ReconcileError(
            f"{options.cutoffs} compares NDCG@K; with {options.measure} each measure names its "
            f"own cutoff (AP(rel=2)@100): leave {options.cutoffs} out")
    start = _parsed(measure, options.measure)
    end = start if to_measure is None else _parsed(to_measure, options.to_measure)
    if start.name != end.name:
        raise ReconcileError(
            f"{options.to_measure} {end} is {end.name}, {options.measure} {start} is "
            f"{start.name}: a walk changes a measure's parameters, not the measure; give two "
            f"measures of one family ({start.name}(...) on both sides)")
    if target is None:
        target, target_label = source, target_label or source_label
    if source.raters != target.raters:
        raise ReconcileError(
            f"the two specs combine raters differently ({source.raters}, {target.raters}): "
            "they score other grades, not other conventions; `ndcg-eval agreement` compares "
            "the raters, and the NDCG under each")
    target_option = options.measure if to_measure is None else options.to_measure
    for spec, which, option, side in ((source, start, options.measure, options.source),
                                      (target, end, target_option, options.target)):
        try:
            measured(spec, which)
        except (SpecError, MeasureError) as exc:
            raise ReconcileError(f"{option} {which} under the {side} spec: {exc}") from None
    params = tuple(key for key in start.declaration.params if start[key] != end[key])
    skipped, fields = [], []
    for name in FIELDS:
        reason = not_applicable(name, start, end, (source, target))
        if reason is not None:
            skipped.append({"field": name, "before": field_value(source, name),
                            "after": field_value(target, name),
                            "differs": getattr(source, name) != getattr(target, name),
                            "why": reason})
        elif getattr(source, name) != getattr(target, name):
            fields.append(name)
    differing = (*fields, *params)
    named = tuple(order or ())
    walkable = (*FIELDS, *start.declaration.params)
    unknown = [name for name in named if name not in walkable]
    if unknown:
        raise ReconcileError(
            f"{options.order} {', '.join(map(repr, unknown))} is not a field or a parameter of "
            f"{start.name} that can be walked; choose from {', '.join(walkable)}")
    repeated = sorted({name for name in named if named.count(name) > 1})
    if repeated:
        raise ReconcileError(f"{options.order} names {', '.join(map(repr, repeated))} more "
                             "than once")
    walked = tuple(n for n in named if n in differing) + tuple(
        n for n in differing if n not in named)
    return MeasurePlan(source, target, start, end, walked,
                       "--order" if named else "spec field order, then the measure's",
                       tuple(skipped), source_label, target_label)


def _parsed(measure: str | Measure, option: str) -> Measure:
    if isinstance(measure, Measure):
        return measure
    try:
        return parse_measure(measure)
    except MeasureError as exc:
        raise ReconcileError(f"{option}: {exc}") from None


class MeasureScorer(Scorer):
    """``Scorer`` for the states of a measure walk: each spec scored whole (its measure beside
    its plain nDCG@K), its measure's rows alone kept, and ``means`` keyed by ranker alone (the
    measure's cutoff is a step of the walk, not a key)."""

    def add(self, spec: EvaluationSpec, rows: pl.DataFrame) -> None:
        """Per-query rows the caller already scored under ``spec`` (``metric.ndcg.score``'s, every
        measure of it)."""
        self._rows[spec.spec_id] = self._remember(spec, rows)

    def _score(self, spec: EvaluationSpec) -> pl.DataFrame:
        key = (spec.gain, spec.cutoffs, spec.discount)
        if key not in self._indexes:
            self._indexes[key] = index_judgments(self._judgment_blocks, spec)
        return self._remember(spec, score(self._pool, self._judgments, spec,
                                          index=self._indexes[key]))

    def _remember(self, spec: EvaluationSpec, rows: pl.DataFrame) -> pl.DataFrame:
        own = rows.filter(pl.col("measure") == str(walked_measure(spec)))
        self.specs[spec.spec_id] = spec
        table = aggregate(own, self._queries).filter(pl.col("slice_column") == ALL)
        self._means[spec.spec_id] = {
            row["ranker"]: Mean(row["macro_value"], row["weighted_value"], row["n_with_number"])
            for row in table.iter_rows(named=True)
        }
        return own


def walked_measure(spec: EvaluationSpec) -> Measure:
    """The measure a state of the walk scores (``measured``'s): its one other measure, else its
    one plain nDCG@K."""
    return spec.other_measures[0] if spec.other_measures else spec.measure_list[0]


def reconcile_measure(scorer: MeasureScorer, the_plan: MeasurePlan, *, shapley: bool = False,
                      max_row_scorings: int | None = None) -> dict:
    """The reconciliation of a measure walk as a JSON-ready document (the CLI renders it).
    Everything that can be refused is refused before the first scoring."""
    if shapley:
        check_shapley_bound(len(the_plan.fields), scorer.rows_per_scoring, max_row_scorings)
    document: dict[str, Any] = {
        "lineage": {k: v for k, v in asdict(scorer.lineage).items() if k != "spec_id"},
        "weights": scorer.weighted,
        "measures": {"family": the_plan.family, "from": str(the_plan.source_measure),
                     "to": str(the_plan.target_measure)},
        "from": _side(the_plan.source_label, the_plan.source, the_plan.source_measure),
        "to": _side(the_plan.target_label, the_plan.target, the_plan.target_measure),
    }
    document["walk"] = walk(scorer, the_plan)
    document["walk"]["shapley"] = shapley_values(scorer, the_plan) if shapley else None
    document["spec_ids"] = list(scorer.specs)
    return document


def _side(label: str, spec: EvaluationSpec, measure: Measure) -> dict:
    return {"name": label, "spec_id": spec.spec_id, "spec": spec.to_dict(),
            "measure": str(measure)}


def walk(scorer: MeasureScorer, the_plan: MeasurePlan) -> dict:
    """One step per field or parameter, in plan order; per ranker the mean after each step,
    its change, and the queries whose status or number the step changed."""
    fields = the_plan.fields
    specs = [the_plan.step_spec(fields[:i]) for i in range(len(fields) + 1)]
    frames = [scorer.rows(spec) for spec in specs]
    means = [scorer.means(spec) for spec in specs]
    _check_end(scorer, the_plan, specs[-1])
    changes = [query_changes(a, b, ["ranker", "query_id"], "value")
               for a, b in zip(frames, frames[1:])]
    params = the_plan.source_measure.declaration.params
    steps = [
        {"field": name, "kind": "spec" if name in FIELDS else "measure",
         "before": _setting(the_plan.source, the_plan.source_measure, name),
         "after": _setting(the_plan.target, the_plan.target_measure, name),
         "measure": str(walked_measure(spec)), "spec_id": spec.spec_id}
        for name, spec in zip(fields, specs[1:])
    ]
    results = []
    for ranker in sorted({key for state in means for key in state}):
        start, end = means[0].get(ranker), means[-1].get(ranker)
        rows = []
        for i, step in enumerate(steps):
            before, after = means[i].get(ranker), means[i + 1].get(ranker)
            rows.append({**step, **_numbers(after), **mean_change(before, after),
                         **movers(changes[i], {"ranker": ranker}, "value")})
        results.append({"ranker": ranker, "start": _numbers(start), "steps": rows,
                        "end": _numbers(end), "total": mean_change(start, end)})
    return {"order": list(fields), "order_source": the_plan.order_source,
            "parameters": [name for name in fields if name in params],
            "not_applicable": list(the_plan.not_applicable), "steps": steps,
            "results": results}


def _check_end(scorer: MeasureScorer, the_plan: MeasurePlan, end: EvaluationSpec) -> None:
    """The walk ends at the target's own number: a field left out as not applicable that
    differs is scored at the target's value too, and must not move any mean."""
    target = the_plan.target_spec()
    if target.spec_id == end.spec_id:
        return
    reached, own = scorer.means(end), scorer.means(target)
    if reached != own:
        skipped = [f["field"] for f in the_plan.not_applicable if f["differs"]]
        raise RuntimeError(
            f"the walk ends at {reached}, the target scores {own}: a field held not to apply "
            f"to {the_plan.family} ({', '.join(skipped)}) moved its number; "
            "analysis.reconcile_measures.not_applicable is wrong for it")


def _setting(spec: EvaluationSpec, measure: Measure, name: str) -> Any:
    """A step's value on one side: the spec field's canonical form, or the measure's parameter
    (None when the measure leaves it to its default behaviour: no cutoff, the spec's gain)."""
    if name in FIELDS:
        return field_value(spec, name)
    value = measure[name]
    return None if value is NOT_PROVIDED else value


def _numbers(mean: Mean | None) -> dict:
    if mean is None:
        return {"macro_value": None, "weighted_value": None, "n_with_number": 0}
    return {"macro_value": mean.macro, "weighted_value": mean.weighted,
            "n_with_number": mean.n_with_number}


def shapley_values(scorer: MeasureScorer, the_plan: MeasurePlan) -> dict:
    """Each step's mean marginal contribution over all orders of the steps, per ranker
    (``analysis.reconcile.shapley_values``' formula, with parameters among the fields)."""
    fields = the_plan.fields
    value = {
        subset: scorer.means(the_plan.step_spec(subset))
        for size in range(len(fields) + 1) for subset in combinations(fields, size)
    }
    results = []
    for ranker in sorted({key for state in value.values() for key in state}):
        results.append({
            "ranker": ranker,
            "values": shapley_shares(fields, value, ranker, "macro"),
            "weighted_values": shapley_shares(fields, value, ranker, "weighted"),
        })
    return {"n_scorings": len(value), "results": results}
