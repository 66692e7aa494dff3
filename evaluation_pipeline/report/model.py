"""report.json as typed models: every field declared once, with its meaning.

``build.build_report`` builds the report through :class:`Report`, so a field the models lack is
refused before anything is written, and ``Report.checked`` holds the whole document to them
once the files' fields are added; ``report.schema`` generates the published JSON Schema
(``schemas/report.schema.json``) and REPORT_FORMAT.md's field tables from these declarations.
The per-ranker results entry is summary.json's (``evaluation.RankerResult``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from evaluation_pipeline.evaluation import (
    Interval,
    LineageRecord,
    Means,
    RankerResult,
    Record,
    Stamp,
)
from schemas.columns import STATUSES, VERDICTS

REPORT_FORMAT = "ndcg-eval-report"
# Field names are stable within a version; a change of meaning or a removal increases it.
REPORT_FORMAT_VERSION = 3


class Weights(Record):
    given: bool
    """whether a queries table supplied weights; when not, every `weighted_ndcg` is null"""
    description: str
    """the weights in words"""


class Statistics(Record):
    """Everything needed to reproduce each interval and p-value (see Methods)."""

    ci_level: float
    """the intervals' confidence level"""
    n_bootstrap: int
    """resamples of the queries behind each interval"""
    seed: int
    """the seed of every draw"""
    rng: str
    """how the draws are made from the seed and the query ids"""
    interval_method: str
    """how an interval is made from the resamples"""
    interval_minimum_queries: int
    """the fewest queries with a number an interval is given for"""
    test_method: str
    """the paired test behind each p-value"""
    test_resamples: int
    """its resamples (sign patterns)"""
    alpha: float | None = None
    """the level each Holm family's tests are held to (`NDCG_EVAL_ALPHA`, the watch's):
    the adjusted intervals, the ranker tiers and the verdicts read it"""
    power: float | None = None
    """the power of each comparison's `detectable_effect` (`NDCG_EVAL_POWER`)"""
    adjusted_interval_method: str | None = None
    """how an adjusted interval is made"""


class SliceResult(Means):
    """One entry of `slice_results`: the fields of `results[]` but `sentence`, per slice."""

    slice_column: str
    """the query-table column"""
    slice_value: str
    """its value; a null slice value reads `(none)`"""


class Regression(Record):
    query_id: str
    """the query"""
    ndcg_first: float | None
    """its value of the pair's measure under `first` (named for NDCG, the first measure)"""
    ndcg_second: float | None
    """its value under `second`"""
    difference: float
    """`ndcg_second - ndcg_first`"""


class AtFamilyLevel(Record):
    """A comparison's statistics at the level its Holm family holds it to (contract section
    4); absent in a report written before they were recorded."""

    adjusted_level: float | None = None
    """the adjusted interval's confidence level, 1 - alpha / s: s is m - j + 1 for the test
    Holm rejects at its j-th step of m, and m - r for every test after Holm stopped (r
    rejected); null without a p"""
    difference_low_adjusted: float | None = None
    """the adjusted interval, low end: the shifts of the per-query differences the sign-flip
    test does not reject at 1 - `adjusted_level` (the test inverted); it excludes 0 exactly
    when `p_value_holm < alpha`; null without a p, or when the test can reject no shift at
    that level (too few queries or resamples)"""
    difference_high_adjusted: float | None = None
    """its high end"""
    detectable_effect: float | None = None
    """the least true mean difference the test finds at 1 - `adjusted_level` with
    probability `power`: (t(1 - alpha / 2s) + t(power)) x sd / sqrt(n_paired), t with
    n_paired - 1 degrees of freedom, sd the paired differences' standard deviation; null with
    fewer than two paired queries"""


