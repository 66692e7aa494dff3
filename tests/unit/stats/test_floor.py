"""A p at the sign-flip test's floor, 1 / (1 + resamples), is shown as the bound it is."""

import numpy as np
import pytest

from evaluation_pipeline.report.format import floor_notes, p_shown
from evaluation_pipeline.stats.inference import at_floor, below_floor, holm, sign_flip_p_value

RNG = np.random.default_rng(5)


def signed_sums(differences: np.ndarray, resamples: int) -> np.ndarray:
    signs = RNG.choice([-1.0, 1.0], size=(resamples, differences.size))
    return signs @ differences


def test_a_difference_beyond_every_resample_is_at_the_floor():
    d = RNG.uniform(0.05, 0.1, 40)  # every query better: no flip is as extreme
    p = sign_flip_p_value(d, signed_sums(d, 2000))
    entry = {"p_value": p, "test_resamples": 2000, "p_value_holm": float(holm(
        np.array([p, 0.2, 0.3, 0.4, 0.5, 0.6]))[0])}
    assert p == 1 / 2001 and at_floor(entry)
    assert p_shown(entry) == "< 0.0005"
    assert p_shown(entry, "p_value_holm") == "< 0.0030"  # 6 / 2001, rounded up
    assert floor_notes([entry]) == [
        "p < ...: beyond all 2,000 sign-flip resamples (the test's floor, 1/2,001); more "
        "resamples (--bootstrap) would give it a value"]


def test_an_exact_count_and_an_ordinary_p_are_not_at_the_floor():
    d = RNG.uniform(0.05, 0.1, 5)  # 2^5 patterns <= resamples: counted exactly, least p 2/32
    p = sign_flip_p_value(d, signed_sums(d, 2000))
    assert p == 2 / 32 and not at_floor({"p_value": p, "test_resamples": 2000})
    mixed = RNG.normal(0.0, 1.0, 60)
    p = sign_flip_p_value(mixed, signed_sums(mixed, 2000))
    entry = {"p_value": p, "test_resamples": 2000, "p_value_holm": min(1.0, 3 * p)}
    assert p > 1 / 2001 and not at_floor(entry) and floor_notes([entry]) == []
    assert p_shown(entry) == f"{p:.4f}"
    # A comparison recorded before the resamples were: shown as its number.
    assert p_shown({"p_value": 1 / 2001}) == "0.0005"


@pytest.mark.parametrize("p, shown", [(1 / 2001, "< 0.0005"), (6 / 2001, "< 0.0030"),
                                      (0.003, "< 0.0030"), (1 / 301, "< 0.0034")])
def test_the_bound_is_the_value_rounded_up(p, shown):
    assert below_floor(p) == shown
