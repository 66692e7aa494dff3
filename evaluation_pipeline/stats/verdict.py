"""A comparison's verdict from its adjusted p, its adjusted interval and the least change that
counts (contract section 8): one rule for the nightly watch and ``ndcg-eval compare``."""

from __future__ import annotations

from evaluation_pipeline import settings
from schemas.columns import IMPROVED, INCONCLUSIVE, NO_CHANGE, REGRESSED, TIE_TOLERANCE

DEFAULT_ALPHA = settings.ALPHA.value_default
DEFAULT_MIN_EFFECT = settings.MIN_EFFECT.value_default


def verdict(mean_difference: float | None, p_value_holm: float | None,
            interval: tuple[float | None, float | None] = (None, None), *,
            alpha: float = DEFAULT_ALPHA, min_effect: float = DEFAULT_MIN_EFFECT) -> str:
    """``regressed`` when the adjusted p is below ``alpha`` (so the adjusted ``interval``
    excludes 0) and the drop is at least ``min_effect``; ``improved`` for the mirror case;
    ``no_change`` when the adjusted interval lies within +-``min_effect`` (any change there
    is smaller than the least that counts); ``inconclusive`` otherwise: the night could not
    tell a change of ``min_effect`` from none.

    "At least" and "within" forgive float rounding (TIE_TOLERANCE): 0.51 - 0.50 is a drop of
    0.01.
    """
    if mean_difference is not None and p_value_holm is not None and p_value_holm < alpha:
        if mean_difference <= -min_effect + TIE_TOLERANCE:
            return REGRESSED
        if mean_difference >= min_effect - TIE_TOLERANCE:
            return IMPROVED
    low, high = interval
    if (low is not None and high is not None and low >= -min_effect - TIE_TOLERANCE
            and high <= min_effect + TIE_TOLERANCE):
        return NO_CHANGE
    return INCONCLUSIVE
