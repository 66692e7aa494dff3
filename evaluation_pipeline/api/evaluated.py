"""What ``evaluate()`` returns: the per-query rows with their lineage, the summary, reports
and comparisons, each computed by the code of the command that writes it."""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from evaluation_pipeline.aggregation.aggregate_table import aggregate
from evaluation_pipeline.aggregation.comparison import compare_pools, compare_rankers, narrowed
from evaluation_pipeline.aggregation.measure_means import measure_means
from evaluation_pipeline.analysis.diff import judgment_version_diff
from evaluation_pipeline.api import arguments
from evaluation_pipeline.api.in_memory import read_queries_input
from evaluation_pipeline.evaluation import Lineage, summarize
from evaluation_pipeline.io import leftovers
from evaluation_pipeline.io.atomic import write_text
from evaluation_pipeline.io.locations import location
from evaluation_pipeline.io.result_errors import ResultsError
from evaluation_pipeline.io.result_folder import files_of, writing
from evaluation_pipeline.io.storage import AGGREGATES_FILE, HTML_FILE, REPORT_FILE
from evaluation_pipeline.io.table_inputs import NO_JUDGMENTS
from evaluation_pipeline.measures.parse import MeasureError, parse_measure
from evaluation_pipeline.metric.ndcg import sort_results
from evaluation_pipeline.report import ReportConfig, check_options, write_report
from evaluation_pipeline.spec import EvaluationSpec
from evaluation_pipeline.stats.family import Family
from evaluation_pipeline.stats.tiers import tier_rows
from schemas.columns import STATUSES, spec_ndcg_rows

# The bounds of a mean over every grading of the holes (contract, the aggregates).
BOUNDS = ("n_bounded", "macro_ndcg_min", "macro_ndcg_max")


# The columns of ``Evaluation.tiers()`` and ``Report.tiers`` (report.json's ``tiers``).
TIER_SCHEMA = {"measure": pl.String, "ranker": pl.String, "mean": pl.Float64, "rank": pl.Int64,
               "letters": pl.String, "rank_low": pl.Int64, "rank_high": pl.Int64}


class Report:
    """One evaluation's report, as ``ndcg-eval report`` writes it: built once, in a folder of
    its own that lives as long as this object; ``write`` puts it where asked, whole."""

    def __init__(self, evaluation: Evaluation, config: ReportConfig,
                 queries: pl.DataFrame | None, queries_sha256: str | None) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="ndcg-eval-report-")
        where = Path(self._folder.name)
        # Held for as long as this object lives: another run's sweep of the temporary folder
        # removes only scratch folders no live process holds (io.leftovers).
        weakref.finalize(self, os.close, leftovers.hold(where))
        self.record: dict = write_report(
            where, sort_results(evaluation.per_query), evaluation.spec, evaluation.lineage,
            queries, config, candidates=evaluation.candidates, judgments=evaluation.judgments,
            queries_sha256=queries_sha256)
        self.aggregates = pl.read_parquet(where / AGGREGATES_FILE)

    @property
    def tiers(self) -> pl.DataFrame:
        """report.json's ``tiers`` as a table (``Evaluation.tiers``' columns)."""
        return pl.DataFrame(self.record.get("tiers") or [], schema=TIER_SCHEMA)

    @property
    def headline(self) -> list[str]:
        return self.record["headline"]

    def to_json(self) -> str:
        """report.json's text, byte for byte."""
        return (Path(self._folder.name) / REPORT_FILE).read_text(encoding="utf-8")

    def to_html(self, path: str | Path) -> Path:
        """report.html written to ``path`` (atomically); its links to traces/ need ``write``."""
        return write_text((Path(self._folder.name) / HTML_FILE).read_text(encoding="utf-8"),
                          location(path))

    def write(self, folder: str | Path) -> Path:
        """The report's files (report.json, report.html, aggregates.parquet, per_query.parquet,
        traces/) into ``folder``, a local folder or a URL, replaced whole as the CLI does."""
        out = location(folder)
        with writing(out) as staging:
            for name, source in files_of(Path(self._folder.name)).items():
                (staging / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, staging / name)
        return out


