"""The example week through the watch under the TREC Deep Learning set (nDCG@10, RR(rel=2)@10,
AP(rel=2)@100, R@100) with nDCG@10 as the headline: every measure is compared night over night
and recorded; only the headline measure's regression alerts (contract section 8)."""

from __future__ import annotations

import polars as pl
import pytest

from evaluation_pipeline.evaluation import Lineage
from evaluation_pipeline.nightly.history import check_unique, headline_trend, numeric_metadata
from evaluation_pipeline.nightly.verdicts import REGRESSED, regressions
from evaluation_pipeline.report import ReportConfig, write_report
from evaluation_pipeline.report.trend import render_trend
from evaluation_pipeline.spec import EvaluationSpec, load_spec
from tests.support.nightly_week import href, run_week
from tests.support.paths import REPO

MEASURES = ["nDCG@10", "RR(rel=2)@10", "AP(rel=2)@100", "R@100"]
# The bundled spec file docs/pipeline.md runs the week under.
TREC_DL = load_spec(REPO / "examples" / "trec_dl_spec.yaml")


def test_the_bundled_spec_is_the_trec_dl_set_with_its_headline():
    assert TREC_DL == EvaluationSpec(ties="doc_id", measures=MEASURES, headline=["nDCG@10"])
    assert TREC_DL.headline_measures == ("nDCG@10",)


@pytest.fixture(scope="module")
def week(tmp_path_factory) -> dict:
    return run_week(tmp_path_factory.mktemp("week"), TREC_DL)


def test_the_headline_regression_alerts_once_and_the_others_are_recorded(week):
    gen = week["gen"]
    night = (gen.REGRESSION_NIGHT, gen.JUDGMENT_VERSION_2)
    assert [a["key"] for a in week["alerts"]] == [f"{night[0]}/{night[1]}/{TREC_DL.spec_id}"]
    payload = week["alerts"][0]["payload"]
    assert [(r["ranker"], r["cutoff"]) for r in payload["regressions"]] == [
        (gen.REGRESSED_RANKER, 10)]
    section = week["sections"][night]
    regressed = {(c["measure"], c["headline"]) for c in section["comparisons"]
                 if c["verdict"] == REGRESSED}
    # AP's drop is seen and recorded, in a family of its own, and raises nothing.
    assert ("nDCG@10", True) in regressed and ("AP(rel=2)@100", False) in regressed
    assert [c["measure"] for c in regressions(section)] == ["nDCG@10"]
    families = {c["measure"]: c["holm_family"] for c in section["comparisons"]}
    assert families["nDCG@10"] == "Holm over 3 tests: 3 rankers x 1 measure (nDCG@10)"
    assert families["AP(rel=2)@100"] == (
        "Holm over 3 tests: 3 rankers x 1 measure (AP(rel=2)@100)")


def test_every_comparison_is_of_every_ranker_and_measure(week):
    gen = week["gen"]
    for (pool, _), section in week["sections"].items():
        if section["previous_pool"] is None:
            continue
        assert sorted((c["ranker"], c["measure"]) for c in section["comparisons"]) == sorted(
            (ranker, measure) for ranker in gen.RANKERS for measure in MEASURES), pool


def test_the_history_keeps_every_measure_and_the_trend_draws_the_headline(week, tmp_path):
    gen, history = week["gen"], week["history"]
    check_unique(history)
    overall = history.filter(pl.col("slice").is_null())
    assert set(overall["measure"]) == set(MEASURES)
    assert set(overall.filter(pl.col("headline_measure"))["measure"]) == {"nDCG@10"}
    ap = overall.filter((pl.col("candidate_pool") == gen.REGRESSION_NIGHT)
                        & (pl.col("judgment_version") == gen.JUDGMENT_VERSION_2)
                        & (pl.col("ranker") == gen.REGRESSED_RANKER)
                        & (pl.col("measure") == "AP(rel=2)@100")).row(0, named=True)
    assert ap["verdict"] == REGRESSED and ap["ndcg"] is None and ap["value"] is not None
    trend = headline_trend(history, TREC_DL.spec_id)
    assert set(trend["measure"]) == {"nDCG@10"}
    assert trend.height == len(gen.NIGHTLY_POOLS) * len(gen.RANKERS)
    page = render_trend(history, href, TREC_DL.spec_id)
    assert page.count('class="chart trend"') == 1 and "NDCG@10 per night" in page


def test_the_report_holds_every_measure_and_the_dagster_plots_the_headline(week, tmp_path):
    gen = week["gen"]
    night = (gen.REGRESSION_NIGHT, gen.JUDGMENT_VERSION_2)
    rows = week["per_query"][night]
    report = write_report(tmp_path / "report", rows, TREC_DL, Lineage.from_rows(rows),
                          config=ReportConfig(n_bootstrap=200), nightly=week["sections"][night])
    assert report["measures"]["names"] == MEASURES
    assert {(r["ranker"], r["measure"]) for r in report["measures"]["results"]} == {
        (ranker, measure) for ranker in gen.RANKERS for measure in MEASURES}
    assert sorted({p["measure"] for p in report["comparison"]["pairs"]}) == sorted(MEASURES)
    assert [r["measure"] for r in report["nightly"]["comparisons"]
            if r["ranker"] == gen.REGRESSED_RANKER] == MEASURES
    aggregates = pl.read_parquet(tmp_path / "report" / "aggregates.parquet")
    metadata = numeric_metadata(aggregates, TREC_DL.headline_measures)
    assert sorted(metadata) == sorted(f"ndcg@10/{ranker}" for ranker in gen.RANKERS)
    # The page opens with the rankers by measures.
    html = (tmp_path / "report" / "report.html").read_text()
    assert html.index('class="summary measures"') < html.index("In words")
