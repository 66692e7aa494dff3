"""The report's resampled intervals and p-values against a plain implementation of the same
scheme (REPORT_FORMAT.md, "Methods"), and the same seed giving the same numbers."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from evaluation_pipeline.aggregation.aggregate_table import aggregate_with_intervals
from evaluation_pipeline.aggregation.comparison import compare_rankers
from evaluation_pipeline.stats import intervals, resampling
from tests.support.frames import per_query_rows

MASK = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
SIGN_STREAM = 0xD1B54A32D192ED03
SEED, RESAMPLES, LEVEL = 17, 300, 0.9


def mix(z):
    """SplitMix64's finalizer on uint64 arrays (numpy wraps the products modulo 2^64)."""
    z = np.asarray(z, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def reference_keys(query_ids: list[str], seed: int) -> np.ndarray:
    seeded = int(mix(np.uint64(seed)))
    keys = []
    for query_id in query_ids:
        h = 0xCBF29CE484222325
        for byte in query_id.encode("utf-8"):
            h = ((h ^ byte) * 0x100000001B3) & MASK
        keys.append(h ^ seeded)
    return mix(np.array(keys, dtype=np.uint64))


def reference_counts(keys: np.ndarray, n_resamples: int) -> np.ndarray:
    """resamples x queries Poisson(1) counts, by inversion of 53-bit uniforms."""
    cdf = np.cumsum([math.exp(-1.0) / math.factorial(k) for k in range(20)])
    thresholds = np.append(np.floor(cdf * 2.0**53).astype(np.uint64), np.uint64(2**53))
    steps = (np.arange(1, n_resamples + 1, dtype=np.uint64) * np.uint64(GAMMA))[:, None]
    u = mix(keys[None, :] + steps) >> np.uint64(11)
    return np.searchsorted(thresholds, u, side="right").astype(np.float64)


def reference_signs(keys: np.ndarray, n_resamples: int) -> np.ndarray:
    sign_keys = mix(keys ^ np.uint64(SIGN_STREAM))
    b = np.arange(n_resamples, dtype=np.uint64)[:, None]
    bits = mix(sign_keys[None, :] + (b // np.uint64(64) + np.uint64(1)) * np.uint64(GAMMA))
    return 1.0 - 2.0 * ((bits >> (b % np.uint64(64))) & np.uint64(1)).astype(np.float64)


def reference_interval(samples: np.ndarray) -> list[float | None]:
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return [None, None]
    return list(np.quantile(finite, [(1 - LEVEL) / 2, 1 - (1 - LEVEL) / 2]))


def ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, numerator / denominator, np.nan)


RNG = np.random.default_rng(5)
N = 60
IDS = [f"q{i:03d}" for i in range(N)]
BASE = RNG.uniform(0.2, 0.8, N)


def small_run() -> tuple[pl.DataFrame, pl.DataFrame]:
    """Two rankers, two cutoffs, some queries without a number, weights (some 0) and two slice
    columns, one query missing from the queries table."""
    frames = []
    for cutoff in (5, 10):
        rows = []
        for ranker, shift in (("a", 0.0), ("b", 0.03)):
            for i, query_id in enumerate(IDS):
                value = float(np.clip(BASE[i] + shift + RNG.normal(0, 0.02), 0, 1))
                missing = (i % 11 == 3) or (ranker == "b" and i % 13 == 5)
                rows.append((ranker, query_id, None if missing else value,
                             "incomplete" if missing else "scored"))
        frames.append(per_query_rows(rows, cutoff=cutoff))
    queries = pl.DataFrame({
        "query_id": IDS[1:],  # q000 has no row: weight 0, slices "(none)"
        "weight": RNG.integers(0, 5, N - 1).astype(np.float64),
        "device": [("desktop", "mobile", "tablet")[i % 3] for i in range(1, N)],
        "band": [("head", "tail")[i % 2] if i % 7 else None for i in range(1, N)],
    })
    return pl.concat(frames), queries


def reference_aggregate_intervals(per_query: pl.DataFrame, queries: pl.DataFrame) -> dict:
    """Every (ranker, cutoff, slice_column, slice_value) interval, one group at a time."""
    table = pl.DataFrame({"query_id": IDS}).join(queries, on="query_id", how="left")
    counts = reference_counts(reference_keys(IDS, SEED), RESAMPLES)
    weight = table["weight"].fill_null(0.0).to_numpy()
    groups = {("all", "all"): np.ones(N, dtype=bool)}
    for column in ("device", "band"):
        values = table[column].fill_null("(none)").to_numpy()
        groups |= {(column, v): values == v for v in set(values)}
    out = {}
    by_pair = per_query.partition_by(["ranker", "cutoff"], as_dict=True)
    for (ranker, cutoff), rows in by_pair.items():
        ndcg = dict(zip(rows["query_id"], rows["ndcg"], strict=True))
        value = np.array([ndcg.get(q) if ndcg.get(q) is not None else np.nan for q in IDS])
        for (column, name), member in groups.items():
            chosen = member & np.isfinite(value)
            if chosen.sum() < 2:
                continue
            c, v, w = counts[:, chosen], value[chosen], weight[chosen]
            out[(ranker, cutoff, column, name)] = (
                reference_interval(ratio(c @ v, c.sum(axis=1)))
                + reference_interval(ratio(c @ (w * v), c @ w))
            )
    return out


def reference_pair(per_query: pl.DataFrame, cutoff: int) -> dict:
    at_k = per_query.filter(pl.col("cutoff") == cutoff)
    paired = (
        at_k.filter(pl.col("ranker") == "a").select("query_id", first="ndcg")
        .join(at_k.filter(pl.col("ranker") == "b").select("query_id", second="ndcg"),
              on="query_id")
        .drop_nulls().sort("query_id")
    )
    d = (paired["second"] - paired["first"]).to_numpy()
    keys = reference_keys(paired["query_id"].to_list(), SEED)
    counts = reference_counts(keys, RESAMPLES)
    flipped = np.abs(reference_signs(keys, RESAMPLES) @ d) / d.size
    tolerance = 1e-12 * max(1.0, float(np.abs(d).max()))
    extreme = int(np.sum(flipped >= abs(d.mean()) - tolerance))
    low, high = reference_interval(ratio(counts @ d, counts.sum(axis=1)))
    return {"difference_low": low, "difference_high": high,
            "p_value": (1 + extreme) / (1 + RESAMPLES)}


def fast_intervals(per_query: pl.DataFrame, queries: pl.DataFrame) -> dict:
    frame = aggregate_with_intervals(per_query, queries, ("device", "band"), ci_level=LEVEL,
                                     n_bootstrap=RESAMPLES, seed=SEED)
    return {
        (r["ranker"], r["cutoff"], r["slice_column"], r["slice_value"]):
            [r["macro_ndcg_low"], r["macro_ndcg_high"], r["weighted_ndcg_low"],
             r["weighted_ndcg_high"]]
        for r in frame.iter_rows(named=True) if r["n_with_number"] >= 2
    }


def assert_same_intervals(fast: dict, reference: dict) -> None:
    assert fast.keys() == reference.keys()
    for key, expected in reference.items():
        assert fast[key] == pytest.approx(expected, rel=1e-12, abs=1e-14), key


def test_aggregate_intervals_equal_the_plain_reference():
    per_query, queries = small_run()
    assert_same_intervals(fast_intervals(per_query, queries),
                          reference_aggregate_intervals(per_query, queries))


def test_slice_columns_in_passes_of_their_own_give_the_same_intervals(monkeypatch):
    # Beyond MAX_CELLS combinations each slice column is summed on its own, a few values a pass.
    per_query, queries = small_run()
    monkeypatch.setattr(intervals, "MAX_CELLS", 2)
    assert_same_intervals(fast_intervals(per_query, queries),
                          reference_aggregate_intervals(per_query, queries))


def test_paired_intervals_and_p_values_equal_the_plain_reference():
    per_query, _ = small_run()
    pairs = compare_rankers(per_query, ci_level=LEVEL, n_bootstrap=RESAMPLES, seed=SEED)["pairs"]
    for pair in pairs:
        expected = reference_pair(per_query, pair["cutoff"])
        got = {k: pair[k] for k in expected}
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-14)
    assert pairs[0]["p_value"] < 0.05  # b is better by 0.03 over ~50 queries: the test sees it


def test_same_seed_same_numbers_in_any_row_order_other_seed_other_numbers():
    per_query, queries = small_run()
    shuffled = per_query.sample(fraction=1.0, shuffle=True, seed=3)
    keys = ["ranker", "cutoff", "slice_column", "slice_value"]
    runs = [aggregate_with_intervals(frame, queries, ("device", "band"), n_bootstrap=RESAMPLES,
                                     seed=seed).sort(keys)
            for frame, seed in ((per_query, SEED), (per_query, SEED), (shuffled, SEED),
                                (per_query, SEED + 1))]
    assert runs[0].equals(runs[1])
    # The draws belong to query ids, not rows, and each chunk's rows are summed in one order:
    # another row order gives the same numbers to the bit.
    assert runs[0].equals(runs[2])
    assert not runs[0]["macro_ndcg_low"].equals(runs[3]["macro_ndcg_low"])
    comparisons = [compare_rankers(frame, n_bootstrap=RESAMPLES, seed=SEED)
                   for frame in (per_query, per_query, shuffled)]
    assert comparisons[0] == comparisons[1]
    for again, first in zip(comparisons[2]["pairs"], comparisons[0]["pairs"], strict=True):
        for field in ("difference_low", "difference_high", "p_value", "n_paired", "wins"):
            assert again[field] == first[field]


def test_sums_do_not_depend_on_how_resamples_are_split_between_calls(monkeypatch):
    keys = reference_keys(IDS, SEED)
    counted, signed = RNG.uniform(size=(N, 3)), RNG.uniform(size=(N, 2))
    cells = np.arange(N) % 4
    whole = resampling.resampled_sums(keys, RESAMPLES, cells=cells, n_cells=4,
                                      counted=counted, signed=signed)
    monkeypatch.setattr(resampling, "RESAMPLES_PER_CALL", 7)
    split = resampling.resampled_sums(keys, RESAMPLES, cells=cells, n_cells=4,
                                      counted=counted, signed=signed)
    assert np.array_equal(whole[0], split[0]) and np.array_equal(whole[1], split[1])
    # and they are the plain sums of the reference draws
    counts, signs = reference_counts(keys, RESAMPLES), reference_signs(keys, RESAMPLES)
    assert whole[0][:, 1] == pytest.approx(counts[:, cells == 1] @ counted[cells == 1], rel=1e-12)
    assert whole[1] == pytest.approx(signs @ signed, rel=1e-12)


def test_counts_are_poisson_one_and_signs_fair():
    keys = resampling.query_keys(pl.Series([f"x{i}" for i in range(20_000)]), SEED)
    assert np.array_equal(keys, reference_keys([f"x{i}" for i in range(20_000)], SEED))
    counts = reference_counts(keys, 50)
    assert counts.mean() == pytest.approx(1.0, abs=0.01)
    assert counts.var() == pytest.approx(1.0, abs=0.02)
    assert np.mean(counts == 0) == pytest.approx(math.exp(-1), abs=0.01)
    assert reference_signs(keys, 130).mean() == pytest.approx(0.0, abs=0.01)
