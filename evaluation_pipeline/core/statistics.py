"""Seeded resampling statistics over queries: bootstrap intervals, sign-flip test, Holm.

Every function takes its seed explicitly and draws the whole resample matrix at once (numpy),
so the same seed gives the same numbers and there is no Python loop per resample or per query.
The generator for one result is ``numpy.random.default_rng([seed, crc32(key)])``: a result's
numbers do not depend on which other results were computed before it.
"""

from __future__ import annotations

import zlib

import numpy as np

RNG_DESCRIPTION = "numpy PCG64 via default_rng([seed, crc32(key)]), key = 'ranker|cutoff|...'"
INTERVAL_METHOD = "percentile bootstrap, resampling queries with replacement"
TEST_METHOD = (
    "paired randomization test (sign flips of per-query differences), two-sided, "
    "p = (1 + #{|mean flipped| >= |mean observed|}) / (1 + resamples); exact over all 2^n "
    "sign patterns when 2^n <= resamples"
)


# Resample matrices are drawn in blocks of at most this many cells: memory stays bounded
# (about 16 MB per block) for any number of queries, and the order of draws stays fixed.
BLOCK_CELLS = 2_000_000


def resample_blocks(n_resamples: int, n: int) -> list[int]:
    """Sizes of the blocks of resamples (rows) drawn at once for ``n`` queries."""
    rows = max(1, BLOCK_CELLS // max(n, 1))
    return [min(rows, n_resamples - start) for start in range(0, n_resamples, rows)]


def bootstrap_mean(values: np.ndarray, n_bootstrap: int, rng: np.random.Generator) -> np.ndarray:
    """Means of ``n_bootstrap`` resamples (with replacement) of ``values``."""
    n = len(values)
    return np.concatenate([
        values[rng.integers(0, n, size=(rows, n))].mean(axis=1)
        for rows in resample_blocks(n_bootstrap, n)
    ])


def rng_for(seed: int, key: str) -> np.random.Generator:
    """The generator of one result: independent of evaluation order, reproducible by key."""
    return np.random.default_rng([seed, zlib.crc32(key.encode("utf-8"))])


def bootstrap_means(
    values: np.ndarray,
    weights: np.ndarray | None,
    n_bootstrap: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Macro (and weighted) means of ``n_bootstrap`` resamples of the queries.

    One index matrix (resamples x queries) serves both means, so they are paired.
    """
    n = len(values)
    macro, weighted = [], []
    for rows in resample_blocks(n_bootstrap, n):
        index = rng.integers(0, n, size=(rows, n))
        macro.append(values[index].mean(axis=1))
        if weights is not None:
            w = weights[index]
            total = w.sum(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                weighted.append(
                    np.where(total > 0, (values[index] * w).sum(axis=1) / total, np.nan)
                )
    return np.concatenate(macro), (np.concatenate(weighted) if weights is not None else None)


def percentile_interval(samples: np.ndarray, level: float) -> tuple[float | None, float | None]:
    """Central ``level`` interval of bootstrap samples; None when there is no finite sample."""
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return None, None
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(finite, [tail, 1.0 - tail])
    return float(low), float(high)


def sign_flip_p_value(differences: np.ndarray, n_resamples: int, rng: np.random.Generator) -> float:
    """Two-sided p-value of a paired randomization test on per-query differences.

    Under the null hypothesis the two rankers are exchangeable per query, so each difference
    keeps its size and its sign is a fair coin.
    """
    d = np.asarray(differences, dtype=np.float64)
    n = d.size
    if n == 0:
        return 1.0
    observed = abs(d.mean())
    # Equality up to float rounding counts as "at least as extreme", so identical rankers give 1.
    tolerance = 1e-12 * max(1.0, float(np.abs(d).max()))
    if n <= 30 and 2**n <= n_resamples:
        patterns = ((np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1) * 2 - 1
        flipped = np.abs((patterns * d).mean(axis=1))
        return float(np.mean(flipped >= observed - tolerance))
    extreme = 0
    for rows in resample_blocks(n_resamples, n):
        signs = rng.integers(0, 2, size=(rows, n), dtype=np.int8) * 2 - 1
        extreme += int(np.sum(np.abs((signs * d).mean(axis=1)) >= observed - tolerance))
    return float((1 + extreme) / (1 + n_resamples))


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1)."""
    p = np.asarray(p_values, dtype=np.float64)
    m = p.size
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    adjusted = np.empty(m)
    adjusted[order] = scaled
    return adjusted
