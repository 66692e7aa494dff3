"""Reconcile two NDCG numbers: how much each spec field moves the mean.

Two reports disagree because their conventions differ. Starting from one spec, the walk changes
one differing field at a time towards the other, in a declared order, and scores the run after
each step; the steps telescope, so they add up to the whole difference. The walk's shares depend
on its order (a tie rule matters more once the ideal counts the tied documents), so the Shapley
attribution averages each field's marginal contribution over every order, scoring every subset
of the differing fields once. Sensitivity starts from one spec and sets each field in turn to
each of its alternatives, which shows which choices matter for this data at all.

Every spec is scored by ``metric.ndcg.score`` on the frames held in memory: the pool is cut into
blocks once, and the judgments are indexed once per (gain, cutoffs), the only fields the index
depends on. The mean compared is the one ``aggregation.aggregate_table`` reports, per ranker and
cutoff.

``cutoffs`` is not walked: a mean is compared at the same K on both sides. When the two specs'
cutoffs differ, the caller names the cutoffs to compare at (``--cutoff``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any

import polars as pl

from evaluation_pipeline.aggregation.aggregate_table import aggregate
from evaluation_pipeline.evaluation import Lineage
from evaluation_pipeline.metric.hashing import judgment_blocks, pool_blocks
from evaluation_pipeline.metric.ndcg import JudgmentIndex, index_judgments, score
from evaluation_pipeline.spec import _CHOICES, FIELD_DOCS, GAINS, EvaluationSpec
from evaluation_pipeline.stats.intervals import ALL
from schemas.columns import NDCG_KEY, RANK, spec_ndcg_rows
from schemas.errors import EvaluationError
from schemas.ranks import rank_violations

# Every field but cutoffs, raters (a choice of grades, not of the metric), max_grade (it
# moves only the bounds over the holes, never ndcg) and measures (what is measured beside
# nDCG@K, not how nDCG counts), in the spec's own order: the walk's.
# The walked fields: those that change an nDCG@K number (the headline only says which
# measures alert, the family which tests are adjusted together, the resamples how finely).
FIELDS = tuple(name for name in FIELD_DOCS
               if name not in ("cutoffs", "raters", "max_grade", "measures", "headline",
                               "family", "resamples"))

# Shapley scores 2^n specs over every candidate row; past this many row scorings (2^8 specs
# of 10M rows, some minutes of kernel time) it is refused rather than left running.
MAX_ROW_SCORINGS = 2**8 * 10_000_000

# A query's number "changed" when it moved by more than this: the same query scored by two
# tie rules over distinct scores can differ in the last bits without any convention mattering.
NUMBER_TOLERANCE = 1e-12

# Largest movers listed per step, ranker and cutoff.
N_MOVERS = 3


class ReconcileError(EvaluationError):
    """A reconciliation that cannot be done as asked (bad order, cutoffs, too many scorings)."""


@dataclass(frozen=True)
class Plan:
    """What is compared: both specs at the same cutoffs, and the order the fields are walked."""

    source: EvaluationSpec
    target: EvaluationSpec | None
    fields: tuple[str, ...]  # the differing fields, in walk order
    order_source: str  # "spec field order" or "--order"
    source_label: str = "from"
    target_label: str = "to"

    def step_spec(self, changed: Sequence[str]) -> EvaluationSpec:
        """The source spec with ``changed`` fields set to the target's values."""
        return self.source.replace(**{name: getattr(self.target, name) for name in changed})