class Pair(AtFamilyLevel):
    """Two rankers on one measure, paired over the queries with a number for both."""

    first: str
    """the ranker compared with"""
    second: str
    """the ranker compared; differences are `second - first`"""
    cutoff: int | None
    """the measure's cutoff K; null for a measure without one (`Rprec`, `Bpref`, `RBP`)"""
    measure: str
    """the measure, by its canonical name (`nDCG@10`, `RR(rel=2)@10`); the spec's own
    nDCG@K is `nDCG@<cutoff>`"""
    n_paired: int
    """queries with a number for both rankers; only these are compared"""
    mean_first: float | None
    """mean of `first` over the paired queries"""
    mean_second: float | None
    """mean of `second` over the paired queries"""
    mean_difference: float | None
    """mean of the per-query differences over the paired queries"""
    difference_low: float | None
    """percentile bootstrap interval of the mean difference (queries resampled), low end;
    null with fewer than two paired queries"""
    difference_high: float | None
    """its high end"""
    n_bounded: int
    """the paired queries bounded on both sides (a number under every grading of the holes)"""
    difference_min: float | None
    """the least the mean difference over the `n_bounded` queries takes under every grading
    of the holes (each document one grade on both sides); null when none is bounded"""
    difference_max: float | None
    """the greatest it takes"""
    holds_for_every_grading: bool | None
    """true when `[difference_min, difference_max]` excludes 0 on the side of
    `mean_difference`: the sign of the difference survives every grading; null without a
    range"""
    p_value: float | None
    """two-sided paired randomization test: signs of the per-query differences flipped at
    random; exact over all 2^n patterns when 2^n <= resamples"""
    test_resamples: int | None = None
    """the sign-flip resamples behind `p_value`; a `p_value` of 1 / (1 + test_resamples) is
    the test's floor (the difference lay beyond every resample; more resamples would give a
    smaller p), printed "< 0.0005" and its adjusted p likewise; absent in a report written
    before it was recorded"""
    wins: int
    """queries where `second` is better (by more than 1e-12)"""
    losses: int
    """queries where `second` is worse"""
    ties: int
    """queries where both are equal (within 1e-12)"""
    rng_key: str
    """`"{first}|{second}|{cutoff}"` for the spec's nDCG@K, `"{first}|{second}|{measure}"`
    for another measure: the pair's label; the draws themselves belong to queries (see
    Methods)"""
    regressions: list[Regression]
    """up to `n_regressions` queries where `second` is worst relative to `first`"""
    p_value_holm: float | None
    """`p_value` Holm-adjusted within the spec's family (`holm_family`; contract section 4):
    by default every pair x headline measure together, the pairs of each other measure apart;
    null without a p"""
    holm_family: str | None
    """the tests `p_value_holm` is adjusted over, in words, e.g. `Holm over 6 tests: 3 ranker
    pairs x 2 measures (nDCG@5, nDCG@10)`; null without a p"""
    sentence: str
    """the comparison in words"""


class MeasureResult(Record):
    """One ranker and measure over a group of queries (aggregates.parquet's row, its
    `*_value` columns): every measure of the spec, the spec's nDCG@K among them."""

    ranker: str
    """the ranker"""
    measure: str
    """the measure, by its canonical name (`nDCG@10`, `RR(rel=2)@10`, `Rprec`)"""
    cutoff: int | None
    """its cutoff K; null for a measure without one"""
    slice_column: str
    """`all` for every query, else the query-table column of the slice"""
    slice_value: str
    """`all`, or the slice's value (`(none)` for queries without one)"""
    macro_value: float | None
    """the measure's mean over the queries with a number (contract section 3, rule 5); null
    when none has one"""
    macro_value_interval: Interval
    """`[low, high]` percentile (Poisson) bootstrap interval at `ci_level`, see Methods;
    `[null, null]` with fewer than 2 queries with a number"""
    weighted_value: float | None
    """mean weighted by the queries table's `weight`; null without weights"""
    weighted_value_interval: Interval
    """its bootstrap interval (same resamples as the macro interval)"""
    n_queries: int
    """per-query rows in the group"""
    n_with_number: int
    """rows with a value (the denominator of the macro mean)"""
    status_counts: dict[Literal[STATUSES], int]
    """rows per status"""
    macro_value_bounds: Interval
    """`[least, greatest]` the macro mean over the `n_bounded` rows takes as the holes' grades
    run over every value; `[null, null]` when none is bounded"""
    n_bounded: int
    """rows with a number under every grading of their holes"""

    @classmethod
    def of_row(cls, row: dict) -> MeasureResult:
        """The entry of an aggregates row (its ``*_value`` columns)."""
        return cls(
            **{name: row[name] for name in (
                "ranker", "measure", "cutoff", "slice_column", "slice_value", "macro_value",
                "weighted_value", "n_queries", "n_with_number", "n_bounded")},
            macro_value_interval=[row["macro_value_low"], row["macro_value_high"]],
            weighted_value_interval=[row["weighted_value_low"], row["weighted_value_high"]],
            status_counts={s: row[f"n_{s}"] for s in STATUSES},
            macro_value_bounds=[row["macro_value_min"], row["macro_value_max"]])


