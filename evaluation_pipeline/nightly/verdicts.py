"""The nightly watch: which night came before which, whether tonight's change is real, and how
much of a change comes from regraded judgments and how much from the new pool.

Every candidate pool is one night. Nights are ordered by the time the pool's ``_READY`` marker
appeared (``ready_at`` in the pool's manifest), ties by name; a pinned baseline pool replaces
"the previous night". An evaluation (pool x judgment version x spec) is compared with the
previous night's evaluation under the same version and spec, paired over the queries with a
number on both nights, with Holm's correction over the spec's declared family
(``stats.family``; by default every ranker x headline measure).

Pure functions over per-query frames, aggregate means and timestamps: no files, no Dagster.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import polars as pl

from evaluation_pipeline import settings
from evaluation_pipeline.aggregation import sums as rn
from evaluation_pipeline.aggregation.comparison import measures_of
from evaluation_pipeline.aggregation.partials import (
    PREVIOUS,
    TONIGHT,
    Result,
)
from evaluation_pipeline.stats.family import DEFAULT as DEFAULT_FAMILY
from evaluation_pipeline.stats.family import Family
from evaluation_pipeline.stats.inference import at_floor, below_floor
from evaluation_pipeline.stats.verdict import DEFAULT_ALPHA, DEFAULT_MIN_EFFECT, verdict
from schemas.columns import (
    REGRESSED,
    measure_label,
    measure_of,
)

# The pool manifest's field for the arrival of its _READY marker, and the fallback for pools
# registered before it was recorded.
READY_AT = "ready_at"
PUBLISHED_AT = "published_at"

# The watch's defaults are its settings' (NDCG_EVAL_ALPHA, NDCG_EVAL_MIN_EFFECT).
DEFAULT_POWER = settings.POWER.value_default
# The environment variable that pins one baseline pool instead of "the previous night".

# The names the comparison's fields had before they took the ranker pairs' (report.json's
# ``format_version`` 1, history.parquet's columns, the alert's payload): what was written under
# them is read back under today's (``current_names``, ``nightly.history.read_history``).
FORMER_NAMES = {
    "paired": "n_paired",
    "mean_diff": "mean_difference",
    "ci_low": "difference_low",
    "ci_high": "difference_high",
    "p": "p_value",
    "p_adjusted": "p_value_holm",
    "diff_min": "difference_min",
    "diff_max": "difference_max",
}

COMPARISON_METHOD = (
    "paired over the queries with a number on both nights (current minus previous); "
    "percentile bootstrap interval; sign-flip randomization test; Holm within the spec's "
    "family (holm_family; by default every ranker x headline measure together, the rankers of "
    "each other measure apart)"
)


# --- nights ----------------------------------------------------------------------------------


def ready_at_from_mtime_ns(mtime_ns: int) -> str:
    """The ISO time (UTC, microseconds) of a ``_READY`` marker's modification time."""
    moment = datetime.fromtimestamp(mtime_ns / 1e9, tz=UTC)
    return moment.isoformat(timespec="microseconds")


def ready_at_of(manifest: Mapping) -> str:
    """A pool's night time from its manifest; pools registered before ``ready_at`` was
    recorded fall back to their publication time."""
    value = manifest.get(READY_AT) or manifest.get(PUBLISHED_AT)
    if not value:
        raise ValueError(f"pool manifest has neither {READY_AT!r} nor {PUBLISHED_AT!r}")
    return str(value)


def parse_time(value: str) -> datetime:
    """An ISO time; one without a zone is taken as UTC (so every time compares)."""
    moment = datetime.fromisoformat(value)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def night_order(ready_at: Mapping[str, str]) -> list[str]:
    """Pool names from the first night to the last: by ready time, ties by name."""
    return sorted(ready_at, key=lambda pool: (parse_time(ready_at[pool]), pool))


