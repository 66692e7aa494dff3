"""Resampled sums of every group of queries: the pass behind the bootstrap intervals.

A result's resampled mean is its weighted sum over its summed weights, with each query's
Poisson count as the weight (``stats.resampling``). ``sums_by_group`` makes one pass over a
table of queries (one row per query id, one column per number to resample) for every slice
group at once: a slice's sums are the sums of the cells of the queries in it. The report's
numbers call it once per chunk of queries (``aggregation.partials``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from schemas.columns import INTERVAL_COLUMNS

__all__ = ["ALL", "INTERVAL_COLUMNS", "MAX_CELLS", "NO_VALUE", "distinct_columns",
           "sums_by_group"]

ALL = "all"
NO_VALUE = "(none)"
# Cells (combinations of slice values) summed in one pass; beyond this each slice column is a
# pass of its own, its values taken this many at a time, so memory stays bounded (the sums of a
# pass are resamples x cells x numbers).
MAX_CELLS = 64


def distinct_columns(columns: Iterable[np.ndarray]) -> tuple[list[np.ndarray], np.ndarray]:
    """(the distinct columns, for each column the index of the distinct one equal to it).

    Identical columns have identical sums, so each is summed once: the queries with a number
    are usually the same for every cutoff, and for every ranker of a reranked pool. Only the
    distinct ones are kept while ``columns`` is consumed."""
    distinct: list[np.ndarray] = []
    source = []
    for column in columns:
        same = next((i for i, d in enumerate(distinct) if np.array_equal(d, column)), None)
        if same is None:
            same = len(distinct)
            distinct.append(column)
        source.append(same)
    return distinct, np.array(source, dtype=np.int64)


def sums_by_group(keys, levels, counted, n_resamples, progress):
    """(slice_column, value names, sums [value][resamples, numbers]) for every level.

    When all combinations of slice values are few, one pass sums each combination (cell) and
    every group is a sum of cells; otherwise each level takes passes of its own."""
    n_cells = math.prod(len(names) for _, names, _ in levels)
    if n_cells <= MAX_CELLS:
        cells = np.zeros(keys.size, dtype=np.int64)
        for _, names, codes in levels:
            cells = cells * len(names) + codes
        sums, _ = _resampled_sums(keys, n_resamples, cells=cells, n_cells=n_cells,
                                 counted=counted, progress=progress)
        shape = [len(names) for _, names, _ in levels]
        by_cell = sums.reshape(n_resamples, *shape, -1)
        for axis, (label, names, _) in enumerate(levels):
            other = tuple(a + 1 for a in range(len(levels)) if a != axis)
            per_value = by_cell.sum(axis=other)  # resamples x values x numbers
            yield label, names, [per_value[:, v] for v in range(len(names))]
        return
    passes = [(label, names, codes, start) for label, names, codes in levels
              for start in range(0, len(names), MAX_CELLS)]
    for done, (label, names, codes, start) in enumerate(passes):
        width = min(MAX_CELLS, len(names) - start)
        chosen = (codes >= start) & (codes < start + width)
        step = None if progress is None else (
            lambda i, total, done=done: progress(done * total + i, len(passes) * total))
        sums, _ = _resampled_sums(keys[chosen], n_resamples, cells=codes[chosen] - start,
                                 n_cells=width, counted=counted[chosen], progress=step)
        yield label, names[start:start + width], [sums[:, v] for v in range(width)]


def _resampled_sums(*args, **kwargs):
    """:func:`stats.resampling.resampled_sums`, imported on first use: scoring and ``ndcg-eval
    spec`` reach this module through ``aggregation.aggregate_table`` and must not pay numba's
    import."""
    from evaluation_pipeline.stats.resampling import resampled_sums

    return resampled_sums(*args, **kwargs)