class Measures(Record):
    """Every measure of the spec, per ranker: the table a report opens with when the spec
    declares more than its nDCG@K (`measures:`)."""

    names: list[str]
    """the measures, in order: the spec's nDCG@K by cutoff, then the others"""
    results: list[MeasureResult]
    """one entry per (ranker, measure, slice) with a query: every query (`all`) first"""


class Comparison(Record):
    kind: Literal["rankers within one pool"]
    """what is compared (`ndcg-eval compare A B` compares rankers across two pools, on the
    terminal)"""
    baseline: str | None
    """the declared baseline ranker, or null"""
    pairs_compared: Literal["every pair", "each ranker vs the baseline"]
    """which pairs of rankers are compared"""
    pure_reranker_comparison: bool
    """false when rankers evidently rank different candidate sets (different candidate
    counts or candidate recall for a query)"""
    note: str | None
    """why it is not a pure reranker comparison, naming queries; null when it is"""
    multiple_comparisons: Literal["holm", "none (two rankers)"]
    """`holm`: every pair's `p_value_holm` is adjusted within its `holm_family` (a family of
    one test leaves it as it is); a report written before the spec declared its family wrote
    `none (two rankers)` for two rankers, whose pairs were not adjusted"""
    pairs: list[Pair]
    """one entry per (pair, measure): the spec's nDCG@K first, by cutoff, then the spec's
    other measures"""


class Mover(Record):
    query_id: str
    """the query"""
    ndcg_previous: float | None
    """its value of the comparison's measure on the previous night (named for NDCG, the first
    measure)"""
    ndcg_current: float | None
    """its value on this night"""
    difference: float
    """`ndcg_current - ndcg_previous`"""
    query_text: str | None
    """from the queries table, null without one"""
    trace: str | None = None
    """the page with both nights' traces, on the comparisons the page lists (every one with a
    verdict and each ranker's at the headline cutoff); else absent"""


class ChangeBySlice(Record):
    slice: str
    """the slice column"""
    value: str
    """its value, `(none)` for queries without one"""
    n_paired: int
    """queries of the value with a number on both nights"""
    mean_difference: float | None
    """mean change over them"""
    difference_low: float | None
    """its percentile bootstrap interval (the same draws as the comparison's), low end"""
    difference_high: float | None
    """its high end"""
    share: float | None
    """the value's sum of differences over the comparison's (the shares of one column add up
    to 1); null where the comparison's change is not told from zero (its interval, unadjusted,
    holds 0): a share of what may be no change is noise"""