def backfill_window(ready_at: Mapping[str, str], published_at: str, nights: int) -> set[str]:
    """The pools a judgment version published at ``published_at`` is scored against: the
    newest ``nights`` of those ready by then, and every pool ready after (0: every pool). A
    new version then costs a bounded number of scorings, however long the history."""
    order = night_order(ready_at)
    if nights <= 0:
        return set(order)
    published = parse_time(published_at)
    before = [pool for pool in order if parse_time(ready_at[pool]) <= published]
    return set(before[-nights:]) | set(order[len(before):])


def previous_night(pool: str, ready_at: Mapping[str, str],
                   baseline_pool: str | None = None) -> str | None:
    """The pool ``pool`` is compared with: the pinned baseline, else the night before it.

    None for the first night, and for the baseline pool itself.
    """
    if baseline_pool:
        return None if baseline_pool == pool else baseline_pool
    order = night_order(ready_at)
    if pool not in order:
        raise ValueError(f"candidate pool {pool!r} has no recorded ready time")
    position = order.index(pool)
    return order[position - 1] if position > 0 else None


def newest_pool(ready_at: Mapping[str, str]) -> str | None:
    order = night_order(ready_at)
    return order[-1] if order else None


def headline_version(first_evaluated_at: str, published_at: Mapping[str, str]) -> str | None:
    """The newest judgment version published at or before the pool's first evaluation.

    Newest is by publication time, ties by name; None when nothing was published by then.
    """
    moment = parse_time(first_evaluated_at)
    known = [v for v, t in published_at.items() if parse_time(t) <= moment]
    return max(known, key=lambda v: (parse_time(published_at[v]), v)) if known else None


# --- the comparison with the previous night ----------------------------------------------------


def night_pairs(previous: Sequence[Result], current: Sequence[Result]) -> list[rn.Pair]:
    """(previous night's, tonight's) result of every ranker x measure of both nights: per
    ranker, the spec's nDCG@K by cutoff first, then the other measures."""
    rankers = sorted({r.ranker for r in previous} & {r.ranker for r in current})
    before = set(measures_of(previous))
    measures = [m for m in measures_of(current) if m in before]
    return [(Result(PREVIOUS, ranker, *measure), Result(TONIGHT, ranker, *measure))
            for ranker in rankers for measure in measures]


@dataclass(frozen=True)
class NightComparison:
    """Tonight against the previous night under one version: the comparisons and both nights'
    macro means per (ranker, cutoff), which the attribution reads."""
    comparisons: list[dict]
    previous_means: dict[tuple[str, int], float | None]
    current_means: dict[tuple[str, int], float | None]


def compare_nights(
    previous: pl.DataFrame,
    current: pl.DataFrame,
    *,
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
    ci_level: float = 0.95,
    n_bootstrap: int = 2000,
    seed: int = 20261130,
    power: float = DEFAULT_POWER,
) -> list[dict]:
    """Per ranker and cutoff of both nights: current minus previous, paired over queries.

    ``previous`` and ``current`` are per-query rows (ranker, query_id, cutoff, ndcg,
    candidate_recall, status) of the two evaluations. Each ranker's mean candidate recall on
    both nights stands beside its verdict: the candidate set changes between nights.
    """
    return night_comparison_of_frames(
        previous, current, alpha=alpha, min_effect=min_effect, ci_level=ci_level,
        n_bootstrap=n_bootstrap, seed=seed, power=power).comparisons


