"""The report as data: aggregates with intervals, ranker comparison, sentences (report.json)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import polars as pl

from evaluation_pipeline.aggregation import sums as rn
from evaluation_pipeline.aggregation.aggregate_table import lineage_of
from evaluation_pipeline.aggregation.comparison import (
    candidate_set_differences,
    measures_of,
    ranker_comparison,
    ranker_pair_results,
)
from evaluation_pipeline.aggregation.partials import PREVIOUS, Plan, Result
from evaluation_pipeline.evaluation import Lineage, RankerResult, result_sentence
from evaluation_pipeline.nightly.verdicts import (
    DEFAULT_POWER,
    NightComparison,
    grading_clause,
    interval_clause,
    night_comparison,
    night_pairs,
    regressions,
)
from evaluation_pipeline.report.config import ReportConfig
from evaluation_pipeline.report.format import interval, number, p_shown
from evaluation_pipeline.report.model import (
    REPORT_FORMAT,
    REPORT_FORMAT_VERSION,
    MeasureResult,
    Report,
    SliceResult,
)
from evaluation_pipeline.spec import EvaluationSpec
from evaluation_pipeline.stats.family import DEFAULT as DEFAULT_FAMILY
from evaluation_pipeline.stats.family import Family
from evaluation_pipeline.stats.inference import (
    ADJUSTED_INTERVAL_METHOD,
    INTERVAL_METHOD,
    RNG_DESCRIPTION,
    TEST_METHOD,
)
from evaluation_pipeline.stats.tiers import tier_rows
from schemas.columns import label_of, measure_label, ndcg_name, spec_ndcg_rows


@dataclass(frozen=True)
class ReportPlan:
    """What a report sums (``aggregation.sums``) and which of its pairs are which: tonight's
    rankers against each other first, then each ranker against the previous night."""
    plan: Plan
    ranker_pairs: tuple[rn.Pair, ...]
    night_pairs: tuple[rn.Pair, ...]
    slices: tuple[str, ...]
    # A previous night was given (its file may hold no rows: then no pair, an empty watch).
    has_previous: bool = False

    @property
    def rankers(self) -> list[str]:
        return sorted({r.ranker for r in self.plan.results if r.night == 0})

    def night_comparison(self, numbers: rn.Numbers, *, alpha: float, min_effect: float,
                         ci_level: float, family: Family = DEFAULT_FAMILY,
                         power: float = DEFAULT_POWER) -> NightComparison | None:
        """Tonight against the previous night from ``numbers`` (None without one);
        ``family``: the spec's multiple-comparison family (``Family.of(spec)``)."""
        if not self.has_previous:
            return None
        family.check_resolution([now for _, now in self.night_pairs], self.plan.n_bootstrap,
                                alpha, what="changes against the previous night")
        return night_comparison(numbers, self.night_pairs, first_pair=len(self.ranker_pairs),
                                alpha=alpha, min_effect=min_effect, ci_level=ci_level,
                                family=family, power=power)


def report_plan(tonight: list[Result], queries: pl.DataFrame | None, config: ReportConfig, *,
                previous: list[Result] | None = None, n_queries: int) -> ReportPlan:
    """The plan of a report of ``tonight``'s results (``previous``: the previous night's, for
    the nightly watch), after refusing the options it cannot apply (``ReportOptionError``)."""
    rankers = sorted({r.ranker for r in tonight})
    slices = check_options(rankers, queries, config)
    pairs = ranker_pair_results(tonight, config.baseline) if _compared(rankers) else []
    nights = night_pairs(previous, tonight) if previous else []
    plan = rn.plan_of(tonight, previous=previous or (), pairs=[*pairs, *nights],
                      queries=queries, slices=slices, n_bootstrap=config.n_bootstrap,
                      seed=config.seed, n_regressions=config.n_regressions,
                      n_queries=n_queries)
    return ReportPlan(plan, tuple(pairs), tuple(nights), slices, previous is not None)