@dataclass
class Evaluation:
    """A judgment version x a candidate pool under a spec: ``per_query`` holds exactly the
    columns, rows and lineage of the per_query.parquet ``ndcg-eval score`` writes."""

    per_query: pl.DataFrame
    spec: EvaluationSpec
    lineage: Lineage
    engine: str
    queries: pl.DataFrame | None = None
    queries_sha256: str | None = None
    # The validated inputs (the in-memory engine keeps them): traces and judgment diffs.
    judgments: pl.DataFrame | None = field(default=None, repr=False)
    candidates: pl.DataFrame | None = field(default=None, repr=False)
    notes: list[str] = field(default_factory=list)

    def summary_record(self) -> dict:
        """summary.json's document, as ``ndcg-eval score`` writes it."""
        return {**summarize(self.per_query, self.spec, self.lineage, self.queries),
                "engine": self.engine}

    @property
    def summary(self) -> pl.DataFrame:
        """summary.json's results, one row per (ranker, cutoff); status counts as n_<status>;
        then the bounds of the mean over every grading of the unknown and unjudged documents,
        as aggregates.parquet has them (``n_bounded``, ``macro_ndcg_min``, ``macro_ndcg_max``)."""
        results = self.summary_record()["results"]
        means = ("macro_ndcg", "weighted_ndcg", "mean_judged_at_k", "mean_candidate_recall")
        summary = pl.DataFrame(results, schema_overrides=dict.fromkeys(means, pl.Float64)
                               ).unnest("status_counts").rename(
            {status: f"n_{status}" for status in STATUSES})
        bounds = spec_ndcg_rows(aggregate(self.per_query, self.queries)).filter(
            pl.col("slice_column") == "all").select("ranker", "cutoff", *BOUNDS)
        return summary.join(bounds, on=["ranker", "cutoff"], how="left", maintain_order="left")

    def report(self, queries: Any = None, baseline: str | None = None, *,
               slices: list[str] | None = None, ci_level: float | None = None,
               n_bootstrap: int | None = None, seed: int | None = None,
               n_regressions: int | None = None) -> Report:
        """The report (intervals, ranker comparison, report.html) with the options of
        ``ndcg-eval report``; ``queries`` (as ``evaluate`` takes them) else those of the
        evaluation give the weights and slices. Every option is checked first."""
        # One string is one column, as one --slice names it.
        slices = [slices] if isinstance(slices, str) else slices
        config = report_config(
            slices=None if slices is None else arguments.names("slices", slices),
            ci_level=ci_level, n_bootstrap=n_bootstrap, seed=seed, baseline=baseline,
            n_regressions=n_regressions)
        table, digest = (self.queries, self.queries_sha256) if queries is None else (
            read_queries_input(queries))
        check_options(self.rankers, table, config)
        return Report(self, config, table, digest)

    @property
    def rankers(self) -> list[str]:
        return sorted(self.per_query["ranker"].unique().to_list())

    def compare(self, other: Evaluation | None = None, *, baseline: str | None = None,
                ci_level: float | None = None, n_bootstrap: int | None = None,
                seed: int | None = None, n_regressions: int | None = None,
                measure: str | Sequence[str] | None = None) -> dict:
        """As ``ndcg-eval compare``: without ``other`` the rankers of this evaluation, paired,
        on every measure (Holm within the spec's family, as report.json) or on ``measure`` (a
        name or several, as ``--measure``: the p-values stay adjusted within the family);
        with it, the two evaluations: over the same pool, a judgment-version diff (the
        documents added, removed and regraded, the statuses and NDCG that moved), else the
        paired comparison of the pools, adjusted as the nightly watch adjusts them."""
        if other is not None and not isinstance(other, Evaluation):
            raise arguments.ApiOptionError(
                f"other must be an Evaluation (what evaluate returns), not "
                f"{type(other).__name__}")
        config = report_config(ci_level=ci_level, n_bootstrap=n_bootstrap, seed=seed,
                               baseline=baseline, n_regressions=n_regressions).under(self.spec)
        options = dict(ci_level=config.ci_level, n_bootstrap=config.n_bootstrap,
                       seed=config.seed, n_regressions=config.n_regressions,
                       alpha=config.alpha, power=config.power)
        # Every measure is compared, Holm within the spec's family as report.json adjusts it;
        # ``measure`` narrows what is returned, never the family.
        chosen = self._measures(measure)
        family = Family.of(self.spec)
        if other is None:
            config.check_baseline(self.rankers)
            return narrowed(compare_rankers(self.per_query, baseline=config.baseline,
                                            family=family, **options), chosen)
        if self.spec.spec_id != other.spec.spec_id:
            raise ResultsError(
                f"the two evaluations use different specs ({self.spec.spec_id}, "
                f"{other.spec.spec_id}): their numbers do not measure the same thing")
        old, new = self.lineage, other.lineage
        if old.pool_sha256 == new.pool_sha256 and old.judgments_sha256 != new.judgments_sha256:
            grades = [NO_JUDGMENTS if e.judgments is None else e.judgments for e in (self, other)]
            return judgment_version_diff(*grades, spec_ndcg_rows(self.per_query),
                                         spec_ndcg_rows(other.per_query))
        return narrowed(compare_pools(self.per_query, other.per_query, family=family,
                                      min_effect=config.min_effect, **options), chosen)

    def _measures(self, measure: str | Sequence[str] | None) -> list[str] | None:
        """``measure`` as canonical names, each one this evaluation scored (None: all)."""
        if measure is None:
            return None
        names = [measure] if isinstance(measure, str) else list(measure)
        try:
            chosen = [str(parse_measure(name)) for name in names]
        except MeasureError as exc:
            raise arguments.ApiOptionError(f"measure: {exc}") from None
        scored = [str(m) for m in self.spec.measure_list]
        missing = [m for m in chosen if m not in scored]
        if missing:
            raise arguments.ApiOptionError(
                f"measure {', '.join(missing)}: not among the measures of this evaluation "
                f"({', '.join(scored)})")
        return chosen

    def values(self) -> pl.DataFrame:
        """Every measure's number per ranker and query, long: ranker, query_id, measure, value
        (as ir_measures' ``iter_calc`` gives them, with the ranker), a row for each query that
        has one (a query counted apart by its status has none)."""
        return self.per_query.filter(pl.col("value").is_not_null()).select(
            "ranker", "query_id", "measure", "value")

    def means(self) -> pl.DataFrame:
        """Each ranker's mean of each measure over the queries with a number, wide: one row per
        ranker, one column per measure in the spec's order (as ir_measures' ``calc_aggregate``
        gives them, per ranker). nDCG@K's are summary.json's ``macro_ndcg``."""
        names = [str(m) for m in self.spec.measure_list]
        means = measure_means(self.per_query)
        return means.pivot(on="measure", index="ranker", values="mean").select(
            "ranker", *(n for n in names if n in means["measure"])).sort("ranker")

    def tiers(self, *, ci_level: float | None = None, n_bootstrap: int | None = None,
              seed: int | None = None) -> pl.DataFrame:
        """Per headline measure, the rankers by mean in tiers, as report.json's ``tiers``:
        measure, ranker, mean, rank, letters (rankers sharing a letter are not told apart by
        their pair's Holm-adjusted test at NDCG_EVAL_ALPHA) and the rank interval those tests
        allow (rank_low, rank_high). Empty with one ranker."""
        rows = []
        if len(self.rankers) > 1:
            comparison = self.compare(ci_level=ci_level, n_bootstrap=n_bootstrap, seed=seed)
            headline = set(self.spec.headline_measures)
            means = {(ranker, measure): mean for ranker, measure, mean in measure_means(
                self.per_query).select("ranker", "measure", "mean").iter_rows()}
            rows = tier_rows([p for p in comparison["pairs"] if p["measure"] in headline],
                             means, alpha=ReportConfig().alpha)
        return pl.DataFrame(rows, schema=TIER_SCHEMA)

    def to_pandas(self):
        """``per_query`` as a pandas DataFrame (needs pandas)."""
        return self.per_query.to_pandas()

    def __repr__(self) -> str:
        return (f"Evaluation(judgments {self.lineage.judgment_version} (sha256 "
                f"{self.lineage.judgments_sha256[:12]}), pool {self.lineage.candidate_pool} "
                f"(sha256 {self.lineage.pool_sha256[:12]}), spec {self.spec.spec_id}, "
                f"{self.per_query.height} rows, engine {self.engine})")


def report_config(*, slices: list[str] | None = None, ci_level=None, n_bootstrap=None,
                  seed=None, baseline=None, n_regressions=None) -> ReportConfig:
    """The report options as ``ndcg-eval report``'s flags give them: each of the type its flag
    parses to (else ``ApiOptionError``), None for the flag's default, then checked by
    ``ReportConfig`` as the flags are (``ReportOptionError``)."""
    defaults = ReportConfig()
    return ReportConfig(
        slices=tuple(slices) if slices else None,
        ci_level=defaults.ci_level if ci_level is None else arguments.real("ci_level",
                                                                           ci_level),
        # None: the spec's resamples (ReportConfig.under), else the default.
        n_bootstrap=None if n_bootstrap is None else arguments.whole(
            "n_bootstrap", n_bootstrap),
        seed=defaults.seed if seed is None else arguments.whole("seed", seed),
        baseline=arguments.text("baseline", baseline),
        n_regressions=defaults.n_regressions if n_regressions is None else arguments.whole(
            "n_regressions", n_regressions))