def night_comparison_of_frames(previous: pl.DataFrame, current: pl.DataFrame, *,
                               alpha: float = DEFAULT_ALPHA,
                               min_effect: float = DEFAULT_MIN_EFFECT, ci_level: float = 0.95,
                               n_bootstrap: int = 2000, seed: int = 20261130,
                               queries: pl.DataFrame | None = None,
                               slices: Sequence[str] = (), n_movers: int = 10,
                               family: Family = DEFAULT_FAMILY,
                               power: float = DEFAULT_POWER) -> NightComparison:
    """:class:`NightComparison` of two nights' per-query rows, summed on this machine;
    ``queries`` and ``slices``: the queries table and the slice columns the change is broken
    down by; ``n_movers``: how many of the queries that moved most each comparison lists;
    ``family``: the spec's multiple-comparison family, with the measures whose verdicts
    alert."""
    pairs = night_pairs(rn.results_of(previous, PREVIOUS), rn.results_of(current))
    family.check_resolution([now for _, now in pairs], n_bootstrap, alpha,
                            what="changes against the previous night")
    plan = rn.plan_of(rn.results_of(current), previous=rn.results_of(previous, PREVIOUS),
                      pairs=pairs, n_bootstrap=n_bootstrap, seed=seed,
                      queries=queries, slices=tuple(slices), n_regressions=n_movers,
                      n_queries=rn.distinct_queries(previous, current))
    numbers = rn.Numbers(plan, rn.local_partial(current, previous, queries, plan))
    return night_comparison(numbers, pairs, alpha=alpha, min_effect=min_effect,
                            ci_level=ci_level, family=family, power=power)


def night_comparison(numbers: rn.Numbers, pairs: Sequence[rn.Pair], *, first_pair: int = 0,
                     alpha: float = DEFAULT_ALPHA, min_effect: float = DEFAULT_MIN_EFFECT,
                     ci_level: float = 0.95, family: Family = DEFAULT_FAMILY,
                     power: float = DEFAULT_POWER) -> NightComparison:
    """:class:`NightComparison` from the numbers of a plan holding ``pairs`` (from
    :func:`night_pairs`) from its pair ``first_pair`` on; ``family``: the spec's
    multiple-comparison family, with the measures whose verdicts alert; ``power``: that of
    each comparison's detectable effect."""
    out = []
    for p, (before, now) in enumerate(pairs, start=first_pair):
        stats = numbers.pair(p, ci_level)
        out.append({
            "ranker": now.ranker,
            "cutoff": now.cutoff,
            "measure": now.measure,
            "n_paired": stats["n_paired"],
            "mean_previous": stats["mean_first"],
            "mean_current": stats["mean_second"],
            "mean_difference": stats["mean_difference"],
            "difference_low": stats["difference_low"],
            "difference_high": stats["difference_high"],
            "p_value": stats["p_value"],
            "test_resamples": stats["test_resamples"],
            # The change's range over every grading of both nights' holes (contract section 5).
            "n_bounded": stats["n_bounded"],
            "difference_min": stats["difference_min"],
            "difference_max": stats["difference_max"],
            "holds_for_every_grading": stats["holds_for_every_grading"],
            "candidate_recall_previous": numbers.mean_candidate_recall(before),
            "candidate_recall_current": numbers.mean_candidate_recall(now),
            # What drove the change: the queries that moved most, and the change by slice.
            "movers": [{"query_id": m["query_id"], "ndcg_previous": m["ndcg_first"],
                        "ndcg_current": m["ndcg_second"], "difference": m["difference"]}
                       for m in stats["movers"]],
            "slices": [{"slice": s["slice"], "value": s["value"], "n_paired": s["n_paired"],
                        "mean_difference": s["mean_difference"],
                        "difference_low": s["difference_low"],
                        "difference_high": s["difference_high"], "share": s["share"]}
                       for s in numbers.pair_slices(
                           p, ci_level, (stats["difference_low"], stats["difference_high"]))],
        })
    for c in out:
        c["headline"] = family.is_headline(c["measure"], c["cutoff"])
    compared = with_verdicts(
        out, alpha=alpha, min_effect=min_effect, family=family,
        adjusted=lambda i, scale: numbers.adjusted(first_pair + i, alpha=alpha, scale=scale,
                                                   power=power))
    return NightComparison(compared,
                           numbers.overall_means(PREVIOUS), numbers.overall_means(TONIGHT))