def plan(
    source: EvaluationSpec,
    target: EvaluationSpec | None,
    *,
    cutoffs: Sequence[int] | None = None,
    order: Sequence[str] | None = None,
    source_label: str = "from",
    target_label: str = "to",
) -> Plan:
    """Check cutoffs and order before anything is read or scored.

    ``order`` names fields to walk first; differing fields it leaves out follow in spec order,
    and named fields that agree are not steps.
    """
    if cutoffs:
        source = source.replace(cutoffs=tuple(cutoffs))
        target = target.replace(cutoffs=tuple(cutoffs)) if target is not None else None
    elif target is not None and source.cutoffs != target.cutoffs:
        raise ReconcileError(
            f"the two specs have different cutoffs ({_ks(source)} and {_ks(target)}): a mean is "
            "compared at the same K on both sides; give the cutoffs to compare at with --cutoff"
        )
    if target is not None and source.raters != target.raters:
        raise ReconcileError(
            f"the two specs combine raters differently ({source.raters}, {target.raters}): "
            "they score other grades, not other conventions; `ndcg-eval agreement` compares "
            "the raters, and the NDCG under each"
        )
    named = tuple(order or ())
    unknown = [name for name in named if name not in FIELDS]
    if unknown:
        raise ReconcileError(
            f"--order: {', '.join(map(repr, unknown))} is not a field that can be walked; "
            f"choose from {', '.join(FIELDS)} (cutoffs are compared, not walked)"
        )
    repeated = sorted({name for name in named if named.count(name) > 1})
    if repeated:
        raise ReconcileError(f"--order names {', '.join(map(repr, repeated))} more than once")
    differing = differing_fields(source, target) if target is not None else ()
    fields = tuple(n for n in named if n in differing) + tuple(
        n for n in differing if n not in named)
    return Plan(source, target, fields, "--order" if named else "spec field order",
                source_label, target_label)


def _ks(spec: EvaluationSpec) -> str:
    return ", ".join(map(str, spec.cutoffs))


def differing_fields(a: EvaluationSpec, b: EvaluationSpec) -> tuple[str, ...]:
    return tuple(name for name in FIELDS if getattr(a, name) != getattr(b, name))


def alternatives(name: str, *specs: EvaluationSpec, ranked: bool = True) -> tuple[Any, ...]:
    """Every value a field can take here: its declared choices, plus any value the given specs
    hold that is not among them (an explicit gain map). ``ranked=False``: the run has no usable
    rank column, so ``ties: rank`` cannot be scored on it and is left out."""
    values = list(GAINS if name == "gain" else _CHOICES[name])
    if name == "ties" and not ranked:
        values.remove("rank")
    for spec in specs:
        if getattr(spec, name) not in values:
            values.append(getattr(spec, name))
    return tuple(values)


@dataclass(frozen=True)
class Mean:
    macro: float | None
    weighted: float | None
    n_with_number: int


