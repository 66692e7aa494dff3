"""Simulations of the nightly comparison's statistics: how often its intervals cover the true
shift, how often its tests reject when nothing changed, and how often they find a change of the
detectable size, each held to the rate the method promises.

Every simulation has a fixed seed and draws fresh random signs (or Poisson counts) for each
simulated data set, so the S data sets of a check are independent and the proportion they give
(coverage, error rate, power) has the binomial standard error sqrt(q (1 - q) / S) about its
expectation q. The checks allow Z = 4 of those standard errors around the rate each method
should have (a correct implementation would fail a check with a probability of about 6e-5 over
seeds), and the rates are these:

* The sign-flip interval (the test inverted). With B random sign resamples the test of a shift
  rejects when fewer than k of them are as extreme as the data, and for data symmetric about
  the true shift with no ties its size is exactly k / (B + 1): the observed sign pattern is one
  of B + 1 exchangeable ones. At 95% with B = 999 that is 49 / 1000, coverage 0.951. With ties
  the test is conservative; its size is then computed exactly from the binomial law of the
  flips, and the coverage is held to that.
* The percentile Poisson bootstrap interval (the report's unadjusted one) behaves like the
  plug-in normal interval, mean +- z sd_mle / sqrt(n), which on normal data covers with
  probability P(|T_{n-1}| <= z sqrt((n - 1) / n)), 0.943 at n = 60: the percentile interval's
  known small under-coverage. Its coverage is held between that less Z errors and the nominal
  level plus Z errors.
* Holm's adjustment keeps the familywise error at or below alpha under any dependence between
  the tests, so the share of nights with any Holm rejection (any regressed or improved verdict
  with no minimum effect) is held to alpha + Z errors, and the adjusted intervals' simultaneous
  coverage to 1 - alpha - Z errors.
* The detectable effect is the paired t-test's normal-theory formula; the exact noncentral-t
  power at it is within a point of the asked power, and the sign-flip test gives up about a
  point more to its finite resamples, so the simulated power is held to the asked power within
  Z errors plus 0.015.

Two checks are exact, with no Monte-Carlo error: the adjusted interval excludes 0 exactly when
Holm's adjusted p is below alpha, and the interval is the set of shifts the test does not reject,
by brute force over a fine grid of shifts.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom, nct, norm, t

from evaluation_pipeline.stats.inference import (
    detectable_effect,
    holm,
    holm_scales,
    percentile_interval,
    ratio_samples,
    sign_flip_interval,
    sign_flip_p_value,
)
from evaluation_pipeline.stats.verdict import verdict
from schemas.columns import IMPROVED, REGRESSED

ALPHA = 0.05
RESAMPLES = 999
SIMULATIONS = 2000
# Monte-Carlo error allowed: standard errors of a binomial proportion.
Z = 4.0
FAMILY = 6


def standard_error(rate: float, simulations: int = SIMULATIONS) -> float:
    """The binomial standard error of a proportion with expectation ``rate``."""
    return math.sqrt(rate * (1.0 - rate) / simulations)


def draw_signs(rng: np.random.Generator, resamples: int, n: int) -> np.ndarray:
    return rng.choice([-1.0, 1.0], size=(resamples, n))


def interval(d: np.ndarray, signs: np.ndarray, *, alpha: float = ALPHA,
             scale: int = 1) -> tuple[float | None, float | None]:
    """The sign-flip interval of ``d`` from the first ``d.size`` columns of ``signs``."""
    signs = signs[:, :d.size]
    return sign_flip_interval(d, signs @ d, signs.sum(axis=1), n=d.size, mean=float(d.mean()),
                              largest=float(np.abs(d).max()), alpha=alpha, scale=scale)


def p_value(d: np.ndarray, signs: np.ndarray) -> float:
    return sign_flip_p_value(d, signs[:, :d.size] @ d)


def covers(bounds: tuple[float | None, float | None], value: float) -> bool:
    """Whether an interval holds ``value``; (None, None), no bound, holds every value."""
    low, high = bounds
    return low is None or low <= value <= high


def excludes_zero(bounds: tuple[float | None, float | None]) -> bool:
    low, high = bounds
    return low is not None and (low > 0.0 or high < 0.0)


def rejecting_counts(resamples: int, alpha: float, scale: int = 1) -> int:
    """How many counts of extreme resamples (0, 1, ...) make the test reject at alpha / scale:
    p = (1 + count) / (1 + resamples) with p * scale < alpha."""
    counts = np.arange(resamples + 1)
    return int(np.sum((1 + counts) / (1 + resamples) * scale < alpha))


def tied_size(n: int, p_zero: float, resamples: int, alpha: float) -> float:
    """The exact size of the B-resample sign-flip test on n differences, each 0 with
    probability ``p_zero`` and +-c with equal chances otherwise (ties everywhere).

    With k nonzero differences, j of them positive, the statistic is |2j - k| c / n, and a
    random sign pattern is at least as extreme with probability q = P(|2X - k| >= |2j - k|),
    X ~ Binomial(k, 1/2); the count of extreme resamples is Binomial(B, q), and the test
    rejects when it is below ``rejecting_counts``."""
    below = rejecting_counts(resamples, alpha)
    size = 0.0
    for k in range(n + 1):
        j = np.arange(k + 1)
        statistic = np.abs(2 * j - k)
        chance = binom.pmf(j, k, 0.5)
        extreme = np.array([chance[statistic >= s].sum() for s in statistic])
        size += binom.pmf(k, n, 1.0 - p_zero) * float(
            np.sum(chance * binom.cdf(below - 1, resamples, np.minimum(extreme, 1.0))))
    return size


# --- 1. coverage of the sign-flip interval --------------------------------------------------


def sign_flip_coverage(kind: str, seed: int, n: int = 40, shift: float = 0.03) -> float:
    """Share of simulated data sets whose 95% sign-flip interval holds the true shift."""
    rng = np.random.default_rng(seed)
    covered = 0
    for _ in range(SIMULATIONS):
        if kind == "normal":
            d = rng.normal(shift, 0.1, n)
        else:  # symmetric about the shift, with ties: -0.2, 0, +0.2 around it
            d = shift + rng.choice([-0.2, 0.0, 0.2], p=[0.25, 0.5, 0.25], size=n)
        bounds = interval(d, draw_signs(rng, RESAMPLES, n))
        assert bounds[0] is not None
        covered += covers(bounds, shift)
    return covered / SIMULATIONS


@pytest.mark.parametrize("kind", ["normal", "tied"])
def test_the_sign_flip_interval_covers_the_true_shift_at_its_level(kind):
    n = 40
    coverage = sign_flip_coverage(kind, seed=20261201, n=n)
    # The expected coverage: 1 - 49/1000 without ties; with them, 1 - the exact size.
    size = (rejecting_counts(RESAMPLES, ALPHA) / (1 + RESAMPLES) if kind == "normal"
            else tied_size(n, 0.5, RESAMPLES, ALPHA))
    expected = 1.0 - size
    assert expected >= 1.0 - ALPHA
    error = Z * standard_error(expected)
    assert expected - error <= coverage <= expected + error, (coverage, expected, error)


# --- 2. coverage of the percentile Poisson bootstrap interval ---------------------------------


def bootstrap_coverage(seed: int, n: int = 60, mean: float = 0.03, level: float = 0.95) -> float:
    """Share of simulated data sets whose percentile Poisson-bootstrap interval holds the
    mean: each resample counts each query Poisson(1) times, and its mean is sum(c d) / sum(c)."""
    rng = np.random.default_rng(seed)
    covered = 0
    for _ in range(SIMULATIONS):
        d = rng.normal(mean, 0.1, n)
        counts = rng.poisson(1.0, size=(RESAMPLES, n))
        low, high = percentile_interval(ratio_samples(counts @ d, counts.sum(axis=1)), level)
        covered += low <= mean <= high
    return covered / SIMULATIONS


def test_the_bootstrap_interval_covers_the_mean_nearly_at_its_level():
    n, level = 60, 0.95
    coverage = bootstrap_coverage(seed=20261202, n=n, level=level)
    # The plug-in normal interval's coverage (0.943): the percentile interval's known shortfall.
    plug_in = 2.0 * t.cdf(norm.ppf(0.5 + level / 2) * math.sqrt((n - 1) / n), n - 1) - 1.0
    low, high = plug_in - Z * standard_error(plug_in), level + Z * standard_error(level)
    assert 0.92 <= low and high <= 0.975
    assert low <= coverage <= high, (coverage, low, high)


# --- 3. and 4. a family of six tests under Holm -------------------------------------------------


def null_differences(rng: np.random.Generator, n: int) -> np.ndarray:
    """n per-query differences symmetric about 0, in [-1, 1]: normal, heavy-tailed (Laplace),
    or mostly unchanged queries (60% exactly 0, the rest +-a size on a 0.01 grid: ties)."""
    kind = rng.integers(3)
    if kind == 0:
        d = rng.normal(0.0, 0.1, n)
    elif kind == 1:
        d = rng.laplace(0.0, 0.08, n)
    else:
        sizes = np.round(rng.uniform(0.0, 0.5, n), 2)
        d = np.where(rng.random(n) < 0.6, 0.0, rng.choice([-1.0, 1.0], size=n) * sizes)
    return np.clip(d, -1.0, 1.0)


def night(rng: np.random.Generator, sizes: np.ndarray, shifts: np.ndarray):
    """One night of ``len(sizes)`` tests sharing their queries' signs (as the pipeline's
    tests do): each test's differences, Holm-adjusted p-values and adjusted intervals."""
    signs = draw_signs(rng, RESAMPLES, int(max(sizes)))
    data = [null_differences(rng, int(n)) + shift for n, shift in zip(sizes, shifts)]
    p = np.array([p_value(d, signs) for d in data])
    scales = holm_scales(p, ALPHA)
    intervals = [interval(d, signs, scale=int(s)) for d, s in zip(data, scales)]
    return data, holm(p), intervals