def with_verdicts(comparisons: list[dict], *, alpha: float = DEFAULT_ALPHA,
                  min_effect: float = DEFAULT_MIN_EFFECT,
                  family: Family = DEFAULT_FAMILY,
                  adjusted: Callable[[int, int | None], Mapping] | None = None) -> list[dict]:
    """Holm-adjusted p within the declared ``family`` (``stats.family``; by default every
    ranker x headline measure together, each other measure's rankers apart: a measure that
    cannot alert does not weaken the test of one that can), the family in words, the
    statistics at the level the family holds each comparison to (``adjusted(i, scale)``:
    comparison i's, ``aggregation.sums.Numbers.adjusted``), then each verdict."""
    tests = family.adjust([{**c, "measure": measure_of(c)} for c in comparisons],
                          unit="ranker", unit_of=lambda c: c["ranker"], alpha=alpha)
    out = []
    for i, (c, test) in enumerate(zip(comparisons, tests, strict=True)):
        at_level = dict(adjusted(i, test.scale)) if adjusted is not None else {}
        interval = (at_level.get("difference_low_adjusted"),
                    at_level.get("difference_high_adjusted"))
        out.append(c | {"p_value_holm": test.p, "holm_family": test.family, **at_level,
                        "verdict": verdict(c["mean_difference"], test.p, interval,
                                           alpha=alpha, min_effect=min_effect)})
    return out


def p_clause(comparison: Mapping) -> str:
    """``= 0.0123 (Holm over 6 tests: ...)`` of a Holm-adjusted p, with its family; when its p
    is the test's floor, the bound ``< 0.0030`` and the resamples it is beyond; ``= n/a``
    without one. A comparison recorded before families and resamples were kept has its
    number alone."""
    p = comparison.get("p_value_holm")
    if p is None:
        return "= n/a"
    details = []
    shown = f"= {p:.4g}"
    if at_floor(comparison):
        shown = below_floor(p)
        details.append(f"beyond all {comparison['test_resamples']:,} sign-flip resamples")
    if comparison.get("holm_family"):
        details.append(comparison["holm_family"])
    return shown + (f" ({'; '.join(details)})" if details else "")


def grading_clause(regression: Mapping) -> str:
    """Whether the regression survives every grading of the unjudged and unknown documents."""
    holds, low, high = (regression[f] for f in ("holds_for_every_grading", "difference_min",
                                                "difference_max"))
    if holds is None:
        return "has no bounds over the unjudged documents"
    bounds = f"[{low:+.4f}, {high:+.4f}]"
    if holds:
        return f"holds for every grading of the unjudged documents (range {bounds})"
    return f"does not hold for every grading of the unjudged documents (range {bounds})"


# --- attribution -------------------------------------------------------------------------------


def split_change(previous_old: float, previous_new: float, current_new: float) -> dict:
    """The change of a mean from the previous night (old version) to tonight (new version).

    from_judgments = previous pool under the new version - previous pool under the old one;
    from_pool = tonight's pool - previous pool, both under the new version. ``total_change``
    is their sum, so the parts add up exactly (it equals current_new - previous_old up to
    float rounding).
    """
    from_judgments = previous_new - previous_old
    from_pool = current_new - previous_new
    return {"total_change": from_judgments + from_pool, "from_judgments": from_judgments,
            "from_pool": from_pool}


def attribute(
    previous_old: Mapping[tuple[str, int], float | None],
    previous_new: Mapping[tuple[str, int], float | None],
    current_new: Mapping[tuple[str, int], float | None],
    previous_judgment_version: str,
) -> list[dict]:
    """One attribution per (ranker, cutoff) with a mean in all three evaluations.

    Each mapping is (ranker, cutoff) -> macro NDCG, e.g. from ``nightly.history.overall_means``.
    """
    keys = sorted(
        k for k in set(previous_old) & set(previous_new) & set(current_new)
        if None not in (previous_old[k], previous_new[k], current_new[k])
    )
    return [
        {"ranker": ranker, "cutoff": int(cutoff),
         "previous_judgment_version": previous_judgment_version,
         **split_change(previous_old[(ranker, cutoff)], previous_new[(ranker, cutoff)],
                        current_new[(ranker, cutoff)])}
        for ranker, cutoff in keys
    ]


