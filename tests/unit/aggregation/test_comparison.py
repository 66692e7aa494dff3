"""Paired ranker comparison: bootstrap interval, sign-flip test, Holm, regressions, pools."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from evaluation_pipeline.aggregation.comparison import (
    candidate_set_differences,
    compare_pools,
    compare_rankers,
)
from evaluation_pipeline.evaluation import Lineage
from evaluation_pipeline.stats.inference import holm, sign_flip_p_value
from tests.support.frames import LINEAGE, SHA_J, SHA_P, per_query_rows

RNG = np.random.default_rng(11)
BASE = RNG.uniform(0.3, 0.6, 40)


def two_rankers(second: np.ndarray, first: np.ndarray = BASE) -> pl.DataFrame:
    rows = [("a", f"q{i:02d}", float(v), "scored") for i, v in enumerate(first)]
    rows += [("b", f"q{i:02d}", float(v), "scored") for i, v in enumerate(second)]
    return per_query_rows(rows)


def test_a_clearly_better_ranker_has_a_tiny_p_and_an_interval_above_zero():
    better = BASE + 0.2 + RNG.uniform(0, 0.05, BASE.size)
    pair = compare_rankers(two_rankers(better), n_bootstrap=2000)["pairs"][0]
    assert (pair["first"], pair["second"]) == ("a", "b")
    assert pair["mean_difference"] == pytest.approx(float(np.mean(better - BASE)))
    assert pair["p_value"] < 0.001
    assert 0 < pair["difference_low"] < pair["mean_difference"] < pair["difference_high"]
    assert (pair["wins"], pair["losses"], pair["ties"]) == (40, 0, 0)
    assert pair["regressions"] == []
    # Two rankers at one cutoff: a family of one test, which Holm leaves as it is.
    assert pair["p_value_holm"] == pair["p_value"]
    assert pair["holm_family"] == "Holm over 1 test: 1 ranker pair x 1 measure (nDCG@5)"


def test_identical_rankers_have_p_one_and_an_interval_containing_zero():
    pair = compare_rankers(two_rankers(BASE.copy()))["pairs"][0]
    assert pair["p_value"] == 1.0
    assert pair["difference_low"] <= 0 <= pair["difference_high"]
    assert (pair["wins"], pair["losses"], pair["ties"]) == (0, 0, 40)


def test_same_seed_same_numbers_other_seed_other_interval():
    noisy = BASE + RNG.normal(0, 0.1, BASE.size)
    first = compare_rankers(two_rankers(noisy), seed=3, n_bootstrap=500)
    again = compare_rankers(two_rankers(noisy), seed=3, n_bootstrap=500)
    other = compare_rankers(two_rankers(noisy), seed=4, n_bootstrap=500)
    assert first == again
    assert first["pairs"][0]["difference_low"] != other["pairs"][0]["difference_low"]


def test_pairs_use_only_queries_with_a_number_for_both_and_list_regressions():
    per_query = per_query_rows([
        ("a", "q1", 0.9, "scored"), ("b", "q1", 0.3, "scored"),
        ("a", "q2", 0.5, "scored"), ("b", "q2", 0.6, "scored"),
        ("a", "q3", 0.7, "scored"), ("b", "q3", 0.6, "scored"),
        ("a", "q4", None, "incomplete"), ("b", "q4", 0.1, "scored"),
        ("a", "q5", 0.4, "scored"), ("b", "q5", None, "no_positive"),
    ])
    pair = compare_rankers(per_query, n_regressions=1)["pairs"][0]
    assert pair["n_paired"] == 3
    assert pair["mean_difference"] == pytest.approx((-0.6 + 0.1 - 0.1) / 3)
    assert (pair["wins"], pair["losses"], pair["ties"]) == (1, 2, 0)
    assert pair["regressions"] == [
        {"query_id": "q1", "ndcg_first": 0.9, "ndcg_second": 0.3,
         "difference": pytest.approx(-0.6)}
    ]


def test_three_rankers_get_holm_adjusted_p_values_and_a_baseline_limits_pairs():
    rows = [(r, f"q{i:02d}", float(v + shift), "scored")
            for r, shift in (("a", 0.0), ("b", 0.05), ("c", 0.3))
            for i, v in enumerate(BASE + RNG.normal(0, 0.05, BASE.size))]
    result = compare_rankers(per_query_rows(rows), n_bootstrap=500)
    assert result["multiple_comparisons"] == "holm"
    assert [(p["first"], p["second"]) for p in result["pairs"]] == [
        ("a", "b"), ("a", "c"), ("b", "c")]
    expected = holm(np.array([p["p_value"] for p in result["pairs"]]))
    assert [p["p_value_holm"] for p in result["pairs"]] == pytest.approx(list(expected))
    assert all(p["p_value_holm"] >= p["p_value"] for p in result["pairs"])
    against = compare_rankers(per_query_rows(rows), baseline="c", n_bootstrap=200)
    assert [(p["first"], p["second"]) for p in against["pairs"]] == [("c", "a"), ("c", "b")]


def test_holm_on_known_values():
    assert list(holm(np.array([0.01, 0.04, 0.03]))) == pytest.approx([0.03, 0.06, 0.06])


def test_sign_flip_exact_p_matches_scipy_permutation_test():
    first, second = RNG.uniform(0, 1, 9), RNG.uniform(0, 1, 9)
    # 2^9 <= 2000 resamples: every sign pattern is counted, the resampled sums are not used.
    ours = sign_flip_p_value(second - first, np.zeros(2000))
    reference = stats.permutation_test(
        (second, first), lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples", alternative="two-sided", n_resamples=np.inf,
        vectorized=True,
    ).pvalue
    assert ours == pytest.approx(reference, abs=1e-12)
    # Five equal positive differences: only all-plus and all-minus are as extreme, 2 of 32.
    assert sign_flip_p_value(np.full(5, 0.1), np.zeros(2000)) == pytest.approx(2 / 32)


def test_rankers_with_different_candidate_sets_are_not_a_pure_reranker_comparison():
    per_query = per_query_rows([
        ("a", "q1", 0.5, "scored", 1.0, 1.0, 10), ("b", "q1", 0.6, "scored", 1.0, 0.5, 8),
        ("a", "q2", 0.5, "scored", 1.0, 1.0, 10), ("b", "q2", 0.6, "scored", 1.0, 1.0, 10),
    ])
    result = compare_rankers(per_query)
    assert result["pure_reranker_comparison"] is False
    assert "not a pure reranker comparison" in result["note"] and "q1" in result["note"]


def test_across_pools_is_labelled_and_carries_candidate_recall():
    other = Lineage("v1", SHA_J, "pool-2", SHA_P.replace("b", "c"), LINEAGE.spec_id)
    first = per_query_rows([("a", f"q{i}", 0.5, "scored", 1.0, 0.5) for i in range(6)])
    second = per_query_rows([("a", f"q{i}", 0.7, "scored", 1.0, 0.9) for i in range(6)],
                            lineage=other)
    result = compare_pools(first, second, n_bootstrap=200)
    assert result["pure_reranker_comparison"] is False
    assert result["note"].startswith("not a pure reranker comparison")
    pair = result["pairs"][0]
    assert (result["pool_first"], result["pool_second"]) == ("pool-1", "pool-2")
    assert pair["mean_difference"] == pytest.approx(0.2)
    assert pair["mean_candidate_recall_first"] == pytest.approx(0.5)
    assert pair["mean_candidate_recall_second"] == pytest.approx(0.9)


def test_candidate_set_differences_in_a_pool_are_found_exactly():
    pool = pl.DataFrame({
        "ranker": ["a", "a", "b", "b", "a", "b"],
        "query_id": ["q1", "q1", "q1", "q1", "q2", "q2"],
        "doc_id": ["x", "y", "x", "z", "m", "m"],
        "score": [2.0, 1.0, 2.0, 1.0, 1.0, 1.0],
    })
    assert candidate_set_differences(pool)["query_id"].to_list() == ["q1"]
    assert candidate_set_differences(pool.filter(pl.col("query_id") == "q2")).height == 0


def test_candidate_sets_differ_on_size_or_recall_null_included_missing_queries_apart():
    per_query = per_query_rows([
        ("a", "same", 0.5, "scored", 1.0, 0.5, 10), ("b", "same", 0.6, "scored", 1.0, 0.5, 10),
        ("a", "size", 0.5, "scored", 1.0, 0.5, 10), ("b", "size", 0.6, "scored", 1.0, 0.5, 9),
        ("a", "recall", 0.5, "scored", 1.0, 0.5, 10), ("b", "recall", 0.6, "scored", 1.0, 0.7, 10),
        ("a", "null", 0.5, "scored", 1.0, None, 10), ("b", "null", 0.6, "scored", 1.0, 0.5, 10),
        ("a", "nulls", None, "not_judged", 1.0, None, 10),
        ("b", "nulls", None, "not_judged", 1.0, None, 10),
        # A ranker missing the query says nothing about its candidate set.
        ("a", "missing", 0.5, "scored", 1.0, 0.5, 10),
        ("b", "missing", 0.0, "missing_from_run", 1.0, None, 0),
    ])
    comparison = compare_rankers(per_query, n_bootstrap=50)
    assert not comparison["pure_reranker_comparison"]
    assert "different candidate sets for 3 queries (null, recall, size)" in comparison["note"]