def local_numbers(per_query: pl.DataFrame, queries: pl.DataFrame | None, config: ReportConfig,
                  previous: pl.DataFrame | None = None,
                  progress: Callable[[str, int, int], None] | None = None
                  ) -> tuple[ReportPlan, rn.Numbers]:
    """The plan and numbers of a report of per-query frames, summed on this machine."""
    return _summed(rn.local_partial, per_query, previous, queries, config, progress)


def scanned_numbers(current: pl.LazyFrame, previous: pl.LazyFrame | None,
                    queries: pl.DataFrame | None, config: ReportConfig,
                    progress: Callable[[str, int, int], None] | None = None
                    ) -> tuple[ReportPlan, rn.Numbers]:
    """:func:`local_numbers` of scans of local per-query files, a chunk of queries in memory at
    a time (``aggregation.sums.scanned_partial``): the same numbers, to the bit."""
    return _summed(rn.scanned_partial, current, previous, queries, config, progress)


def _summed(partial, current, previous, queries, config, progress
            ) -> tuple[ReportPlan, rn.Numbers]:
    planned = report_plan(rn.results_of(current), queries, config,
                          previous=None if previous is None else rn.results_of(previous, PREVIOUS),
                          n_queries=rn.distinct_queries(current, previous))
    step = (lambda i, n: progress("chunks", i, n)) if progress else None
    return planned, rn.Numbers(planned.plan, partial(current, previous, queries, planned.plan,
                                                     step))


def build_report(
    per_query: pl.DataFrame | None,
    spec: EvaluationSpec,
    lineage: Lineage,
    queries: pl.DataFrame | None = None,
    config: ReportConfig | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    candidates: pl.DataFrame | None = None,
    nightly: dict | None = None,
    numbers: tuple[ReportPlan, rn.Numbers] | None = None,
) -> tuple[dict, pl.DataFrame, dict]:
    """(report.json dict, aggregates frame, per-pair histograms of differences for the charts).

    ``numbers``: the report's plan and numbers when summed elsewhere (``local_numbers``, or a
    cluster's), else they are summed here from ``per_query``. With the pool (``candidates``)
    the candidate sets of the rankers are compared exactly; without it, from the per-query
    counts. ``nightly`` (the pipeline's comparison with the previous night,
    ``nightly.verdicts.nightly_section``) becomes the report's ``nightly`` field; reports written
    outside the pipeline have none.
    """
    config = (config or ReportConfig()).under(spec)
    planned, found = numbers or local_numbers(per_query, queries, config, progress=progress)
    rankers, slices = planned.rankers, planned.slices
    aggregates = found.aggregates(
        config.ci_level, lineage_of(per_query) if per_query is not None else asdict(lineage))
    overall = pl.col("slice_column") == "all"
    ndcg_rows = spec_ndcg_rows(aggregates)
    results = [RankerResult.of_row(row, intervals=True,
                                   sentence=interval_sentence(row, spec, lineage))
               for row in ndcg_rows.filter(overall).iter_rows(named=True)]
    slice_rows = [SliceResult.of_row(row, intervals=True, slice_column=row["slice_column"],
                                     slice_value=row["slice_value"])
                  for row in ndcg_rows.filter(~overall).iter_rows(named=True)]
    names = measure_order(spec, planned)
    comparison = None
    differences: dict = {}
    if planned.ranker_pairs:
        Family.of(spec).check_resolution([first for first, _ in planned.ranker_pairs],
                                         config.n_bootstrap, config.alpha, what="ranker pairs")
        comparison = ranker_comparison(
            found, planned.ranker_pairs, baseline=config.baseline, ci_level=config.ci_level,
            family=Family.of(spec), alpha=config.alpha, power=config.power,
            differing_queries=(
                None if candidates is None else candidate_set_differences(candidates)
            ),
        )
        # In the spec's order of measures (adjusted within the spec's family).
        comparison["pairs"].sort(key=lambda pair: names.index(pair["measure"]))
        for pair in comparison["pairs"]:
            differences[(pair["first"], pair["second"], pair["measure"])] = pair.pop("histogram")
            pair["sentence"] = comparison_sentence(pair, comparison)
    top_cutoff = max(spec.cutoffs)
    if nightly is not None:
        nightly = with_query_text(nightly, queries)
    # A night that regressed says so first: the reason to open its report from the alert.
    headline = [regression_sentence(c, nightly) for c in regressions(nightly)]
    headline += [r.sentence for r in results if r.cutoff == top_cutoff]
    if comparison:
        headline += [p["sentence"] for p in comparison["pairs"]
                     if p["measure"] == ndcg_name(top_cutoff)]
    report = Report(
        format=REPORT_FORMAT,
        format_version=REPORT_FORMAT_VERSION,
        headline_cutoff=top_cutoff,
        headline=headline,
        lineage=lineage.record(),
        spec=spec.to_dict(),
        spec_id=spec.spec_id,
        conventions=spec.describe(),
        weights={
            "given": queries is not None,
            "description": "query weights from the queries table (traffic); queries without a "
            "row weigh 0" if queries is not None else
            "no query weights given: the weighted mean is not computed (null)",
        },
        statistics={
            "ci_level": config.ci_level,
            "n_bootstrap": config.n_bootstrap,
            "seed": config.seed,
            "rng": RNG_DESCRIPTION,
            "interval_method": INTERVAL_METHOD,
            "interval_minimum_queries": 2,
            "test_method": TEST_METHOD,
            "test_resamples": config.n_bootstrap,
            "alpha": config.alpha,
            "power": config.power,
            "adjusted_interval_method": ADJUSTED_INTERVAL_METHOD,
        },
        slices=list(slices),
        rankers=rankers,
        results=results,
        slice_results=slice_rows,
        comparison=comparison,
        tiers=ranker_tiers(comparison, aggregates, spec, config.alpha),
        measures=measures_section(aggregates, names),
        **({"nightly": nightly} if nightly is not None else {}),
        # Filled as the report's files are written (``report.write_report``).
        traces=[],
        files={},
    )
    return report.dump(), aggregates, differences