class Scorer:
    """Scores specs on one judgment version and pool held in memory, each spec once.

    ``lineage``: the inputs' lineage if the caller has it (it hashes both inputs otherwise).
    """

    def __init__(self, judgments: pl.DataFrame, pool: pl.DataFrame,
                 queries: pl.DataFrame | None = None, lineage: Lineage | None = None) -> None:
        self._judgments = judgments
        self._judgment_blocks = judgment_blocks(judgments)
        self._pool = pool_blocks(pool)
        # ties: rank is an alternative only where the run's ranks can order ties.
        self.ranked = RANK in pool.columns and not rank_violations(pool)
        self._queries = queries
        self._indexes: dict[tuple, JudgmentIndex] = {}
        self._rows: dict[str, pl.DataFrame] = {}
        self._means: dict[str, dict[tuple[str, int], Mean]] = {}
        self.specs: dict[str, EvaluationSpec] = {}  # every spec scored, in order
        self.rows_per_scoring = pool.height
        # The inputs' part of the lineage; each spec scored has its own spec_id.
        self.lineage = lineage or Lineage.of(judgments, pool, EvaluationSpec(), self._pool)

    @property
    def weighted(self) -> bool:
        return self._queries is not None

    def add(self, spec: EvaluationSpec, rows: pl.DataFrame) -> None:
        """Per-query rows the caller already scored under ``spec`` (as ``metric.ndcg.score``)."""
        self._rows[spec.spec_id] = rows
        self._remember(spec, rows)

    def rows(self, spec: EvaluationSpec) -> pl.DataFrame:
        """Per-query rows under ``spec``, kept for later comparisons."""
        if spec.spec_id not in self._rows:
            self._rows[spec.spec_id] = self._score(spec)
        return self._rows[spec.spec_id]

    def means(self, spec: EvaluationSpec) -> dict[tuple[str, int], Mean]:
        """Means per (ranker, cutoff) under ``spec``; the rows are not kept."""
        if spec.spec_id not in self._means:
            self._score(spec)
        return self._means[spec.spec_id]

    def _score(self, spec: EvaluationSpec) -> pl.DataFrame:
        # What the index depends on: the gains, and the all_judged ideal's cutoffs and discount.
        key = (spec.gain, spec.cutoffs, spec.discount)
        if key not in self._indexes:
            self._indexes[key] = index_judgments(self._judgment_blocks, spec)
        rows = score(self._pool, self._judgments, spec.ndcg_only(), index=self._indexes[key])
        self._remember(spec, rows)
        return rows

    def _remember(self, spec: EvaluationSpec, rows: pl.DataFrame) -> None:
        self.specs[spec.spec_id] = spec
        table = aggregate(rows, self._queries).filter(pl.col("slice_column") == ALL)
        self._means[spec.spec_id] = {
            (row["ranker"], row["cutoff"]): Mean(row["macro_ndcg"], row["weighted_ndcg"],
                                                 row["n_with_number"])
            for row in table.iter_rows(named=True)
        }


def reconcile(
    scorer: Scorer,
    the_plan: Plan,
    *,
    shapley: bool = False,
    sensitivity: bool = False,
    max_row_scorings: int | None = None,
) -> dict:
    """The reconciliation as a JSON-ready document (rendered by ``report.reconcile_view``).

    Everything that can be refused is refused before the first scoring.
    """
    if shapley and the_plan.target is None:
        raise ReconcileError("--shapley attributes the difference to a --to spec; give --to")
    if shapley:
        check_shapley_bound(len(the_plan.fields), scorer.rows_per_scoring, max_row_scorings)
    document: dict[str, Any] = {
        "lineage": {k: v for k, v in asdict(scorer.lineage).items() if k != "spec_id"},
        "weights": scorer.weighted,
        "cutoffs": list(the_plan.source.cutoffs),
        "from": _side(the_plan.source_label, the_plan.source),
        "to": None if the_plan.target is None else _side(the_plan.target_label, the_plan.target),
    }
    if the_plan.target is not None:
        document["walk"] = walk(scorer, the_plan)
        document["walk"]["shapley"] = shapley_values(scorer, the_plan) if shapley else None
    if sensitivity:
        document["sensitivity"] = sensitivities(scorer, the_plan.source, the_plan.target)
    document["spec_ids"] = list(scorer.specs)
    return document


def _side(label: str, spec: EvaluationSpec) -> dict:
    return {"name": label, "spec_id": spec.spec_id, "spec": spec.to_dict()}


def check_shapley_bound(n_fields: int, rows: int, bound: int | None = None) -> None:
    bound = MAX_ROW_SCORINGS if bound is None else bound
    scorings = 2**n_fields
    if scorings * rows > bound:
        raise ReconcileError(
            f"--shapley would score 2^{n_fields} = {scorings:,} specs of {rows:,} candidate rows "
            f"({scorings * rows:,} row scorings), more than the bound of {bound:,} row scorings; "
            "walk fewer fields (a --to spec closer to --from) or a smaller run"
        )


# -- the walk ---------------------------------------------------------------------------------


