"""The agreement statistics held, to 1e-12, to independent implementations on random
multi-rater data with missing and unknown ratings: scikit-learn's cohen_kappa_score (both
weightings), the krippendorff package, statsmodels' fleiss_kappa and scipy's kendalltau."""

from __future__ import annotations

import krippendorff
import numpy as np
import polars as pl
import pytest
from scipy.stats import kendalltau
from sklearn.metrics import cohen_kappa_score, confusion_matrix
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from evaluation_pipeline.analysis import agreement as ag
from evaluation_pipeline.metric.ndcg import score
from evaluation_pipeline.spec import EvaluationSpec
from tests.support.raters import pool_over, rated_version
from tests.support.refusals import assert_names

SEEDS = range(8)


def graded_by(version: pl.DataFrame, rater: str) -> dict:
    rows = version.filter((pl.col("rater") == rater) & (pl.col("grade_status") == "graded"))
    return {(q, d): g for q, d, g in rows.select("query_id", "doc_id", "grade").iter_rows()}


def version_for(seed):
    raters = ("h1", "h2", "h3", "llm")[: 2 + seed % 3]
    return rated_version(seed, n_queries=20 + seed, raters=raters, max_grade=2 + seed % 3,
                         p_rated=0.6 + 0.05 * (seed % 4), p_unknown=0.15)


@pytest.mark.parametrize("seed", SEEDS)
def test_pairs_match_scikit_learn(seed):
    version = version_for(seed)
    found = ag.agreement(version, EvaluationSpec())
    grades = version["grade"].drop_nulls()
    labels = np.arange(grades.min(), grades.max() + 1)
    assert found["pairs"], "at least one pair of raters"
    for pair in found["pairs"]:
        a, b = graded_by(version, pair["rater_a"]), graded_by(version, pair["rater_b"])
        both = sorted(set(a) & set(b))
        x, y = [a[k] for k in both], [b[k] for k in both]
        assert pair["overlap"] == len(both) > 0
        assert pair["cohen_kappa"] == pytest.approx(
            cohen_kappa_score(x, y, labels=labels), abs=1e-12)
        assert pair["cohen_kappa_quadratic"] == pytest.approx(
            cohen_kappa_score(x, y, labels=labels, weights="quadratic"), abs=1e-12)
        assert pair["mean_difference"] == pytest.approx(np.mean(np.subtract(x, y)), abs=1e-12)
        assert pair["confusion"]["grades"] == labels.tolist()
        assert pair["confusion"]["counts"] == confusion_matrix(x, y, labels=labels).tolist()


