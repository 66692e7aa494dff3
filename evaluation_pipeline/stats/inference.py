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

ADJUSTED_INTERVAL_METHOD = (
    "the sign-flip test inverted: the shifts of the per-query differences it does not reject "
    "at alpha / s, s the divisor of the test's Holm step (m - j + 1 when rejected at step j of "
    "m, else m - r, r rejected), so an interval excludes 0 exactly when its adjusted p is "
    "below alpha; detectable effect: (t(1 - alpha / 2s) + t(power)) x sd / sqrt(n), t with "
    "n - 1 degrees of freedom"
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
    tolerance = _tolerance(largest)
    if _exact(n, n_resamples):
        d = np.asarray(differences, dtype=np.float64)
        patterns = _sign_patterns(n)
        flipped = np.abs((patterns * d).mean(axis=1))
        return float(np.mean(flipped >= observed - tolerance))
    flipped = np.abs(np.asarray(signed_sums, dtype=np.float64) / n)
    extreme = int(np.sum(flipped >= observed - tolerance))
    return float((1 + extreme) / (1 + n_resamples))


def _tolerance(largest: float) -> float:
    """Equality up to float rounding counts as "at least as extreme": identical rankers give 1."""
    return 1e-12 * max(1.0, largest)


def _exact(n: int, n_resamples: int) -> bool:
    """Whether the test counts every sign pattern of ``n`` differences instead of resamples."""
    return n <= 30 and 2**n <= n_resamples


def _sign_patterns(n: int) -> np.ndarray:
    """Every pattern of ``n`` signs (+1, -1), one per row."""
    return ((np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1) * 2 - 1


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


# --- the adjusted intervals (contract section 4) ------------------------------------------------


def holm_scales(p_values: np.ndarray, alpha: float) -> np.ndarray:
    """Per test, the divisor of ``alpha`` its adjusted interval is held to, so that the
    interval excludes 0 exactly when Holm's adjusted p is below ``alpha``.

    Holm tests the j-th smallest p (1-based) of m at alpha / (m - j + 1) and stops at the first
    that fails. A test it rejects gets its step's divisor, m - j + 1; every other test the
    divisor of the step where Holm stopped, m - r (r rejected). These are Bonferroni intervals
    at the step's level: each rejected test's p is below alpha / (m - j + 1) (its adjusted p is
    at least (m - j + 1) p), and each other test's p is at least the stopping step's, which
    (m - r) lifts to alpha or more. ``holm`` computes the same products, so the float
    comparisons agree too."""
    p = np.asarray(p_values, dtype=np.float64)
    m = p.size
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    rejected = int(np.sum(holm(p) < alpha))
    order = np.argsort(p, kind="stable")
    steps = np.arange(m)
    scales = np.empty(m, dtype=np.int64)
    scales[order] = np.where(steps < rejected, m - steps, m - rejected)
    return scales


def sign_flip_interval(differences: np.ndarray | None, signed_sums: np.ndarray,
                       sign_sums: np.ndarray, *, n: int, mean: float, largest: float,
                       alpha: float, scale: int = 1) -> tuple[float | None, float | None]:
    """The shifts ``delta`` the sign-flip test of :func:`sign_flip_p_value` does not reject at
    ``alpha / scale``: the test inverted, so the interval and the test are one statistic.

    Shifted, the differences are d - delta, and resample b's flipped sum is
    ``signed_sums[b] - delta * sign_sums[b]`` (``sign_sums[b]``: the sum of resample b's signs
    over the paired queries). Resample b counts as at least as extreme as the observed mean at
    ``delta`` on an interval of ``delta`` around the mean, since |sign_sums| <= n; the
    resamples counted at ``delta`` fall as ``delta`` leaves the mean, so the accepted shifts
    are an interval, bounded by order statistics of the resamples' ends. With few queries every
    sign pattern is counted instead, as the test does. (None, None): with no paired query, or
    when the test cannot reject at this level with any count (too few resamples for it)."""
    if n == 0:
        return None, None
    tolerance = _tolerance(largest)
    n_resamples = len(signed_sums)
    if differences is not None and _exact(n, n_resamples):
        d = np.asarray(differences, dtype=np.float64)
        patterns = _sign_patterns(n)
        flipped, signs = patterns @ d, patterns.sum(axis=1).astype(np.float64)
        p_of_count = np.arange(2**n + 1) / 2**n
    else:
        flipped = np.asarray(signed_sums, dtype=np.float64)
        signs = np.asarray(sign_sums, dtype=np.float64)
        p_of_count = (1 + np.arange(n_resamples + 1)) / (1 + n_resamples)
    # The least count of extreme resamples at which the test does not reject.
    kept = np.flatnonzero(p_of_count * scale >= alpha)
    needed = int(kept[0])
    if needed == 0:
        return None, None
    low, high = _accepting_ends(flipped, signs, n, mean, n * tolerance)
    low, high = float(np.sort(low)[needed - 1]), float(np.sort(high)[-needed])
    # Unbounded: some sign patterns (all +, all -) are extreme at every shift, and with this
    # few queries they alone keep the test from rejecting anything.
    return (low, high) if np.isfinite(low) and np.isfinite(high) else (None, None)


def _accepting_ends(flipped: np.ndarray, signs: np.ndarray, n: int, mean: float,
                    slack: float) -> tuple[np.ndarray, np.ndarray]:
    """Per resample, the ends of the shifts at which it is at least as extreme as the
    observed mean: |flipped - delta * signs| >= n |mean - delta| - slack.

    Below the mean the condition reads min(n (mean - delta) -/+ (flipped - delta signs)) <=
    slack: two lines falling in delta (slopes -(n -/+ signs) <= 0), so it holds from the
    smaller of their roots on; above the mean, mirrored: min(n (delta - mean) -/+ (flipped -
    delta signs)) <= slack holds up to the larger of two roots. A line of slope 0 holds
    everywhere or nowhere; the mean itself always holds."""
    total = n * mean
    with np.errstate(divide="ignore", invalid="ignore"):
        low = np.minimum(_root(total - flipped - slack, n - signs, total - flipped, slack),
                         _root(total + flipped - slack, n + signs, total + flipped, slack))
        high = np.maximum(_root(total + flipped + slack, n + signs, -total - flipped, slack,
                                upper=True),
                          _root(total - flipped + slack, n - signs, flipped - total, slack,
                                upper=True))
    return np.minimum(low, mean), np.maximum(high, mean)


def _root(numerator, slope, constant, slack, *, upper: bool = False) -> np.ndarray:
    """numerator / slope where the line slopes; where it is flat, -inf (+inf for ``upper``)
    when the flat line's value (``constant``) holds (<= slack), else the mean's side."""
    flat = slope == 0
    holds = constant <= slack
    inf = np.inf if upper else -np.inf
    return np.where(flat, np.where(holds, inf, -inf), numerator / np.where(flat, 1, slope))


def detectable_effect(n: int, sum_squares: float, mean: float, *, alpha: float,
                      power: float, scale: int = 1) -> float | None:
    """The least true mean difference the paired test, at ``alpha / scale`` two-sided, finds
    with probability ``power``: (t_{1 - alpha / (2 scale)} + t_{power}) x sd / sqrt(n), t with
    n - 1 degrees of freedom, sd the paired differences' sample standard deviation (from
    their count, sum of squares and mean). The normal-theory power of the paired t-test, which
    the sign-flip test matches on all but tiny samples (tests/unit/stats/test_simulations.py
    holds it to a simulation). None with fewer than two paired queries."""
    if n < 2:
        return None
    from scipy.stats import t

    variance = max(0.0, (sum_squares - n * mean * mean) / (n - 1))
    quantiles = t.ppf(1 - alpha / (2 * scale), n - 1) + t.ppf(power, n - 1)
    return float(quantiles * np.sqrt(variance / n))
