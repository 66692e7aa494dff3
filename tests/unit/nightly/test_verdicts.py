"""The nightly watch's rules: night order, verdicts at their boundaries, Holm across rankers x
cutoffs, the paired comparison of two nights, and the attribution of a change."""

from __future__ import annotations

import itertools

import numpy as np
import polars as pl
import pytest

from evaluation_pipeline.nightly import verdicts as nightly
from evaluation_pipeline.nightly.verdicts import (
    attribute,
    compare_nights,
    headline_version,
    night_order,
    previous_night,
    split_change,
    verdict,
    with_verdicts,
)
from schemas.columns import IMPROVED, INCONCLUSIVE, NO_CHANGE, REGRESSED

READY = {
    "night-b": "2026-12-02T01:00:00+00:00",
    "night-a": "2026-12-01T01:00:00+00:00",
    "night-c": "2026-12-02T01:00:00+00:00",  # same second as night-b: name breaks the tie
    "night-d": "2026-12-03T01:00:00.250000+00:00",
}


def test_nights_are_ordered_by_ready_time_then_name():
    assert night_order(READY) == ["night-a", "night-b", "night-c", "night-d"]
    assert previous_night("night-a", READY) is None
    assert previous_night("night-c", READY) == "night-b"
    assert nightly.newest_pool(READY) == "night-d"


def test_a_pinned_baseline_replaces_the_previous_night():
    assert previous_night("night-d", READY, baseline_pool="night-a") == "night-a"
    assert previous_night("night-a", READY, baseline_pool="night-a") is None


def test_an_unknown_pool_is_refused():
    with pytest.raises(ValueError, match="night-x"):
        previous_night("night-x", READY)


def test_ready_time_comes_from_the_marker_or_the_publication():
    assert nightly.ready_at_from_mtime_ns(1_700_000_000_123_456_000) == (
        "2023-11-14T22:13:20.123456+00:00")
    assert nightly.ready_at_of({"ready_at": "a", "published_at": "b"}) == "a"
    assert nightly.ready_at_of({"published_at": "b"}) == "b"
    with pytest.raises(ValueError):
        nightly.ready_at_of({})


def test_the_headline_is_the_newest_version_published_by_the_first_evaluation():
    published = {"v1": "2026-12-01T00:00:00+00:00", "v2": "2026-12-03T12:00:00+00:00",
                 "v0": "2026-12-01T00:00:00+00:00"}
    assert headline_version("2026-12-02T00:00:00+00:00", published) == "v1"  # tie by name
    assert headline_version("2026-12-03T12:00:00+00:00", published) == "v2"  # at the second
    assert headline_version("2026-12-03T11:59:59.999999+00:00", published) == "v1"
    assert headline_version("2026-11-30T00:00:00+00:00", published) is None


# --- the verdict at its boundaries ---------------------------------------------------------------


NARROW = (-0.009, 0.009)  # an adjusted interval within +-min_effect (0.01)
WIDE = (-0.2, 0.1)  # one that reaches past it


@pytest.mark.parametrize(
    ("mean_difference", "p_value_holm", "interval", "expected"),
    [
        (-0.01, 0.049, WIDE, REGRESSED),  # the drop is exactly min_effect
        (0.50 - 0.51, 0.049, WIDE, REGRESSED),  # the same drop through float rounding
        (-0.0099, 0.001, (-0.0101, -0.0001), INCONCLUSIVE),  # significant, maybe too small
        (-0.0099, 0.001, (-0.00999, -0.0001), NO_CHANGE),  # significant and surely too small
        (-0.2, 0.05, WIDE, INCONCLUSIVE),  # p must be strictly below alpha
        (-0.2, 0.0499999, WIDE, REGRESSED),
        (0.01, 0.049, WIDE, IMPROVED),
        (0.51 - 0.50, 0.049, WIDE, IMPROVED),
        (0.0099, 0.001, NARROW, NO_CHANGE),
        (0.3, 0.2, WIDE, INCONCLUSIVE),
        (0.001, 0.2, NARROW, NO_CHANGE),
        (0.001, 0.2, (-0.01, 0.01), NO_CHANGE),  # within includes the ends
        (0.001, 0.2, (-0.0101, 0.01), INCONCLUSIVE),
        (0.001, 0.2, (None, None), INCONCLUSIVE),  # no interval: nothing could be told
        (0.0, 0.0, NARROW, NO_CHANGE),
        (None, 0.0, (None, None), INCONCLUSIVE),  # no query paired
    ],
)
def test_verdict_boundaries(mean_difference, p_value_holm, interval, expected):
    assert verdict(mean_difference, p_value_holm, interval) == expected