@pytest.mark.parametrize("seed", SEEDS)
def test_alphas_match_the_krippendorff_package(seed):
    version = version_for(seed)
    found = ag.agreement(version, EvaluationSpec())
    raters = sorted(version["rater"].unique().to_list())
    docs = sorted(version.select("query_id", "doc_id").unique().iter_rows())
    by_rater = [graded_by(version, r) for r in raters]
    reliability = np.array([[g.get(d, np.nan) for d in docs] for g in by_rater], dtype=float)
    for level in ("ordinal", "interval"):
        expected = krippendorff.alpha(reliability_data=reliability, level_of_measurement=level)
        assert found[f"krippendorff_alpha_{level}"] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_fleiss_kappa_matches_statsmodels_over_the_documents_every_rater_graded(seed):
    version = version_for(seed)
    found = ag.agreement(version, EvaluationSpec())
    raters = sorted(version["rater"].unique().to_list())
    by_rater = [graded_by(version, r) for r in raters]
    full = sorted(set.intersection(*(set(g) for g in by_rater)))
    assert found["fleiss_documents"] == len(full)
    if len(full) < 2:
        pytest.skip("too few documents that every rater graded")
    table, _ = aggregate_raters(np.array([[g[d] for g in by_rater] for d in full]))
    assert found["fleiss_kappa"] == pytest.approx(fleiss_kappa(table), abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_kendall_tau_b_matches_scipy(seed):
    rng = np.random.default_rng(seed)
    x = np.round(rng.random(9) * 4) / 4  # ties, as rankers' means have at times
    y = np.where(rng.random(9) < 0.5, x, np.round(rng.random(9) * 4) / 4)
    assert ag.kendall_tau_b(x, y) == pytest.approx(kendalltau(x, y).statistic, abs=1e-12)


def test_the_ndcg_under_each_rater_and_the_taus_between_their_orders():
    version = rated_version(21, n_queries=30)
    pool = pool_over(version, 22, rankers=("a", "b", "c", "d", "e"))
    spec = EvaluationSpec(cutoffs=(3, 5), raters="majority:higher")
    found = ag.agreement(version, spec, pool)
    ndcg = pl.DataFrame(found["ndcg"])
    assert set(ndcg["rater"]) == {"h1", "h2", "llm", "rule"}
    for rater, under in [("h1", spec.replace(raters="rater:h1")), ("rule", spec)]:
        alone = score(pool, version, under).group_by("ranker", "cutoff").agg(
            pl.col("ndcg").mean())
        joined = ndcg.filter(pl.col("rater") == rater).join(alone, on=["ranker", "cutoff"])
        assert joined.height == 10 and (joined["mean"] == joined["ndcg"]).all()
    for tau in found["kendall_tau"]:
        pick = ndcg.filter(pl.col("cutoff") == tau["cutoff"]).sort("ranker")
        x = pick.filter(pl.col("rater") == tau["rater_a"])["mean"].to_numpy()
        y = pick.filter(pl.col("rater") == tau["rater_b"])["mean"].to_numpy()
        assert tau["tau"] == pytest.approx(kendalltau(x, y).statistic, abs=1e-12)
    assert len(found["kendall_tau"]) == 3 * 2  # three pairs of raters, two cutoffs


def test_unknown_ratings_count_as_no_rating():
    version = pl.DataFrame(
        [("q", "a", "h1", 1, "graded"), ("q", "a", "h2", None, "unknown"),
         ("q", "b", "h1", 2, "graded"), ("q", "b", "h2", 2, "graded"),
         ("q", "c", "h1", 0, "graded"), ("q", "c", "h2", 1, "graded")],
        schema=["query_id", "doc_id", "rater", "grade", "grade_status"], orient="row")
    pair, = ag.agreement(version, EvaluationSpec())["pairs"]
    assert pair["overlap"] == 2
    assert pair["mean_difference"] == pytest.approx(-0.5)
    assert ag.agreement(version, EvaluationSpec())["fleiss_documents"] == 2


def ratings(rows):
    return pl.DataFrame(rows, schema=["query_id", "doc_id", "rater", "grade", "grade_status"],
                        orient="row", schema_overrides={"grade": pl.Int64})


@pytest.mark.filterwarnings("ignore")  # scikit-learn warns as it returns its nan
def test_statistics_without_a_number_are_null():
    unknown = ag.agreement(ratings([("q", "a", "h1", None, "unknown"),
                                    ("q", "a", "h2", None, "unknown")]), EvaluationSpec())
    pair, = unknown["pairs"]
    assert pair["overlap"] == 0 and pair["cohen_kappa"] is None
    assert pair["confusion"] == {"grades": [], "counts": []}
    assert unknown["krippendorff_alpha_ordinal"] is None and unknown["fleiss_documents"] == 0
    same = ag.agreement(ratings([("q", "a", "h1", 1, "graded"), ("q", "a", "h2", 1, "graded")]),
                        EvaluationSpec())
    assert same["pairs"][0]["cohen_kappa"] is None  # one category: 0/0, as scikit-learn's nan
    assert np.isnan(cohen_kappa_score([1], [1]))


def test_a_grade_span_past_a_rating_scale_is_refused():
    with pytest.raises(ag.AgreementError) as refused:
        ag.agreement(ratings([("q", "a", "h1", 0, "graded"), ("q", "a", "h2", 5000, "graded")]),
                     EvaluationSpec())
    assert_names(refused, f"{ag.MAX_GRADES:,}", "0", "5000")  # the bound, the span's ends
