"""The adjusted intervals and the verdicts that read them, on whole comparisons: an interval
excludes 0 exactly when its Holm-adjusted p is below alpha, every verdict follows from the
interval and min_effect, Holm's steps are statsmodels', and resamples too few for a family are
refused by name."""

import numpy as np
import polars as pl
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from evaluation_pipeline.aggregation.comparison import compare_rankers
from evaluation_pipeline.nightly.verdicts import compare_nights
from evaluation_pipeline.stats.family import Family, TooFewResamples
from evaluation_pipeline.stats.inference import holm_scales
from schemas.columns import IMPROVED, INCONCLUSIVE, NO_CHANGE, REGRESSED, TIE_TOLERANCE
from tests.support.holm_oracle import holm_oracle

ALPHA, MIN_EFFECT = 0.05, 0.01


def nights(seed: int, n: int, shifts: dict[str, float], noise: float, grid: bool
           ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Two nights of per-query rows: each ranker moves by its shift plus noise per query
    (rounded to tenths with ``grid``, as P@10's values are, so differences tie)."""
    rng = np.random.default_rng(seed)
    rows = {0: [], 1: []}
    for q in range(n):
        for cutoff in (5, 10):
            for ranker, shift in shifts.items():
                before = rng.uniform(0.2, 0.8)
                after = np.clip(before + shift + rng.normal(0, noise), 0, 1)
                for night, value in ((0, before), (1, after)):
                    value = round(float(value), 1) if grid else float(value)
                    rows[night].append({"ranker": ranker, "query_id": f"q{q:03d}",
                                        "cutoff": cutoff, "ndcg": value, "status": "scored",
                                        "candidate_recall": 1.0})
    return pl.DataFrame(rows[0]), pl.DataFrame(rows[1])


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(3, 80),
       drop=st.sampled_from([0.0, 0.005, 0.02, 0.08]), noise=st.sampled_from([0.01, 0.05, 0.2]),
       grid=st.booleans())
def test_an_adjusted_interval_excludes_zero_exactly_when_the_adjusted_p_is_below_alpha(
        seed, n, drop, noise, grid):
    previous, current = nights(seed, n, {"a": -drop, "b": drop / 2, "c": 0.0}, noise, grid)
    for c in compare_nights(previous, current, n_bootstrap=400, seed=seed):
        low, high = c["difference_low_adjusted"], c["difference_high_adjusted"]
        excludes = low is not None and (low > 0 or high < 0)
        assert excludes == (c["p_value_holm"] < ALPHA), c
        if low is not None:
            assert low <= c["mean_difference"] <= high
        # The verdict follows from the interval and min_effect alone.
        change = c["mean_difference"]
        if excludes and change <= -MIN_EFFECT + TIE_TOLERANCE:
            expected = REGRESSED
        elif excludes and change >= MIN_EFFECT - TIE_TOLERANCE:
            expected = IMPROVED
        elif low is not None and -MIN_EFFECT - TIE_TOLERANCE <= low and (
                high <= MIN_EFFECT + TIE_TOLERANCE):
            expected = NO_CHANGE
        else:
            expected = INCONCLUSIVE
        assert c["verdict"] == expected, c
        if c["verdict"] == REGRESSED:
            assert high < 0
        # Differences that never vary (tied on a grid) make a detectable effect of 0.
        assert c["detectable_effect"] >= 0


def test_a_large_drop_regresses_and_a_steady_ranker_with_many_queries_shows_no_change():
    previous, current = nights(3, 400, {"drops": -0.08, "steady": 0.0}, 0.01, False)
    by = {(c["ranker"], c["cutoff"]): c
          for c in compare_nights(previous, current, n_bootstrap=2000, seed=3)}
    assert by["drops", 10]["verdict"] == REGRESSED
    assert by["drops", 10]["difference_high_adjusted"] < -MIN_EFFECT
    assert by["steady", 10]["verdict"] == NO_CHANGE
    assert by["steady", 10]["detectable_effect"] < MIN_EFFECT
    # A handful of the same queries cannot say as much: "inconclusive", not "no change".
    previous, current = nights(3, 12, {"drops": -0.08, "steady": 0.0}, 0.05, False)
    few = {(c["ranker"], c["cutoff"]): c
           for c in compare_nights(previous, current, n_bootstrap=2000, seed=3)}
    assert few["steady", 10]["verdict"] == INCONCLUSIVE
    assert few["steady", 10]["detectable_effect"] > MIN_EFFECT


def test_ranker_pairs_carry_the_same_adjusted_intervals():
    _, current = nights(5, 60, {"a": 0.0, "b": 0.0, "c": 0.0}, 0.05, False)
    rows = current.with_columns(
        pl.when(pl.col("ranker") == "c").then(pl.col("ndcg") * 0.7).otherwise(pl.col("ndcg"))
        .alias("ndcg"))
    for pair in compare_rankers(rows, n_bootstrap=1000, seed=5)["pairs"]:
        low, high = pair["difference_low_adjusted"], pair["difference_high_adjusted"]
        assert (low is not None and (low > 0 or high < 0)) == (pair["p_value_holm"] < ALPHA)
        assert pair["adjusted_level"] in {1 - ALPHA / s for s in range(1, 7)}


@settings(max_examples=200, deadline=None)
@given(p=st.lists(st.floats(0, 1), min_size=1, max_size=12),
       alpha=st.sampled_from([0.01, 0.05, 0.1]))
def test_holms_steps_reject_what_statsmodels_rejects(p, alpha):
    # On a step's boundary statsmodels rejects (p <= alpha / k); the verdicts do not (their
    # adjusted p must be below alpha): the two agree everywhere else.
    assume(all(abs(x * k - alpha) > 1e-12 for x in p for k in range(1, len(p) + 1)))
    p = np.array(p)
    scales = holm_scales(p, alpha)
    rejected = holm_oracle(p, alpha)[0]
    # A test is rejected exactly when its p is below alpha over its step's divisor.
    assert list(p * scales < alpha) == list(rejected)
    assert all(1 <= s <= p.size for s in scales)


def test_resamples_too_few_for_the_family_are_refused_by_name():
    tests = [{"measure": f"nDCG@{k}", "cutoff": k} for k in (5, 10) for _ in range(3)]
    with pytest.raises(TooFewResamples, match=r"Holm over the 6 tests .* use at least 120"):
        Family().check_resolution(tests, 119, 0.05, what="ranker pairs")
    Family().check_resolution(tests, 120, 0.05, what="ranker pairs")  # 6 / 121 < 0.05
    # Each measure a family of its own: three tests need 60.
    Family("measure").check_resolution(tests, 60, 0.05, what="ranker pairs")
    previous, current = nights(1, 20, {"a": 0.0, "b": 0.0, "c": 0.0}, 0.05, False)
    with pytest.raises(TooFewResamples, match="changes against the previous night"):
        compare_nights(previous, current, n_bootstrap=100)
