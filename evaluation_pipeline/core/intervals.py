"""Bootstrap intervals of every (ranker, cutoff, slice) mean and of paired differences.

Both read the per-query rows into a table of queries (one row per query id, sorted, one
column per number to resample; the rows of one result at a time, and only the distinct columns
are kept) and make one pass of :func:`resampling.resampled_sums` over it for all results at
once: a result's resampled mean is its weighted sum over its summed weights,
with each query's Poisson count as the weight, and a slice's sums are the sums of the cells of
the queries in it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import polars as pl

from evaluation_pipeline.core.statistics import (
    percentile_interval,
    ratio_samples,
    sign_flip_p_value,
)
from schemas.columns import INTERVAL_COLUMNS

ALL = "all"
NO_VALUE = "(none)"
# Cells (combinations of slice values) summed in one pass; beyond this each slice column is a
# pass of its own, its values taken this many at a time, so memory stays bounded (the sums of a
# pass are resamples x cells x numbers).
MAX_CELLS = 64


def query_index(ids: pl.Series) -> pl.DataFrame:
    """Sorted unique query ids with their row ``q``: the sums then do not depend on row order."""
    return ids.unique().sort().to_frame("query_id").with_row_index("q")


def bootstrap_intervals(
    per_query: pl.DataFrame,
    queries: pl.DataFrame | None,
    slices: Sequence[str],
    *,
    ci_level: float,
    n_bootstrap: int,
    seed: int,
    progress: Callable[[int, int], None] | None = None,
) -> pl.DataFrame:
    """(ranker, cutoff, slice_column, slice_value, *INTERVAL_COLUMNS) for every group of
    :func:`aggregates.aggregate` that has a query with a number.

    Groups with fewer than two queries with a number get no interval (null): one value says
    nothing about its spread.
    """
    numbered = per_query.lazy().filter(pl.col("ndcg").is_not_null())
    index = query_index(numbered.select("query_id").collect()["query_id"])
    results = numbered.select("ranker", "cutoff").unique().sort("ranker", "cutoff").collect()
    n, n_results = index.height, results.height
    weighted = queries is not None
    if weighted:
        weight = index.join(queries.select("query_id", "weight"), on="query_id", how="left")
        w = weight.sort("q")["weight"].fill_null(0.0).to_numpy()

    def columns():  # per result: value, has [, weight * value, weight * has], over queries
        for ranker, cutoff in results.iter_rows():
            # One result's rows at a time: the rows of all results at once, with their query
            # rows attached, were most of the report's memory at a million queries.
            mine = numbered.filter((pl.col("ranker") == ranker) & (pl.col("cutoff") == cutoff)
                                   ).select("query_id", "ndcg").collect().join(index, on="query_id")
            q = mine["q"].to_numpy()
            value, has = np.zeros(n), np.zeros(n)
            value[q], has[q] = mine["ndcg"].to_numpy(), 1.0
            yield from [value, has, w * value, w * has] if weighted else [value, has]

    distinct, source = distinct_columns(columns())
    stride = 4 if weighted else 2
    has = np.stack([distinct[i] for i in source[1::stride]], axis=1)  # query x result
    counted = np.stack(distinct, axis=1)  # query x distinct number
    del distinct
    levels = _slice_levels(index, queries, slices)
    from evaluation_pipeline.core.resampling import query_keys  # numba: on first use only

    keys = query_keys(index["query_id"], seed)
    groups = []  # (slice_column, slice_value, per-result sums [resamples, result, number])
    for label, value_names, sums in _sums_by_group(keys, levels, counted, n_bootstrap, progress):
        for name, group_sums in zip(value_names, sums, strict=True):
            groups.append((label, name, group_sums[:, source].reshape(n_bootstrap, n_results, -1)))
    with_number = _counts_by_group(levels, has)
    out = []
    for (label, name, sums), counts in zip(groups, with_number, strict=True):
        for r, (ranker, cutoff) in enumerate(results.select("ranker", "cutoff").iter_rows()):
            if counts[r] == 0:
                continue  # the group has no row with a number: aggregate() has no interval
            row = {"ranker": ranker, "cutoff": cutoff, "slice_column": label,
                   "slice_value": name, **dict.fromkeys(INTERVAL_COLUMNS)}
            if counts[r] >= 2:
                row["macro_ndcg_low"], row["macro_ndcg_high"] = percentile_interval(
                    ratio_samples(sums[:, r, 0], sums[:, r, 1]), ci_level)
                if weighted:
                    row["weighted_ndcg_low"], row["weighted_ndcg_high"] = percentile_interval(
                        ratio_samples(sums[:, r, 2], sums[:, r, 3]), ci_level)
            out.append(row)
    schema = {
        "ranker": pl.String, "cutoff": pl.Int64, "slice_column": pl.String,
        "slice_value": pl.String, **dict.fromkeys(INTERVAL_COLUMNS, pl.Float64),
    }
    return pl.DataFrame(out, schema=schema)


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


def _slice_levels(index: pl.DataFrame, queries: pl.DataFrame | None, slices: Sequence[str]
                  ) -> list[tuple[str, list[str], np.ndarray]]:
    """(slice_column, its values sorted, each query's value as a code): ``all`` first."""
    levels = [(ALL, [ALL], np.zeros(index.height, dtype=np.int64))]
    if not slices:
        return levels
    columns = ["query_id", *dict.fromkeys(slices)]
    table = index.join(queries.select(columns), on="query_id", how="left").sort("q")
    for column in slices:
        values = table[column].cast(pl.String).fill_null(NO_VALUE)
        names = values.unique().sort()
        codes = values.to_frame("v").join(
            names.to_frame("v").with_row_index("code"), on="v", how="left", maintain_order="left"
        )["code"].to_numpy().astype(np.int64)
        levels.append((column, names.to_list(), codes))
    return levels


def _sums_by_group(keys, levels, counted, n_resamples, progress):
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


def _counts_by_group(levels, has: np.ndarray) -> list[np.ndarray]:
    """Queries with a number per result, for every (level, value) in the order of the sums."""
    out = []
    for _, names, codes in levels:
        per_value = [np.bincount(codes, weights=column, minlength=len(names))
                     for column in has.T]
        out.extend(np.stack(per_value, axis=1))
    return out


def paired_intervals(
    pairs: Sequence[pl.DataFrame], *, ci_level: float, n_bootstrap: int, seed: int
) -> list[dict]:
    """Bootstrap interval and sign-flip p-value of the mean ``difference`` of each paired frame
    (query_id, difference), all from one pass with the same draws per query."""
    present = [frame for frame in pairs if frame.height]
    out = [{"difference_low": None, "difference_high": None, "p_value": 1.0} for _ in pairs]
    if not present:
        return out
    index = query_index(pl.concat([frame["query_id"] for frame in present]))
    n = index.height
    columns = []  # per pair: difference, paired (1), over queries
    for frame in pairs:
        difference, paired = np.zeros(n), np.zeros(n)
        if frame.height:
            q = frame.select("query_id").join(index, on="query_id", maintain_order="left")["q"]
            difference[q], paired[q] = frame["difference"].to_numpy(), 1.0
        columns += [difference, paired]
    distinct, source = distinct_columns(columns)
    from evaluation_pipeline.core.resampling import query_keys  # numba: on first use only

    keys = query_keys(index["query_id"], seed)
    sums, signed_sums = _resampled_sums(keys, n_bootstrap, counted=np.stack(distinct, axis=1),
                                       signed=np.stack(columns[::2], axis=1))
    sums = sums[:, :, source]
    for p, frame in enumerate(pairs):
        if frame.height == 0:
            continue
        if frame.height >= 2:
            out[p]["difference_low"], out[p]["difference_high"] = percentile_interval(
                ratio_samples(sums[:, 0, 2 * p], sums[:, 0, 2 * p + 1]), ci_level)
        out[p]["p_value"] = sign_flip_p_value(frame["difference"].to_numpy(), signed_sums[:, p])
    return out


def _resampled_sums(*args, **kwargs):
    """:func:`core.resampling.resampled_sums`, imported on first use: scoring and ``ndcg-eval
    spec`` reach this module through ``core.aggregates`` and must not pay numba's import."""
    from evaluation_pipeline.core.resampling import resampled_sums

    return resampled_sums(*args, **kwargs)