def walk(scorer: Scorer, the_plan: Plan) -> dict:
    """One step per differing field, in plan order; per (ranker, cutoff) the mean after each
    step, its change, and the queries whose status or number the step changed."""
    specs = [the_plan.step_spec(the_plan.fields[:i]) for i in range(len(the_plan.fields) + 1)]
    frames = [scorer.rows(spec) for spec in specs]
    means = [scorer.means(spec) for spec in specs]
    changes = [_query_changes(a, b) for a, b in zip(frames, frames[1:])]
    steps = [
        {"field": name, "before": field_value(the_plan.source, name),
         "after": field_value(the_plan.target, name), "spec_id": spec.spec_id}
        for name, spec in zip(the_plan.fields, specs[1:])
    ]
    results = []
    for key in _keys(means):
        start, end = means[0].get(key), means[-1].get(key)
        rows = []
        for i, step in enumerate(steps):
            before, after = means[i].get(key), means[i + 1].get(key)
            rows.append({**step, **_numbers(after), **mean_change(before, after),
                         **_movers(changes[i], key)})
        results.append({
            "ranker": key[0], "cutoff": key[1], "start": _numbers(start), "steps": rows,
            "end": _numbers(end), "total": mean_change(start, end),
        })
    return {"order": list(the_plan.fields), "order_source": the_plan.order_source,
            "steps": steps, "results": results}


def field_value(spec: EvaluationSpec, name: str) -> Any:
    """A field's value as the spec's canonical form writes it; None for an optional field the
    spec leaves unset (``scores``: read as doubles)."""
    return spec.to_dict().get(name)


def _keys(means: Sequence[Mapping[tuple[str, int], Mean]]) -> list[tuple[str, int]]:
    return sorted({key for step in means for key in step})


def _numbers(mean: Mean | None) -> dict:
    if mean is None:
        return {"macro_ndcg": None, "weighted_ndcg": None, "n_with_number": 0}
    return {"macro_ndcg": mean.macro, "weighted_ndcg": mean.weighted,
            "n_with_number": mean.n_with_number}


def mean_change(before: Mean | None, after: Mean | None) -> dict:
    def difference(field: str) -> float | None:
        a = getattr(before, field, None)
        b = getattr(after, field, None)
        return None if a is None or b is None else b - a

    return {"change": difference("macro"), "weighted_change": difference("weighted")}


def _query_changes(before: pl.DataFrame, after: pl.DataFrame) -> pl.DataFrame:
    """The NDCG walk's changed queries: the spec's nDCG@K rows, per (ranker, query, cutoff)."""
    return query_changes(spec_ndcg_rows(before), spec_ndcg_rows(after), NDCG_KEY, "ndcg")


def query_changes(before: pl.DataFrame, after: pl.DataFrame, keys: Sequence[str],
                  number: str) -> pl.DataFrame:
    """Per ``keys`` (one query's number: ``query_id`` among them), the rows whose status or
    ``number`` differs between two scorings, as ``<number>_before``/``_after``; within each
    group of the other keys, largest move first (a number that appears or disappears moves
    by its own size)."""
    keys = list(keys)
    joined = before.select(*keys, status_before="status", **{f"{number}_before": number}).join(
        after.select(*keys, status_after="status", **{f"{number}_after": number}),
        on=keys, how="full", coalesce=True)
    old, new = pl.col(f"{number}_before"), pl.col(f"{number}_after")
    status_changed = pl.col("status_before").ne_missing(pl.col("status_after"))
    number_changed = ((new - old).abs() > NUMBER_TOLERANCE).fill_null(False) | (
        old.is_null() != new.is_null())
    move = (new.fill_null(0.0) - old.fill_null(0.0)).abs()
    groups = [key for key in keys if key != "query_id"]
    return (
        joined.with_columns(status_changed.alias("status_changed"), move.alias("move"))
        .filter(status_changed | number_changed)
        .sort([*groups, "move", "query_id"], descending=[*(False for _ in groups), True, False])
    )


def _movers(changes: pl.DataFrame, key: tuple[str, int]) -> dict:
    ranker, cutoff = key
    return movers(changes, {"ranker": ranker, "cutoff": cutoff}, "ndcg")


