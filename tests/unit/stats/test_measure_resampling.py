"""Every measure's aggregates and comparisons against a plain recomputation from the per-query
rows (issue: every measure through the pipeline): the means, weighted means and slices by one
polars group-by, the intervals and paired p-values by the plain resampling scheme of
``test_resampling`` (fixed seed), and the Holm adjustment within each measure by statsmodels."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from evaluation_pipeline.aggregation.aggregate_table import aggregate_with_intervals
from evaluation_pipeline.aggregation.comparison import compare_rankers
from tests.support.frames import per_query_rows
from tests.support.holm_oracle import holm_oracle
from tests.unit.stats.test_resampling import (
    IDS,
    LEVEL,
    RESAMPLES,
    SEED,
    N,
    ratio,
    reference_counts,
    reference_interval,
    reference_keys,
    reference_signs,
)

# (measure, cutoff, scale): DCG@5's values run past 1, Rprec has no cutoff.
MEASURES = (("nDCG@5", 5, 1.0), ("RR(rel=2)@10", 10, 1.0), ("DCG@5", 5, 4.0), ("Rprec", None, 1.0))
RANKERS = (("a", 0.0), ("b", 0.04), ("c", -0.02))


def long_run() -> tuple[pl.DataFrame, pl.DataFrame]:
    """Three rankers x four measures in the long shape of per_query.parquet, some values null,
    a queries table with weights and a slice column."""
    rng = np.random.default_rng(11)
    base = rng.uniform(0.2, 0.8, N)
    frames = []
    for m, (measure, cutoff, scale) in enumerate(MEASURES):
        rows = []
        for ranker, shift in RANKERS:
            for i, query_id in enumerate(IDS):
                value = float(np.clip(base[i] + shift + rng.normal(0, 0.05), 0, 1)) * scale
                missing = (i % 11 == 3 + m) or (ranker == "b" and i % 13 == 5)
                rows.append((ranker, query_id, None if missing else value,
                             "incomplete" if missing else "scored"))
        frame = per_query_rows(rows, cutoff=cutoff or 1).with_columns(
            pl.lit(cutoff, dtype=pl.Int64).alias("cutoff"), pl.lit(measure).alias("measure"),
            pl.col("ndcg").alias("value"))
        if measure != f"nDCG@{cutoff}":
            frame = frame.with_columns(pl.lit(None, dtype=pl.Float64).alias("ndcg"))
        frames.append(frame)
    queries = pl.DataFrame({
        "query_id": IDS[1:],
        "weight": rng.integers(0, 5, N - 1).astype(np.float64),
        "device": [("desktop", "mobile", "tablet")[i % 3] for i in range(1, N)],
    })
    return pl.concat(frames), queries


def test_every_measures_means_slices_and_intervals_equal_the_plain_recomputation():
    per_query, queries = long_run()
    got = aggregate_with_intervals(per_query, queries, ("device",), ci_level=LEVEL,
                                   n_bootstrap=RESAMPLES, seed=SEED)
    assert set(got["measure"]) == {m for m, _, _ in MEASURES}
    table = pl.DataFrame({"query_id": IDS}).join(queries, on="query_id", how="left")
    weight = table["weight"].fill_null(0.0).to_numpy()
    device = table["device"].fill_null("(none)").to_numpy()
    counts = reference_counts(reference_keys(IDS, SEED), RESAMPLES)
    groups = {("all", "all"): np.ones(N, dtype=bool)} | {
        ("device", v): device == v for v in set(device)}
    checked = 0
    for (ranker, measure), rows in per_query.partition_by(["ranker", "measure"],
                                                           as_dict=True).items():
        by_id = dict(zip(rows["query_id"], rows["value"], strict=True))
        value = np.array([np.nan if by_id[q] is None else by_id[q] for q in IDS])
        for (column, name), member in groups.items():
            row = got.filter((pl.col("ranker") == ranker) & (pl.col("measure") == measure)
                             & (pl.col("slice_column") == column)
                             & (pl.col("slice_value") == name)).row(0, named=True)
            chosen = member & np.isfinite(value)
            v, w, c = value[chosen], weight[chosen], counts[:, chosen]
            assert row["n_queries"] == member.sum()
            assert row["n_with_number"] == chosen.sum()
            assert row["macro_value"] == pytest.approx(v.mean(), rel=1e-13)
            assert row["weighted_value"] == (
                None if w.sum() == 0 else pytest.approx((w * v).sum() / w.sum(), rel=1e-13))
            # Fewer than two values: no interval (REPORT_FORMAT.md).
            expected = ([None] * 4 if chosen.sum() < 2 else
                        reference_interval(ratio(c @ v, c.sum(axis=1)))
                        + reference_interval(ratio(c @ (w * v), c @ w)))
            assert [row["macro_value_low"], row["macro_value_high"], row["weighted_value_low"],
                    row["weighted_value_high"]] == (
                        expected if None in expected else pytest.approx(expected, rel=1e-12))
            # The former names hold the spec's nDCG@K alone.
            spec_ndcg = measure == "nDCG@5"
            assert (row["macro_ndcg"] == row["macro_value"]) if spec_ndcg else (
                row["macro_ndcg"] is None)
            checked += 1
    assert checked == len(RANKERS) * len(MEASURES) * len(groups)


def test_every_measures_pairs_equal_the_plain_test_and_holm_within_the_measure():
    per_query, _ = long_run()
    pairs = compare_rankers(per_query, ci_level=LEVEL, n_bootstrap=RESAMPLES, seed=SEED)["pairs"]
    assert sorted(p["measure"] for p in pairs) == sorted(m for m, _, _ in MEASURES for _ in "abc")
    for measure, _, _ in MEASURES:
        mine = [p for p in pairs if p["measure"] == measure]
        raw = []
        for pair in mine:
            rows = per_query.filter(pl.col("measure") == measure)
            paired = (rows.filter(pl.col("ranker") == pair["first"])
                      .select("query_id", first="value")
                      .join(rows.filter(pl.col("ranker") == pair["second"])
                            .select("query_id", second="value"), on="query_id")
                      .drop_nulls().sort("query_id"))
            d = (paired["second"] - paired["first"]).to_numpy()
            keys = reference_keys(paired["query_id"].to_list(), SEED)
            counts = reference_counts(keys, RESAMPLES)
            flipped = np.abs(reference_signs(keys, RESAMPLES) @ d) / d.size
            tolerance = 1e-12 * max(1.0, float(np.abs(d).max()))
            p = (1 + int(np.sum(flipped >= abs(d.mean()) - tolerance))) / (1 + RESAMPLES)
            assert pair["n_paired"] == d.size
            assert pair["mean_difference"] == pytest.approx(d.mean(), rel=1e-12, abs=1e-15)
            assert [pair["difference_low"], pair["difference_high"]] == pytest.approx(
                reference_interval(ratio(counts @ d, counts.sum(axis=1))), rel=1e-12)
            assert pair["p_value"] == pytest.approx(p, rel=1e-12)
            raw.append(p)
        holm = holm_oracle(raw)[1]
        assert [p["p_value_holm"] for p in mine] == pytest.approx(list(holm), rel=1e-12)