def assert_agree(adjusted: np.ndarray, intervals: list) -> None:
    """Exactly, with no tolerance: adjusted p below alpha if and only if the adjusted interval
    excludes 0."""
    assert [bool(p < ALPHA) for p in adjusted] == [excludes_zero(b) for b in intervals], (
        adjusted, intervals)


def family_under_null(seed: int, nights: int = SIMULATIONS) -> tuple[float, float]:
    """(familywise error, simultaneous coverage of 0) over nights of six tests of 30 to 50
    queries each, nothing changed."""
    rng = np.random.default_rng(seed)
    any_rejected = all_covered = 0
    for _ in range(nights):
        _, adjusted, intervals = night(rng, rng.integers(30, 51, FAMILY), np.zeros(FAMILY))
        assert_agree(adjusted, intervals)
        any_rejected += bool(np.any(adjusted < ALPHA))
        all_covered += all(covers(b, 0.0) for b in intervals)
    return any_rejected / nights, all_covered / nights


def test_holm_holds_the_familywise_error_and_the_adjusted_intervals_cover_together():
    error_rate, coverage = family_under_null(seed=20261203)
    assert error_rate <= ALPHA + Z * standard_error(ALPHA), error_rate
    assert coverage >= 1.0 - ALPHA - Z * standard_error(ALPHA), coverage
    # Nights with real changes of assorted sizes put p-values at every Holm step and near its
    # thresholds: the p-value and the interval still agree exactly.
    rng = np.random.default_rng(20261204)
    rejections = 0
    for _ in range(500):
        shifts = rng.choice([0.0, 0.02, 0.04, 0.08], FAMILY) * rng.choice([-1.0, 1.0], FAMILY)
        _, adjusted, intervals = night(rng, rng.integers(30, 51, FAMILY), shifts)
        assert_agree(adjusted, intervals)
        rejections += int(np.sum(adjusted < ALPHA))
    assert 500 <= rejections <= 2500, rejections  # both outcomes are exercised


