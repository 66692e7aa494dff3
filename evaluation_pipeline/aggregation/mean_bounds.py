"""The report's sums of the bounds over the holes (docs/CONTRACT.md, sections 4 and 5): which
rows a mean's bounds are taken over, and the range of each compared pair's mean difference.
Pure functions of one chunk's rows (``aggregation.partials``)."""

from __future__ import annotations

import numpy as np
import polars as pl


def row_bounds(rows: pl.DataFrame, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(least, greatest) of each row in ``order``, NaN unless the row has a number under
    every grading of its holes: a mean's bounds are taken over those rows alone."""
    every = rows["every_grading_scored"].fill_null(False).to_numpy()[order]
    low = rows["value_min"].cast(pl.Float64).to_numpy(allow_copy=True)[order]
    high = rows["value_max"].cast(pl.Float64).to_numpy(allow_copy=True)[order]
    bounded = every & np.isfinite(low) & np.isfinite(high)
    return np.where(bounded, low, np.nan), np.where(bounded, high, np.nan)


def add_pair_bounds(pair_bounds: np.ndarray, r: np.ndarray, q: np.ndarray,
                    bounds: tuple[np.ndarray, np.ndarray], pairs, n: int) -> None:
    """Per pair (first, second), over the queries bounded on both sides: the count and the
    sums of [least of second - greatest of first] and [greatest of second - least of first].
    Each query's difference lies in its term's range under any grading of both sides' holes,
    a document keeping one grade or not, so the mean difference lies in the sums' range."""
    low, high = bounds
    for p, (first, second) in enumerate(pairs):
        side = []
        for result in (first, second):
            mine = (r == result) & np.isfinite(low)
            lo, hi = np.full(n, np.nan), np.full(n, np.nan)
            lo[q[mine]], hi[q[mine]] = low[mine], high[mine]
            side.append((lo, hi))
        (a_lo, a_hi), (b_lo, b_hi) = side
        both = np.isfinite(a_lo) & np.isfinite(b_lo)
        pair_bounds[p] += [both.sum(), (b_lo[both] - a_hi[both]).sum(),
                           (b_hi[both] - a_lo[both]).sum()]