def test_verdict_parameters():
    assert verdict(-0.02, 0.08, WIDE, alpha=0.1) == REGRESSED
    assert verdict(-0.02, 0.08, WIDE) == INCONCLUSIVE
    assert verdict(-0.02, 0.001, WIDE, min_effect=0.03) == INCONCLUSIVE
    assert verdict(-0.02, 0.001, (-0.029, -0.011), min_effect=0.03) == NO_CHANGE
    assert verdict(-0.03, 0.001, WIDE, min_effect=0.03) == REGRESSED


# --- Holm across rankers x cutoffs ----------------------------------------------------------------


def reference_holm(p: list[float]) -> list[float]:
    """Holm's step-down written from its definition: the i-th smallest p times (m - i + 1),
    made monotone by the running maximum, capped at 1."""
    m = len(p)
    order = sorted(range(m), key=lambda i: (p[i], i))
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order, start=1):
        running = max(running, min(1.0, (m - rank + 1) * p[i]))
        adjusted[i] = running
    return adjusted


def test_holm_by_hand():
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> monotone 0.06
    rows = [{"ranker": r, "cutoff": k, "mean_difference": -0.05, "p_value": p}
            for (r, k), p in zip(itertools.product("ab", (5, 10)), (0.01, 0.04, 0.03, 0.005))]
    adjusted = [c["p_value_holm"] for c in with_verdicts(rows)]
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # Without the statistics at the family's level there is no adjusted interval: what is not
    # a change could not be told from one.
    assert [c["verdict"] for c in with_verdicts(rows)] == [REGRESSED, INCONCLUSIVE,
                                                          INCONCLUSIVE, REGRESSED]