def verdict_error(seed: int, nights: int = SIMULATIONS) -> tuple[float, float]:
    """(share of nights with a regressed or improved verdict, share of verdicts) over nights
    of six unchanged tests of 8 to 60 queries (those of 9 or fewer counted exactly), with no
    minimum effect: only the test decides."""
    rng = np.random.default_rng(seed)
    flagged_nights = flagged = exact = 0
    for _ in range(nights):
        sizes = rng.integers(8, 61, FAMILY)
        exact += int(np.sum(2.0**sizes <= RESAMPLES))
        data, adjusted, intervals = night(rng, sizes, np.zeros(FAMILY))
        verdicts = [verdict(float(d.mean()), float(p), b, alpha=ALPHA, min_effect=0.0)
                    for d, p, b in zip(data, adjusted, intervals)]
        changed = sum(v in (REGRESSED, IMPROVED) for v in verdicts)
        flagged_nights += changed > 0
        flagged += changed
    assert exact > 0
    return flagged_nights / nights, flagged / (nights * FAMILY)


def test_the_verdicts_call_a_change_on_unchanged_nights_at_most_at_alpha():
    night_rate, _ = verdict_error(seed=20261205)
    assert night_rate <= ALPHA + Z * standard_error(ALPHA), night_rate


# --- 5. the detectable effect against the simulated power -------------------------------------