class NightComparison(AtFamilyLevel):
    """One ranker and measure of both nights; differences are this night minus the previous
    one."""

    ranker: str
    """the ranker"""
    cutoff: int | None
    """the measure's cutoff K; null for a measure without one"""
    measure: str
    """the measure, by its canonical name (the spec's own nDCG@K is `nDCG@<cutoff>`)"""
    headline: bool
    """whether the measure is one of the spec's `headline` measures: only their regressions
    alert; the others' verdicts are recorded"""
    n_paired: int
    """queries with a number on both nights; only these are compared"""
    mean_previous: float | None
    """mean of the previous night over the paired queries"""
    mean_current: float | None
    """mean of this night over the paired queries"""
    mean_difference: float | None
    """mean of the per-query changes"""
    difference_low: float | None
    """percentile bootstrap interval of `mean_difference` (the report's `statistics`: the
    same per-query draws as its other intervals, see Methods), low end; null with fewer than
    two paired queries"""
    difference_high: float | None
    """its high end"""
    p_value: float | None
    """two-sided paired randomization test (signs flipped)"""
    test_resamples: int | None = None
    """the sign-flip resamples behind `p_value`; a `p_value` of 1 / (1 + test_resamples) is
    the test's floor (the difference lay beyond every resample; more resamples would give a
    smaller p), printed "< 0.0005" and its adjusted p likewise; absent in a report written
    before it was recorded"""
    n_bounded: int
    """as a pair's, over both nights' holes"""
    difference_min: float | None
    """as a pair's, over both nights' holes"""
    difference_max: float | None
    """as a pair's, over both nights' holes"""
    holds_for_every_grading: bool | None
    """as a pair's; the alert says whether a regression holds for every grading"""
    candidate_recall_previous: float | None
    """the ranker's mean candidate recall on the previous night: the candidate sets change
    between nights"""
    candidate_recall_current: float | None
    """its mean candidate recall on this night"""
    movers: list[Mover]
    """the queries whose value of the measure changed most between the nights, either way (up
    to the report's `n_regressions`, largest change first, ties by query_id)"""
    slices: list[ChangeBySlice]
    """the change broken down by slice: per slice column and value with a paired query"""
    p_value_holm: float | None
    """`p_value` Holm-adjusted within the spec's family (`holm_family`; contract section 4):
    by default every ranker x headline measure together, every ranker of each other measure
    apart; null without a p"""
    holm_family: str | None
    """the tests `p_value_holm` is adjusted over, in words, e.g. `Holm over 6 tests: 3 rankers
    x 2 measures (nDCG@5, nDCG@10)`"""
    verdict: Literal[VERDICTS]
    """`regressed` when `p_value_holm < alpha` (so the adjusted interval excludes 0) and
    `mean_difference <= -min_effect`; `improved` for the mirror case; `no_change` when the
    adjusted interval lies within +-`min_effect`; `inconclusive` otherwise (a change of
    `min_effect` could not be told from none)"""


class Attribution(Record):
    ranker: str
    """the ranker"""
    cutoff: int
    """K"""
    previous_judgment_version: str
    """the previous night's headline version (the old one)"""
    total_change: float
    """`from_judgments + from_pool`: this night's mean minus the previous night's headline
    mean"""
    from_judgments: float
    """previous pool under this version minus previous pool under the old one"""
    from_pool: float
    """this pool minus the previous pool, both under this version"""


class Nightly(Record):
    """The pipeline's comparison of this night with the previous one."""

    previous_pool: str | None
    """the pool this one is compared with: the night before it, or the pinned baseline; null
    on the first night (and for the baseline pool itself)"""
    baseline_pinned: bool
    """true when a baseline pool is pinned (`NDCG_EVAL_BASELINE_POOL` or
    `NightlyWatch.baseline_pool`)"""
    judgment_version: str
    """the version both nights are evaluated under (this report's)"""
    alpha: float
    """the verdicts' significance threshold (`NightlyWatch.alpha`)"""
    min_effect: float
    """the least drop a regression takes (`NightlyWatch.min_effect`)"""
    power: float | None = None
    """the power of each comparison's `detectable_effect` (`NightlyWatch.power`)"""
    method: str
    """the comparison in words"""
    comparisons: list[NightComparison]
    """one entry per (ranker, cutoff) of both nights; empty on the first night"""
    attribution: list[Attribution] | None
    """when the headline versions of the two nights differ, on this night's headline
    evaluation: one entry per (ranker, cutoff); else null"""


