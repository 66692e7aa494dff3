"""The example week through the watch, without Dagster: the inputs land one at a time; after
each, every new pool x version is evaluated (backfills included), compared with its previous
night, recorded in the history and, when due, alerted."""

from __future__ import annotations

import polars as pl
import pytest

from evaluation_pipeline.nightly.alerts import AlertSettings, notify
from evaluation_pipeline.nightly.history import check_unique
from evaluation_pipeline.nightly.verdicts import REGRESSED
from evaluation_pipeline.report.trend import render_trend
from tests.support.nightly_week import SPEC, href, run_week


@pytest.fixture(scope="module")
def week(tmp_path_factory) -> dict:
    return run_week(tmp_path_factory.mktemp("week"))


def test_every_evaluation_is_in_the_history_once(week):
    gen, history = week["gen"], week["history"]
    assert len(week["evaluated"]) == len(gen.NIGHTLY_POOLS) * 2
    evaluations = history.select("candidate_pool", "judgment_version").unique()
    assert evaluations.height == len(gen.NIGHTLY_POOLS) * 2
    check_unique(history)
    headline = history.filter(pl.col("headline")).select("candidate_pool", "judgment_version")
    by_pool = dict(headline.unique().iter_rows())
    assert by_pool == {pool: (gen.JUDGMENT_VERSION_1 if i < 3 else gen.JUDGMENT_VERSION_2)
                       for i, pool in enumerate(gen.NIGHTLY_POOLS)}


def test_exactly_one_alert_for_the_regressed_ranker_on_its_night(week):
    gen = week["gen"]
    assert [a["key"] for a in week["alerts"]] == [
        f"{gen.REGRESSION_NIGHT}/{gen.JUDGMENT_VERSION_2}/{SPEC.spec_id}"]
    payload = week["alerts"][0]["payload"]
    assert {r["ranker"] for r in payload["regressions"]} == {gen.REGRESSED_RANKER}
    assert payload["previous_pool"] == gen.NIGHTLY_POOLS[3]
    # The same regression shows under the older version too, but that evaluation is not the
    # night's headline, so it did not alert again.
    older = week["sections"][(gen.REGRESSION_NIGHT, gen.JUDGMENT_VERSION_1)]
    assert {c["ranker"] for c in older["comparisons"] if c["verdict"] == REGRESSED} == {
        gen.REGRESSED_RANKER}
    # A rerun alerts nothing more.
    assert notify(week["alerts_file"], week["rerun"].section, candidate_pool=gen.NIGHTLY_POOLS[-1],
                  spec_id=SPEC.spec_id, report="r", newest=True, headline=True,
                  settings=AlertSettings()) is None


def test_the_noisy_ranker_never_regresses_nor_improves(week):
    gen = week["gen"]
    for (pool, version), section in week["sections"].items():
        for c in section["comparisons"]:
            if c["ranker"] == gen.NOISY_RANKER:
                # Its noise hides a change of min_effect: never a change, and not "no change".
                assert c["verdict"] == "inconclusive", (pool, version, c)
                assert c["detectable_effect"] > 0.01
                assert c["mean_difference"] != 0.0  # it does move
            if c["ranker"] == gen.REGRESSED_RANKER and pool != gen.REGRESSION_NIGHT:
                assert c["verdict"] in ("no_change", "inconclusive"), (pool, version, c)


def test_attribution_adds_up_on_the_night_the_judgments_changed(week):
    gen = week["gen"]
    night = gen.NIGHTLY_POOLS[3]
    section = week["sections"][(night, gen.JUDGMENT_VERSION_2)]
    assert section["attribution"]
    history = week["history"].filter(pl.col("slice").is_null())

    def mean(pool, version, ranker, cutoff):
        return history.filter(
            (pl.col("candidate_pool") == pool) & (pl.col("judgment_version") == version)
            & (pl.col("ranker") == ranker) & (pl.col("cutoff") == cutoff))["ndcg"].item()

    previous = gen.NIGHTLY_POOLS[2]
    for a in section["attribution"]:
        assert a["previous_judgment_version"] == gen.JUDGMENT_VERSION_1
        assert a["from_judgments"] + a["from_pool"] == a["total_change"]
        old = mean(previous, gen.JUDGMENT_VERSION_1, a["ranker"], a["cutoff"])
        cross = mean(previous, gen.JUDGMENT_VERSION_2, a["ranker"], a["cutoff"])
        new = mean(night, gen.JUDGMENT_VERSION_2, a["ranker"], a["cutoff"])
        assert a["from_judgments"] == pytest.approx(cross - old, abs=1e-12)
        assert a["from_pool"] == pytest.approx(new - cross, abs=1e-12)
        assert a["total_change"] == pytest.approx(new - old, abs=1e-12)
    # No other evaluation carries an attribution.
    assert [k for k, s in week["sections"].items() if s["attribution"]] == [
        (night, gen.JUDGMENT_VERSION_2)]


def test_the_trend_page(week):
    gen = week["gen"]
    page = render_trend(week["history"], href)
    assert page.startswith("<!DOCTYPE html>")
    assert "<script" not in page and "http://" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")
    assert page.count('<svg xmlns="http://www.w3.org/2000/svg"') == 2  # NDCG@10, NDCG@5
    assert page.index("NDCG@10") < page.index("NDCG@5")
    for pool in gen.NIGHTLY_POOLS:
        version = gen.JUDGMENT_VERSION_1 if pool < gen.NIGHTLY_POOLS[3] else (
            gen.JUDGMENT_VERSION_2)
        assert f'href="{href(pool, version, SPEC.spec_id)}"' in page
    # One version change, one regression flagged per cutoff that regressed.
    assert page.count('class="version-change"') == 2
    assert f"judgments {gen.JUDGMENT_VERSION_2}" in page
    regressions = week["history"].filter(pl.col("headline") & (pl.col("verdict") == REGRESSED))
    assert page.count('class="regression"') == regressions.height >= 1
    assert page.count('class="band"') == 2 * len(gen.RANKERS)
    assert '<td class="regressed">regressed</td>' in page
