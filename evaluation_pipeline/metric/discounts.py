"""The discounts of DCG by place, as the kernels read them: a place's weight, and the running
sums of the weights that a tie group spanning places i..j takes (contract section 3, rule 6)."""

from __future__ import annotations

import numpy as np

from evaluation_pipeline.measures.parse import MeasureError


def log2_prefix(reach: int) -> np.ndarray:
    """prefix[p] = sum of 1/log2(i + 1) for i = 1..p, p = 0..reach: the NDCG kernel's."""
    return np.r_[0.0, np.cumsum(1.0 / np.log2(np.arange(1, reach + 1) + 1.0))]


def discount_table(discount: str | float, reach: int) -> np.ndarray:
    """DCG's weight of places 1..reach: ``"log2"`` (1/log2(p + 1), the NDCG kernel's),
    a logarithm base b > 1 (1/log_b(p + 1), scikit-learn's ``log_base``) or ``"1/rank"``
    (TF-Ranking's ``rank_discount_fn``)."""
    places = np.arange(1, reach + 1, dtype=np.float64)
    if discount == "log2":
        return 1.0 / np.log2(places + 1.0)
    if discount == "1/rank":
        return 1.0 / places
    if isinstance(discount, (int, float)) and not isinstance(discount, bool) and discount > 1:
        return 1.0 / (np.log(places + 1.0) / np.log(float(discount)))
    raise MeasureError(f"discount {discount!r}: expected log2, 1/rank or a logarithm base > 1")