def simulated_power(effect: float, sd: float, n: int, scale: int, seed: int) -> float:
    """Share of normal data sets (mean ``effect``) the sign-flip test rejects at alpha/scale."""
    rng = np.random.default_rng(seed)
    found = 0
    for _ in range(SIMULATIONS):
        d = rng.normal(effect, sd, n)
        found += sign_flip_p_value(d, draw_signs(rng, RESAMPLES, n) @ d) * scale < ALPHA
    return found / SIMULATIONS


@pytest.mark.parametrize("scale", [1, 3])
def test_the_sign_flip_test_finds_the_detectable_effect_with_its_power(scale):
    n, sd, power = 40, 0.15, 0.8
    # A sample with mean 0 and sum of squares (n - 1) sd^2 has standard deviation sd exactly.
    effect = detectable_effect(n, (n - 1) * sd**2, 0.0, alpha=ALPHA, power=power, scale=scale)
    # The formula against the t-test's exact power there (noncentral t): close at n = 40.
    critical = t.ppf(1.0 - ALPHA / (2 * scale), n - 1)
    shift = effect * math.sqrt(n) / sd
    exact = nct.sf(critical, n - 1, shift) + nct.cdf(-critical, n - 1, shift)
    assert abs(exact - power) < 0.01, exact
    rate = simulated_power(effect, sd, n, scale, seed=20261206 + scale)
    # Monte-Carlo error, plus 0.015 for the formula's approximation and the sign-flip test's
    # loss to finite resamples (its level is 49/1000 or 16/1000, not 50/1000 or 16.7/1000).
    allowed = Z * standard_error(power) + 0.015
    assert abs(rate - power) <= allowed, (rate, effect, allowed)


# --- 6. the interval is the set of shifts the test does not reject -----------------------------


def test_the_interval_is_the_set_of_shifts_the_test_accepts():
    rng = np.random.default_rng(20261207)
    resamples, exempt = 200, 1e-9
    kinds = {"exact": 0, "resampled": 0, "bounded": 0, "unbounded": 0}
    for _ in range(50):
        n = int(rng.integers(3, 13))
        d = rng.uniform(-0.5, 0.5, n) + rng.uniform(-0.2, 0.2)
        if rng.random() < 0.5:
            d = np.round(d, 1)  # ties, and zeros
        scale = int(rng.choice([1, 2, 3, 6]))
        signs = draw_signs(rng, resamples, n)
        signed_sums, sign_sums = signs @ d, signs.sum(axis=1)
        low, high = sign_flip_interval(d, signed_sums, sign_sums, n=n, mean=float(d.mean()),
                                       largest=float(np.abs(d).max()), alpha=ALPHA,
                                       scale=scale)
        kinds["exact" if 2**n <= resamples else "resampled"] += 1
        kinds["unbounded" if low is None else "bounded"] += 1
        if low is None:
            grid = np.linspace(-2.0, 2.0, 401)
        else:
            span = max(high - low, 0.05)
            grid = np.concatenate([np.linspace(low - span, high + span, 801),
                                   [low - 1e-6, low + 1e-6, high - 1e-6, high + 1e-6]])
        grid = np.concatenate([grid, [-50.0, -5.0, 5.0, 50.0]])
        for delta in grid:
            if low is not None and min(abs(delta - low), abs(delta - high)) <= exempt:
                continue
            p = sign_flip_p_value(d - delta, signed_sums - delta * sign_sums)
            accepted = p * scale >= ALPHA
            inside = low is None or low <= delta <= high
            assert accepted == inside, (d, scale, low, high, delta, p)
    assert all(kinds.values()), kinds