def two_nights(n: int = 40, seed: int = 7) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per-query rows of two nights: ``drops`` loses about 0.1 per query at K=10 and 0.005
    (below min_effect) at K=5, ``steady`` only moves by noise, ``same`` does not move."""
    rng = np.random.default_rng(seed)
    rows_prev, rows_cur = [], []
    for q in range(n):
        for cutoff, drop in ((5, 0.005), (10, 0.1)):
            base = rng.uniform(0.3, 0.9, size=3)
            noise = rng.normal(0, 0.03)
            for ranker, before, after in (
                ("drops", base[0], base[0] - drop + rng.normal(0, 0.02)),
                ("steady", base[1], base[1] + noise),
                ("same", base[2], base[2]),
            ):
                common = {"ranker": ranker, "query_id": f"q{q:02d}", "cutoff": cutoff,
                          "status": "scored"}
                rows_prev.append(common | {"ndcg": float(before), "candidate_recall": 0.8})
                rows_cur.append(common | {"ndcg": float(np.clip(after, 0, 1)),
                                          "candidate_recall": 0.9})
    return pl.DataFrame(rows_prev), pl.DataFrame(rows_cur)


def test_compare_nights_pairs_verdicts_and_holm_over_every_ranker_and_cutoff():
    previous, current = two_nights()
    # One query without a number tonight and one missing tonight are not paired.
    current = current.with_columns(
        pl.when((pl.col("query_id") == "q00") & (pl.col("ranker") == "drops"))
        .then(None).otherwise(pl.col("ndcg")).alias("ndcg")
    ).filter(~((pl.col("query_id") == "q01") & (pl.col("ranker") == "same")))
    result = compare_nights(previous, current, n_bootstrap=500, seed=3)
    by_key = {(c["ranker"], c["cutoff"]): c for c in result}
    assert sorted(by_key) == [(r, k) for r in ("drops", "same", "steady") for k in (5, 10)]
    assert by_key[("drops", 10)]["n_paired"] == 39
    assert by_key[("same", 10)]["n_paired"] == 39
    assert by_key[("steady", 10)]["n_paired"] == 40

    drop = by_key[("drops", 10)]
    assert drop["verdict"] == REGRESSED
    assert drop["difference_low"] < drop["mean_difference"] < drop["difference_high"] < 0
    assert drop["mean_difference"] == pytest.approx(drop["mean_current"] - drop["mean_previous"])
    assert by_key[("same", 10)]["p_value"] == 1.0
    assert by_key[("same", 10)]["verdict"] == NO_CHANGE
    # 40 queries with noise of 0.03 cannot tell a change of 0.01 from none.
    assert by_key[("steady", 10)]["verdict"] == INCONCLUSIVE
    assert by_key[("steady", 10)]["detectable_effect"] > 0.01
    assert drop["candidate_recall_previous"] == pytest.approx(0.8)
    assert drop["candidate_recall_current"] == pytest.approx(0.9)

    # Holm is over all six rankers x cutoffs at once, not per cutoff or per ranker.
    p = [c["p_value"] for c in result]
    assert [c["p_value_holm"] for c in result] == pytest.approx(reference_holm(p))
    per_cutoff = reference_holm([c["p_value"] for c in result if c["cutoff"] == 10])
    assert [c["p_value_holm"] for c in result if c["cutoff"] == 10] != pytest.approx(per_cutoff)

    # Seeded: the same call gives the same numbers.
    assert compare_nights(previous, current, n_bootstrap=500, seed=3) == result


def test_min_effect_and_alpha_are_parameters_of_the_comparison():
    previous, current = two_nights()
    strict = compare_nights(previous, current, n_bootstrap=200, min_effect=0.5)
    assert {c["verdict"] for c in strict} == {NO_CHANGE}
    # The intervals the verdicts read are adjusted: Holm's steps over 6 tests, 1 - 0.05 / s.
    assert {c["adjusted_level"] for c in strict} <= {1 - 0.05 / s for s in range(1, 7)}
    flipped = compare_nights(current, previous, n_bootstrap=200)
    assert {(c["ranker"], c["cutoff"]) for c in flipped if c["verdict"] == IMPROVED} >= {
        ("drops", 10)}


# --- attribution ----------------------------------------------------------------------------------


def test_attribution_on_hand_computed_means():
    # previous night: 0.60 under v1, 0.55 under v2 (regrades cost 0.05); tonight 0.52 under v2.
    parts = split_change(0.60, 0.55, 0.52)
    assert parts["from_judgments"] == pytest.approx(-0.05)
    assert parts["from_pool"] == pytest.approx(-0.03)
    assert parts["total_change"] == pytest.approx(-0.08)
    assert parts["from_judgments"] + parts["from_pool"] == parts["total_change"]


def test_attribution_parts_add_up_exactly_for_any_means():
    rng = np.random.default_rng(11)
    for a, b, c in rng.uniform(0, 1, size=(500, 3)):
        parts = split_change(float(a), float(b), float(c))
        assert parts["from_judgments"] + parts["from_pool"] == parts["total_change"]
        assert parts["total_change"] == pytest.approx(c - a, abs=1e-15)


def test_attribute_per_ranker_and_cutoff():
    old = {("bm25", 10): 0.40, ("dense", 10): 0.70, ("dense", 5): None, ("gone", 10): 0.1}
    new = {("bm25", 10): 0.44, ("dense", 10): 0.60, ("dense", 5): 0.5}
    tonight = {("bm25", 10): 0.43, ("dense", 10): 0.50, ("dense", 5): 0.5}
    rows = attribute(old, new, tonight, "v1")
    assert [(r["ranker"], r["cutoff"]) for r in rows] == [("bm25", 10), ("dense", 10)]
    bm25, dense = rows
    assert bm25["previous_judgment_version"] == "v1"
    assert bm25["from_judgments"] == pytest.approx(0.04)
    assert bm25["from_pool"] == pytest.approx(-0.01)
    assert dense["from_judgments"] == pytest.approx(-0.10)
    assert dense["from_pool"] == pytest.approx(-0.10)
    assert dense["total_change"] == pytest.approx(-0.20)


# --- the section of report.json and the check's description ---------------------------------------


def test_nightly_section_and_regression_description():
    previous, current = two_nights()
    comparisons = compare_nights(previous, current, n_bootstrap=300)
    section = nightly.nightly_section("night-a", "v2", comparisons)
    assert section["previous_pool"] == "night-a"
    assert section["attribution"] is None
    found = nightly.regressions(section)
    assert [(c["ranker"], c["cutoff"]) for c in found] == [("drops", 10)]
    text = nightly.describe_regressions(section)
    c = found[0]
    assert "drops NDCG@10" in text
    assert f"{c['mean_difference']:+.4f}" in text
    # The interval that agrees with the verdict: adjusted, and so labelled.
    assert (f"[{c['difference_low_adjusted']:+.4f}, {c['difference_high_adjusted']:+.4f}] "
            f"(adjusted, {c['adjusted_level']:.2%})") in text
    assert c["difference_high_adjusted"] < 0
    # Beyond every one of the 300 resamples: p is the floor, 1/301, and Holm's 6 x 1/301 is
    # shown as the bound it is.
    assert c["p_value"] == 1 / 301 and c["test_resamples"] == 300
    assert ("Holm-adjusted p < 0.0200 (beyond all 300 sign-flip resamples; Holm over 6 tests: "
            "3 rankers x 2 measures (nDCG@5, nDCG@10))") in text
    assert "against night-a under v2" in text
    assert nightly.describe_regressions(nightly.nightly_section(None, "v2", [])).startswith(
        "first night")
    assert nightly.regressions(None) == []