def measure_order(spec: EvaluationSpec, planned: ReportPlan) -> list[str]:
    """The measures of a report in the spec's order (``measures:``, else nDCG@K by cutoff),
    then any the rows hold that the spec does not name (rows scored under another list)."""
    present = [measure for _, measure in measures_of(
        [r for r in planned.plan.results if r.night == 0])]
    declared = [str(m) for m in spec.measure_list]
    return [m for m in declared if m in present] + [m for m in present if m not in declared]


def ranker_tiers(comparison: dict | None, aggregates: pl.DataFrame, spec: EvaluationSpec,
                 alpha: float) -> list[dict] | None:
    """report.json's ``tiers``: per headline measure, the rankers by mean with their compact
    letters and rank intervals from the pairs' Holm-adjusted tests (``stats.tiers``); None
    without every pair compared (one ranker, or each against a baseline)."""
    if comparison is None or comparison["baseline"] is not None:
        return None
    headline = set(spec.headline_measures)
    means = {(row["ranker"], row["measure"]): row["macro_value"]
             for row in aggregates.filter((pl.col("slice_column") == "all")
                                          & pl.col("measure").is_in(list(headline)))
             .iter_rows(named=True)}
    return tier_rows([p for p in comparison["pairs"] if p["measure"] in headline], means,
                     alpha=alpha)


def measures_section(aggregates: pl.DataFrame, names: list[str]) -> dict:
    """report.json's ``measures``: every measure's aggregate rows, every query first, then
    per ranker in ``names``' order."""
    rank = {measure: i for i, measure in enumerate(names)}
    rows = aggregates.with_columns(
        (pl.col("slice_column") != "all").alias("_sliced"),
        pl.col("measure").replace_strict(rank, return_dtype=pl.Int64).alias("_measure"),
    ).sort("_sliced", "ranker", "_measure", maintain_order=True)
    return {"names": names,
            "results": [MeasureResult.of_row(row) for row in rows.iter_rows(named=True)]}