class Trace(Record):
    ranker: str
    """the ranker"""
    query_id: str
    """the query"""
    cutoff: int | None
    """K; null for a measure without one"""
    measure: str | None = None
    """the measure traced, by its canonical name (`nDCG@10`, `RR(rel=2)@10`); absent in a
    report written before other measures were traced (its traces are the spec's nDCG@K)"""
    path: str
    """the trace page, relative to the report folder"""
    value: float | None = None
    """the measure's number for the query (per_query.parquet's `value`)"""
    dcg: float | None
    """the spec's nDCG@K: the query's DCG@K, the sum of the trace's contributions; null for
    another measure"""
    ideal_dcg: float | None
    """its ideal DCG@K"""
    ndcg: float | None
    """its NDCG@K"""
    status: str
    """its status (per_query.parquet's)"""


class Files(Record):
    report: str
    """report.json"""
    aggregates: str
    """one row per (ranker, cutoff, slice_column, slice_value), schema `schemas.Aggregates`,
    with lineage columns"""
    per_query: str
    """the per-query rows the report was computed from (schema `schemas.PerQueryResults`)"""
    html: str
    """one self-contained page: inline CSS and SVG, no scripts, nothing fetched"""
    traces: str | None
    """the folder of trace pages; null when no trace was written"""


class RaterCount(Record):
    rater: str
    """the rater's id"""
    rater_kind: str | None
    """null without the column"""
    graded: int
    """documents the rater graded"""


class Confusion(Record):
    grades: list[int]
    """every grade from the version's lowest to its highest"""
    counts: list[list[int]]
    """`counts[i][j]`: documents a graded `grades[i]` and b `grades[j]`"""


class RaterPair(Record):
    rater_a: str
    """sorted before `rater_b`"""
    rater_b: str
    """the other rater"""
    overlap: int
    """documents both graded"""
    cohen_kappa: float | None
    """Cohen's kappa over the overlap"""
    cohen_kappa_quadratic: float | None
    """weights: the squared difference of the grades"""
    mean_difference: float | None
    """mean of a's grade minus b's over the overlap"""
    confusion: Confusion
    """documents per pair of grades"""


class RaterMean(Record):
    rater: str
    """a rater's id, scored under `rater:<id>`, or `rule`, under the spec's rule when it has
    one"""
    ranker: str
    """the ranker"""
    cutoff: int | None
    """the measure's K; null for a measure without one"""
    measure: str | None = None
    """the measure, one of the spec's headline measures (by default its nDCG@K); absent in a
    report written before the other measures"""
    mean: float | None
    """the measure's mean over the queries with a number"""


class RankerOrderTau(Record):
    rater_a: str
    """one rater"""
    rater_b: str
    """the other, sorted after `rater_a`"""
    cutoff: int | None
    """the measure's K; null for a measure without one"""
    measure: str | None = None
    """the measure whose means are ordered, one of the spec's headline measures"""
    tau: float | None
    """Kendall's tau-b between the rankers' means under `rater_a` and under `rater_b`"""


class Agreement(Record):
    """The raters' agreement of a version with raters (`ndcg-eval agreement --json`)."""

    raters: list[RaterCount]
    """per rater, sorted"""
    rule: str | None
    """the spec's `raters` rule, or null"""
    pairs: list[RaterPair]
    """per pair of raters, sorted"""
    krippendorff_alpha_ordinal: float | None
    """Krippendorff's alpha over every rating (the documents with at least two grades pair
    up), with the ordinal metric"""
    krippendorff_alpha_interval: float | None
    """the same with the interval (squared difference) metric"""
    fleiss_kappa: float | None
    """Fleiss' kappa over the documents every rater graded"""
    fleiss_documents: int
    """how many documents every rater graded"""
    ndcg: list[RaterMean] | None = None
    """with `--run`: per rater, ranker and cutoff"""
    kendall_tau: list[RankerOrderTau] | None = None
    """with `--run`: per pair of raters and cutoff"""


