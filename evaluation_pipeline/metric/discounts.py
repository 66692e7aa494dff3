"""The discounts of DCG by place, as the kernels read them (contract section 3, rule 3, and the
spec's ``discount``): a place's weight is one over its denominator, and a tie group spanning
places i..j takes the running sums of the weights (rule 6).

``log2`` (the default) is 1/log2(p + 1); a number b > 1 is 1/log_b(p + 1) (scikit-learn's
``log_base``); ``1/rank`` is 1/p (TF-Ranking's ``rank_discount_fn``). The NDCG kernel computes
log2's denominators itself, as it always has (so the default's numbers keep their bits), and
reads the other discounts' from :func:`denominators`.
"""

from __future__ import annotations

import numpy as np

from evaluation_pipeline.measures.parse import MeasureError

LOG2 = "log2"
RANK = "1/rank"


def log2_prefix(reach: int) -> np.ndarray:
    """prefix[p] = sum of 1/log2(i + 1) for i = 1..p, p = 0..reach: the NDCG kernel's."""
    return np.r_[0.0, np.cumsum(1.0 / np.log2(np.arange(1, reach + 1) + 1.0))]


def denominators(discount: str | float, reach: int) -> np.ndarray:
    """denominator[p - 1] of places p = 1..reach: log2(p + 1), log_b(p + 1) or p."""
    places = np.arange(1, reach + 1, dtype=np.float64)
    if discount == LOG2:
        return np.log2(places + 1.0)
    if discount == RANK:
        return places
    if isinstance(discount, (int, float)) and not isinstance(discount, bool) and discount > 1:
        return np.log(places + 1.0) / np.log(float(discount))
    raise MeasureError(f"discount {discount!r}: expected log2, 1/rank or a logarithm base > 1")


def discount_table(discount: str | float, reach: int) -> np.ndarray:
    """DCG's weight of places 1..reach under ``discount``."""
    return 1.0 / denominators(discount, reach)


def kernel_denominators(discount: str | float, reach: int) -> np.ndarray:
    """What the NDCG kernel reads as its denominators: empty for log2 (it computes them), the
    table otherwise."""
    return np.empty(0) if discount == LOG2 else denominators(discount, reach)


def prefix(discount: str | float, reach: int) -> np.ndarray:
    """prefix[p] = the sum of the weights of places 1..p, p = 0..reach."""
    if discount == LOG2:
        return log2_prefix(reach)
    return np.r_[0.0, np.cumsum(discount_table(discount, reach))]