def _compared(rankers: list[str]) -> bool:
    return len(rankers) >= 2


def check_options(rankers: list[str], queries: pl.DataFrame | None,
                  config: ReportConfig) -> tuple[str, ...]:
    """The slice columns of the report of ``rankers``, after refusing the options it cannot
    apply (``ReportOptionError``): callers check before they write anything."""
    slices = config.slice_columns(queries)
    if _compared(rankers):
        config.check_baseline(rankers)
    return slices


def interval_sentence(row: dict, spec: EvaluationSpec, lineage: Lineage) -> str:
    """The contract's result sentence with the macro mean's interval after the number."""
    sentence = result_sentence(row, spec, lineage)
    if row["macro_ndcg"] is None or row["macro_ndcg_low"] is None:
        return sentence
    prefix = f"NDCG@{row['cutoff']} {number(row['macro_ndcg'], 3)} "
    bounds = interval([row["macro_ndcg_low"], row["macro_ndcg_high"]])
    return f"{prefix}{bounds} {sentence[len(prefix):]}"


def with_query_text(nightly: dict, queries: pl.DataFrame | None) -> dict:
    """The nightly section with each mover's query text from the queries table (null when the
    table has no ``query_text`` or no row for the query)."""
    texts = {}
    if queries is not None and "query_text" in queries.columns:
        wanted = sorted({m["query_id"] for c in nightly["comparisons"]
                         for m in c.get("movers", ())})
        found = queries.filter(pl.col("query_id").is_in(wanted)).select("query_id", "query_text")
        texts = dict(found.iter_rows())
    return nightly | {"comparisons": [
        c | {"movers": [m | {"query_text": texts.get(m["query_id"])}
                        for m in c.get("movers", ())]}
        for c in nightly["comparisons"]]}


def regression_sentence(c: dict, nightly: dict) -> str:
    """One regression against the previous night: ranker, K, by how much, the interval, the
    adjusted p and the candidate recall on both nights."""
    against = ("the pinned baseline" if nightly["baseline_pinned"] else "the previous night")
    return (
        f"{c['ranker']} {label_of(c)} regressed against {nightly['previous_pool']} "
        f"({against}, judgments {nightly['judgment_version']}): "
        f"{number(c['mean_difference'], 3, signed=True)}{interval_clause(c)} over "
        f"{c['n_paired']:,} paired queries, Holm-adjusted p {_p(c)}; "
        f"it {grading_clause(c)}; "
        f"candidate recall {number(c['candidate_recall_current'], 3)} tonight, "
        f"{number(c['candidate_recall_previous'], 3)} the previous night."
    )


def comparison_sentence(pair: dict, comparison: dict) -> str:
    if pair["mean_difference"] is None:
        return (f"{pair['second']} vs {pair['first']}, "
                f"{measure_label(pair['measure'], pair['cutoff'])}: no query has a number for "
                "both.")
    spread = interval_clause(pair)
    p = f"p {_p(pair, 'p_value')}"
    if pair["p_value_holm"] is not None:
        p += f", Holm-adjusted {p_shown(pair, 'p_value_holm')}"
    caveat = "" if comparison["pure_reranker_comparison"] else " (not a pure reranker comparison)"
    return (
        f"{pair['second']} vs {pair['first']}, {measure_label(pair['measure'], pair['cutoff'])}: "
        f"{number(pair['mean_difference'], 3, signed=True)}{spread} over {pair['n_paired']:,} "
        f"queries with a number for both ({p}); {pair['wins']} better, {pair['losses']} worse, "
        f"{pair['ties']} tied{caveat}."
    )


def _p(entry: dict, field: str = "p_value_holm") -> str:
    """``= 0.0123``, or ``< 0.0030`` at the test's floor (``report.format.p_shown``)."""
    shown = p_shown(entry, field)
    return shown if shown.startswith("<") else f"= {shown}"
