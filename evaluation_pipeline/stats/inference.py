"""Statistics from seeded resamples of queries: bootstrap intervals, sign-flip test, Holm.

The resamples themselves are drawn by :mod:`evaluation_pipeline.stats.resampling`: one Poisson
count and one sign per (query, resample), a function of the seed and the query id alone, shared
by every ranker, cutoff and slice. This module turns their sums into intervals and p-values.
"""

from __future__ import annotations

import math

import numpy as np

RNG_DESCRIPTION = (
    "counter-based draws shared by all results: query key = SplitMix64 mix of FNV-1a-64 of the "
    "query id and the seed; count(q, b), sign(q, b) from mix(key + (b+1)*golden gamma) "
    "(see REPORT_FORMAT.md, Methods)"
)
INTERVAL_METHOD = (
    "percentile Poisson bootstrap: each query counts Poisson(1) times per resample "
    "(the same counts for every ranker, cutoff and slice)"
)
TEST_METHOD = (
    "paired randomization test (sign flips of per-query differences, the same signs for every "
    "pair), two-sided, p = (1 + #{|mean flipped| >= |mean observed|}) / (1 + resamples); exact "
    "over all 2^n sign patterns when 2^n <= resamples"
)


def ratio_samples(numerators: np.ndarray, denominators: np.ndarray) -> np.ndarray:
    """Per-resample means (weighted sums over summed weights); NaN where nothing was drawn."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominators > 0, numerators / denominators, np.nan)


def percentile_interval(samples: np.ndarray, level: float) -> tuple[float | None, float | None]:
    """Central ``level`` interval of bootstrap samples; None when there is no finite sample."""
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return None, None
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(finite, [tail, 1.0 - tail])
    return float(low), float(high)


def sign_flip_p_value(differences: np.ndarray | None, signed_sums: np.ndarray, *,
                      n: int | None = None, mean: float | None = None,
                      largest: float | None = None) -> float:
    """Two-sided p-value of a paired randomization test on per-query differences.

    Under the null hypothesis the two rankers are exchangeable per query, so each difference
    keeps its size and its sign is a fair coin. ``signed_sums[b]`` is the sum of the
    differences under resample b's signs; with few queries every sign pattern is counted
    instead (exact), and the sums are not used. Given ``n``, ``mean`` and ``largest`` (the
    number of differences, their mean and the largest size, as sums over chunks of queries
    give them), ``differences`` is needed only for the exact count and may otherwise be None.
    """
    if n is None:
        d = np.asarray(differences, dtype=np.float64)
        n = d.size
        if n == 0:
            return 1.0
        mean, largest = float(d.mean()), float(np.abs(d).max())
    n_resamples = len(signed_sums)
    if n == 0:
        return 1.0
    observed = abs(mean)
    # Equality up to float rounding counts as "at least as extreme", so identical rankers give 1.
    tolerance = 1e-12 * max(1.0, largest)
    if n <= 30 and 2**n <= n_resamples:
        d = np.asarray(differences, dtype=np.float64)
        patterns = ((np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1) * 2 - 1
        flipped = np.abs((patterns * d).mean(axis=1))
        return float(np.mean(flipped >= observed - tolerance))
    flipped = np.abs(np.asarray(signed_sums, dtype=np.float64) / n)
    extreme = int(np.sum(flipped >= observed - tolerance))
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


def at_floor(entry) -> bool:
    """Whether a comparison's p (``p_value``, with its ``test_resamples``) is the sign-flip
    test's floor, 1 / (1 + resamples): the observed difference lay beyond every resample, and
    more resamples would give it a smaller p. (The exact count over every sign pattern never
    lands there: it runs only when the patterns are no more than the resamples, and its least
    p is 2 / patterns.)"""
    resamples, p = entry.get("test_resamples"), entry.get("p_value")
    return bool(resamples) and p is not None and p == 1.0 / (1 + resamples)


def below_floor(p: float) -> str:
    """A p at the floor (or adjusted from one) as a bound: "< 0.0005", its value rounded up to
    4 decimals (Holm's multiple of the floor likewise: "< 0.0030")."""
    return f"< {math.ceil(round(p * 1e4, 6)) / 1e4:.4f}"