class Scoring(Record):
    """How the evaluation's per-query rows were made, as their stamp
    (`scores/<pool>/<version>/<spec_id>/manifest.json`) records it. Either path gives the same
    per-query bytes, on every engine (the engine that scored is in the stamp and on the
    materialization)."""

    path: Literal["full", "incremental"]
    """`full`, or `incremental`: from an earlier version's scores"""
    reason: str | None = None
    """(`full`) why no earlier version's scores were started from, for example that they
    failed their proof"""
    from_version: str | None = None
    """(`incremental`) the earlier version whose scores were started from"""
    rescored_queries: int | None = None
    """(`incremental`) queries scored again"""
    kept_queries: int | None = None
    """(`incremental`) queries whose rows were kept"""


class Tier(Record):
    """One ranker on one headline measure, among the rankers of one evaluation."""

    measure: str
    """the headline measure, by its canonical name"""
    ranker: str
    """the ranker"""
    mean: float | None
    """its mean over the queries with a number"""
    rank: int
    """its place by `mean` (1: the highest; ties by name)"""
    letters: str
    """its compact letters: two rankers share a letter exactly when their pair's
    `p_value_holm` is not below `statistics.alpha` (the tests cannot separate them); "a" is
    the group of the first ranker"""
    rank_low: int
    """the best rank the separated pairs allow: 1 + the rankers separated above it"""
    rank_high: int
    """the worst: the rankers less those it is separated above"""


class Report(Record):
    """report.json: the stable, machine-readable report of one evaluation."""

    format: Literal["ndcg-eval-report"]
    """what the file is"""
    format_version: Literal[3]
    """field names are stable within it; a change of meaning or a removal increases it"""
    headline_cutoff: int
    """the largest cutoff of the spec; the headline sentences use it"""
    headline: list[str]
    """first, in the pipeline's reports of a night that regressed, one sentence per regressed
    ranker x cutoff (against which previous night, by how much, the interval, the adjusted p
    and the candidate recall on both nights); then one result sentence per ranker, then one
    per compared pair"""
    lineage: LineageRecord
    """contract section 5"""
    spec: dict[str, Any]
    """the full evaluation spec (docs/spec.md)"""
    spec_id: str
    """the spec's hash"""
    conventions: str
    """the spec's conventions in words"""
    weights: Weights
    """the query weights"""
    statistics: Statistics
    """everything needed to reproduce each interval and p-value"""
    slices: list[str]
    """the query-table columns used as slices"""
    rankers: list[str]
    """ranker names, sorted"""
    results: list[RankerResult]
    """one entry per (ranker, cutoff) over all queries"""
    slice_results: list[SliceResult]
    """the same per (ranker, cutoff, slice_column, slice_value), without `sentence`"""
    comparison: Comparison | None
    """null with one ranker"""
    tiers: list[Tier] | None = None
    """per headline measure, its rankers by mean with their tiers (the compact letter display
    of the pairs' adjusted tests) and rank intervals; null without every pair of rankers
    compared (one ranker, or a baseline), and in a report written before tiers"""
    measures: Measures
    """every measure of the spec per ranker and slice (`results` holds the spec's nDCG@K
    alone, as it did before the other measures)"""
    nightly: Nightly | None = None
    """only in the reports the pipeline writes (`evaluation_report`)"""
    traces: list[Trace]
    """per-candidate traces of the most regressed queries (only when the pool and judgments
    were given)"""
    files: Files | Annotated[dict, Field(max_length=0)]
    """the file names of the report folder (report.json has them all; the report as built,
    before its files are written, none)"""
    agreement: Agreement | None = None
    """only for a version with raters, in the pipeline's reports and `ndcg-eval score
    --report` (local engine)"""
    scoring: Scoring | None = None
    """only in the pipeline's reports"""
    stamp: Stamp | None = None
    """per_query.parquet's bytes as written, as `ndcg-eval score`'s summary.json records
    them"""