# --- the nightly section of report.json ---------------------------------------------------------


def nightly_section(
    previous_pool: str | None,
    judgment_version: str,
    comparisons: list[dict],
    attribution: list[dict] | None = None,
    *,
    baseline_pinned: bool = False,
    alpha: float = DEFAULT_ALPHA,
    min_effect: float = DEFAULT_MIN_EFFECT,
    power: float = DEFAULT_POWER,
) -> dict:
    """report.json's ``nightly``: the comparison with the previous night (or pinned baseline)
    and, when the headline versions of the two nights differ, the attribution (else null)."""
    return {
        "previous_pool": previous_pool,
        "baseline_pinned": baseline_pinned,
        "judgment_version": judgment_version,
        "alpha": alpha,
        "min_effect": min_effect,
        "power": power,
        "method": COMPARISON_METHOD,
        "comparisons": comparisons,
        "attribution": attribution,
    }


def current_names(section: Mapping | None) -> dict | None:
    """A nightly section as report.json holds it today, from one written under the former
    names (``FORMER_NAMES``) or today's (returned as is)."""
    if not section:
        return section

    def renamed(entry: Mapping) -> dict:
        return {FORMER_NAMES.get(name, name): value for name, value in entry.items()}

    return {**section, "comparisons": [
        renamed(c) | {"slices": [renamed(s) for s in c.get("slices", ())]}
        if "slices" in c else renamed(c)
        for c in section["comparisons"]]}


def regressions(section: Mapping | None) -> list[dict]:
    """The comparisons of a nightly section whose verdict is ``regressed``, of its headline
    measures (the ones that alert; a section written before other measures holds only
    those). The other measures' verdicts are recorded, never alerted."""
    if not section:
        return []
    return [c for c in section["comparisons"]
            if c["verdict"] == REGRESSED and c.get("headline", True)]


def interval_clause(comparison: Mapping) -> str:
    """`` [-0.0710, -0.0040] (adjusted, 99.17%)``: the interval at the level the family holds
    the comparison to, which agrees with its verdict; a comparison recorded before adjusted
    intervals has its bootstrap interval, so labelled; "" without either."""
    level = comparison.get("adjusted_level")
    if level is not None and comparison.get("difference_low_adjusted") is not None:
        return (f" [{comparison['difference_low_adjusted']:+.4f}, "
                f"{comparison['difference_high_adjusted']:+.4f}] (adjusted, {level:.2%})")
    if comparison.get("difference_low") is None:
        return ""
    return (f" [{comparison['difference_low']:+.4f}, {comparison['difference_high']:+.4f}] "
            "(unadjusted)")


def describe_regression(comparison: Mapping) -> str:
    """One line naming the ranker, K, the difference, its adjusted interval and the adjusted
    p."""
    label = measure_label(measure_of(comparison), comparison["cutoff"])
    return (f"{comparison['ranker']} {label} "
            f"{comparison['mean_difference']:+.4f}{interval_clause(comparison) or ' no interval'}"
            f" over {comparison['n_paired']} paired queries, Holm-adjusted p "
            f"{p_clause(comparison)}")


def describe_regressions(section: Mapping | None) -> str:
    """The asset check's description: every regression against the previous night, or why
    there is none."""
    if not section or section["previous_pool"] is None:
        return "first night: there is no previous night to compare with"
    found = regressions(section)
    against = f"against {section['previous_pool']} under {section['judgment_version']}"
    if not found:
        return f"no ranker regressed {against}"
    return f"regressed {against}: " + "; ".join(describe_regression(c) for c in found)