def movers(changes: pl.DataFrame, group: Mapping[str, Any], number: str) -> dict:
    """How many of one group's queries a step changed (``query_changes``' rows; ``group``:
    the value of each of its other keys), how many changed status, and the largest movers."""
    mine = changes.filter(*(pl.col(name) == value for name, value in group.items()))
    return {
        "n_changed": mine.height,
        "n_status_changed": int(mine["status_changed"].sum()),
        "movers": [
            {"query_id": row["query_id"], "status_before": row["status_before"],
             "status_after": row["status_after"], f"{number}_before": row[f"{number}_before"],
             f"{number}_after": row[f"{number}_after"]}
            for row in mine.head(N_MOVERS).iter_rows(named=True)
        ],
    }


# -- Shapley ----------------------------------------------------------------------------------


def shapley_values(scorer: Scorer, the_plan: Plan) -> dict:
    """Each differing field's mean marginal contribution over all orders of the fields.

    phi_i = sum over subsets S without i of |S|! (n - |S| - 1)! / n! * (v(S + i) - v(S)),
    with v(S) the mean under the source spec with the fields of S set to the target's. Every
    subset is scored once; the values add up to v(all) - v(none).
    """
    fields = the_plan.fields
    n = len(fields)
    value = {
        subset: scorer.means(the_plan.step_spec(subset))
        for size in range(n + 1) for subset in combinations(fields, size)
    }
    results = []
    for key in _keys(list(value.values())):
        entry: dict[str, Any] = {"ranker": key[0], "cutoff": key[1]}
        for measure, name in (("macro", "values"), ("weighted", "weighted_values")):
            entry[name] = shapley_shares(fields, value, key, measure)
        results.append(entry)
    return {"n_scorings": len(value), "results": results}


def shapley_shares(fields, value, key, measure) -> dict[str, float] | None:
    def v(subset: tuple[str, ...]) -> float | None:
        mean = value[tuple(name for name in fields if name in subset)].get(key)
        return None if mean is None else getattr(mean, measure)

    n = len(fields)
    out = {}
    for name in fields:
        others = [f for f in fields if f != name]
        total = 0.0
        for size in range(n):
            weight = math.factorial(size) * math.factorial(n - size - 1) / math.factorial(n)
            for subset in combinations(others, size):
                with_it, without = v((*subset, name)), v(subset)
                if with_it is None or without is None:
                    return None  # some subset leaves no query with a number
                total += weight * (with_it - without)
        out[name] = total
    return out


# -- sensitivity ------------------------------------------------------------------------------


def sensitivities(scorer: Scorer, spec: EvaluationSpec,
                  other: EvaluationSpec | None = None) -> dict:
    """From ``spec``, each field set in turn to each alternative, the rest kept: per (ranker,
    cutoff) and field, the mean under every alternative and the range over those with a number.
    ``other`` adds its values to the alternatives (an explicit gain map of the --to spec)."""
    others = (spec,) if other is None else (spec, other)
    variants = {
        name: [(value, spec.replace(**{name: value}))
               for value in alternatives(name, *others, ranked=scorer.ranked)]
        for name in FIELDS
    }
    means = {s.spec_id: scorer.means(s) for options in variants.values() for _, s in options}
    results = []
    for key in _keys(list(means.values())):
        fields = []
        for name, options in variants.items():
            rows = [{"value": field_value(s, name), "spec_id": s.spec_id,
                     **_numbers(means[s.spec_id].get(key))} for _, s in options]
            fields.append({
                "field": name, "current": field_value(spec, name),
                "range": _range(r["macro_ndcg"] for r in rows),
                "weighted_range": _range(r["weighted_ndcg"] for r in rows),
                "alternatives": rows,
            })
        results.append({"ranker": key[0], "cutoff": key[1], "fields": fields})
    return {"spec_id": spec.spec_id, "results": results}


def _range(values) -> float | None:
    numbers = [v for v in values if v is not None]
    return max(numbers) - min(numbers) if numbers else None

