"""A report's numbers as sums over chunks of queries, so that any executor can take a chunk.

Every number of a report is a sum, a count, a maximum or a top-N over queries: the means and
status counts of each (ranker, cutoff, slice), the resampled sums behind the bootstrap
intervals and the randomization tests (``stats.resampling``: each query's draws depend on its
id alone), and per compared pair the paired sums, wins and losses, the largest difference, the
most regressed queries, the queries that moved most either way and a fine histogram of the
differences; per pair of nights also the paired sums of every slice value, resampled, which
break a night's change down by slice.

The queries are cut into chunks by a hash of their id (``chunk_ids``: the same cut on any
machine, whatever the row order or the partitioning of the files), a chunk's rows give its
partial (``chunk_partial``), and partials are added in chunk order (``combine``). The local
path and the Spark path (``engines.spark.report``) compute the same partials from the same rows
in the same order, so their reports are the same to the bit.

Rows are those of ``ROW_COLUMNS``; ``night`` is 0 for the evaluation reported and 1 for the
previous night's (the nightly watch's pairs). Pure functions: no files, no engine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from evaluation_pipeline.aggregation.mean_bounds import add_pair_bounds, row_bounds
from evaluation_pipeline.stats.intervals import ALL, NO_VALUE, distinct_columns
from schemas.columns import ROW_DTYPES as _FILE_ROW_DTYPES
from schemas.columns import STATUSES, TIE_TOLERANCE, ndcg_name

# The rows a partial reads: the report's per-query columns after ``night`` (which of the two
# nights a row is of), added by the reader.
ROW_DTYPES = {"night": pl.Int8, **_FILE_ROW_DTYPES}
ROW_COLUMNS = tuple(ROW_DTYPES)
TONIGHT, PREVIOUS = 0, 1
# Queries per chunk: a chunk's partial is computed in one piece (its rows in memory), and the
# partials of a run sit on one machine (the resampled sums: resamples x groups x results).
CHUNK_QUERIES = 1 << 18
# The chunk hash's own seed: the cut of queries into chunks is not tied to the report's seed.
CHUNK_SEED = 0x6E646367
# The fine histogram of paired differences: its bins over [-1, 1], summed into the chart's.
FINE_BINS = 2000
# Up to this many paired queries, the sign-flip test counts every sign pattern (exact).
EXACT_TEST_QUERIES = 30

# Per (result, group): the sums and counts the aggregates are made of.
_N_QUERIES, _N_NUMBER, _SUM_NDCG, _SUM_JUDGED, _N_JUDGED, _SUM_RECALL, _N_RECALL = range(7)
_SUM_WEIGHTED, _SUM_WEIGHT = 7, 8
# The bounds over the holes: rows with a number under every grading, and their bounds' sums.
_N_BOUNDED, _SUM_MIN, _SUM_MAX = 9, 10, 11
_STATUS0 = 12
_NUMBERS = _STATUS0 + len(STATUSES)


def measure_order(cutoff: int | None, measure: str) -> tuple:
    """Where a measure sorts among a ranker's: the spec's own nDCG@K first, by cutoff (the
    order reports had before the other measures), then the others by cutoff and name."""
    return (measure != ndcg_name(cutoff) if cutoff is not None else True,
            -1 if cutoff is None else cutoff, measure)


@dataclass(frozen=True)
class Result:
    """One (night, ranker, measure): the measure by its canonical name (``nDCG@10``,
    ``RR(rel=2)@10``, ``Rprec``), its cutoff apart (None for a measure without one).

    Ordered as ``sums.results_of`` lists them: per night and ranker, the spec's own nDCG@K
    first by cutoff (the order reports had before the other measures), then the others by
    cutoff and name."""
    night: int
    ranker: str
    cutoff: int | None
    measure: str

    @classmethod
    def ndcg(cls, night: int, ranker: str, cutoff: int) -> Result:
        """The spec's own nDCG@K of a ranker."""
        return cls(night, ranker, cutoff, ndcg_name(cutoff))

    @property
    def is_spec_ndcg(self) -> bool:
        return self.cutoff is not None and self.measure == ndcg_name(self.cutoff)

    def sort_key(self) -> tuple:
        return (self.night, self.ranker, *measure_order(self.cutoff, self.measure))

    def __lt__(self, other: Result) -> bool:
        return self.sort_key() < other.sort_key()


@dataclass(frozen=True)
class Plan:
    """What the partials sum: fixed before the first chunk, the same on every executor.

    ``results``: every result summed (tonight's first, then the previous night's); the
    resampled sums (intervals) are taken for tonight's alone. ``levels``: (slice column,
    its values) with ``all`` first, the values from the whole queries table and ``(none)``,
    so that no chunk sees a value the plan lacks. ``pairs``: (first, second) results compared,
    as indexes into ``results``."""
    results: tuple[Result, ...]
    levels: tuple[tuple[str, tuple[str, ...]], ...]
    weighted: bool
    pairs: tuple[tuple[int, int], ...]
    n_bootstrap: int
    seed: int
    n_regressions: int
    n_chunks: int

    @property
    def tonight(self) -> list[int]:
        return [i for i, r in enumerate(self.results) if r.night == TONIGHT]

    @property
    def n_groups(self) -> int:
        return sum(len(names) for _, names in self.levels)

    @property
    def offsets(self) -> np.ndarray:
        """Each level's first group: a query's group in level l is offsets[l] + its code."""
        return np.cumsum([0, *(len(names) for _, names in self.levels)])

    @property
    def night_pairs(self) -> list[int]:
        """The pairs that compare the previous night's result with tonight's."""
        return [p for p, (first, second) in enumerate(self.pairs)
                if self.results[first].night == PREVIOUS and self.results[second].night == TONIGHT]


def chunk_count(n_queries: int) -> int:
    return max(1, math.ceil(n_queries / CHUNK_QUERIES))


def chunk_ids(query_ids: pl.Series, n_chunks: int) -> np.ndarray:
    """The chunk of each query id (int64), a function of the id and ``n_chunks`` alone."""
    if n_chunks == 1:
        return np.zeros(len(query_ids), dtype=np.int64)
    # numba, imported only here: ndcg-eval score's summary (one chunk, no resamples) must not
    # pay its import (some 0.5 s).
    from evaluation_pipeline.stats.resampling import query_keys

    return (query_keys(query_ids, CHUNK_SEED) % np.uint64(n_chunks)).astype(np.int64)


def slice_levels(queries: pl.DataFrame | None, slices: tuple[str, ...]
                 ) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``all``, then each slice column with every value of the queries table, and ``(none)``
    for a null or a query without a row, sorted."""
    levels = [(ALL, (ALL,))]
    for column in slices:
        values = queries[column].cast(pl.String).fill_null(NO_VALUE).unique().to_list()
        levels.append((column, tuple(sorted(set(values) | {NO_VALUE}))))
    return tuple(levels)


@dataclass
class Partial:
    """The sums of one chunk, or of several added in chunk order."""
    numbers: np.ndarray            # [results, groups, _NUMBERS]
    resampled: np.ndarray          # [groups, resamples, tonight's results, 2 or 4]
    pairs: np.ndarray              # [pairs, 9]: n, sum first, sum second, sum difference,
    #                                wins, losses, ties, largest |difference|, sum of squared
    #                                differences
    pair_bounds: np.ndarray        # [pairs, 3]: aggregation.mean_bounds.add_pair_bounds' sums
    counted: np.ndarray            # [pairs, resamples, 2]: resampled difference and paired
    signed: np.ndarray             # [pairs, resamples]: sign-flipped difference sums
    signs: np.ndarray              # [pairs, resamples]: sums of the signs of paired queries
    histogram: np.ndarray          # [pairs, FINE_BINS] int64
    regressions: list[list[tuple]]  # per pair: (difference, query_id, first, second), sorted
    movers: list[list[tuple]]      # per pair: (-|difference|, query_id, difference, first,
    #                                second), sorted: the largest changes either way
    pair_groups: np.ndarray        # [pairs, groups, 2]: paired queries, sum of differences
    night_groups: np.ndarray       # [night pairs, groups, resamples, 2]: the same, resampled
    small: list[list[tuple] | None]  # per pair: (query_id, difference) while few, else None
    differing: int = 0             # queries whose rankers tonight rank different sets
    differing_first: list[str] = field(default_factory=list)  # the first five of them


def empty(plan: Plan) -> Partial:
    groups, tonight, n_pairs = plan.n_groups, len(plan.tonight), len(plan.pairs)
    return Partial(
        numbers=np.zeros((len(plan.results), groups, _NUMBERS)),
        resampled=np.zeros((groups, plan.n_bootstrap, tonight, 4 if plan.weighted else 2)),
        pairs=np.zeros((n_pairs, 9)),
        pair_bounds=np.zeros((n_pairs, 3)),
        counted=np.zeros((n_pairs, plan.n_bootstrap, 2)),
        signed=np.zeros((n_pairs, plan.n_bootstrap)),
        signs=np.zeros((n_pairs, plan.n_bootstrap)),
        histogram=np.zeros((n_pairs, FINE_BINS), dtype=np.int64),
        regressions=[[] for _ in range(n_pairs)],
        movers=[[] for _ in range(n_pairs)],
        pair_groups=np.zeros((n_pairs, groups, 2)),
        night_groups=np.zeros((len(plan.night_pairs), groups, plan.n_bootstrap, 2)),
        small=[[] for _ in range(n_pairs)],
    )


def combine(total: Partial, part: Partial, plan: Plan) -> Partial:
    """``total`` plus ``part`` (the next chunk's): call in chunk order."""
    total.numbers += part.numbers
    total.resampled += part.resampled
    total.pairs[:, :7] += part.pairs[:, :7]
    total.pairs[:, 7] = np.maximum(total.pairs[:, 7], part.pairs[:, 7])
    total.pairs[:, 8] += part.pairs[:, 8]
    total.pair_bounds += part.pair_bounds
    total.counted += part.counted
    total.pair_groups += part.pair_groups
    total.night_groups += part.night_groups
    total.signed += part.signed
    total.signs += part.signs
    total.histogram += part.histogram
    for p in range(len(plan.pairs)):
        total.regressions[p] = sorted(total.regressions[p] + part.regressions[p])[
            :plan.n_regressions]
        total.movers[p] = sorted(total.movers[p] + part.movers[p])[:plan.n_regressions]
        if total.small[p] is None or part.small[p] is None:
            total.small[p] = None
        else:
            both = total.small[p] + part.small[p]
            total.small[p] = both if len(both) <= EXACT_TEST_QUERIES else None
    total.differing += part.differing
    total.differing_first = sorted(total.differing_first + part.differing_first)[:5]
    return total


def combine_all(parts: list[tuple[int, Partial]], plan: Plan) -> Partial:
    """The partials of every chunk, (chunk, partial) in any order, added in chunk order."""
    total = empty(plan)
    for _, part in sorted(parts, key=lambda item: item[0]):
        total = combine(total, part, plan)
    return total


# --- one chunk ---------------------------------------------------------------------------------


def chunk_partial(rows: pl.DataFrame, queries: pl.DataFrame | None, plan: Plan) -> Partial:
    """The partial of one chunk's rows (``ROW_COLUMNS``; every row of its queries, both
    nights). ``queries``: the queries table (query_id, weight and the slice columns), or only
    its rows of this chunk's queries."""
    out = empty(plan)
    # The measure's canonical name holds its cutoff: (night, ranker, measure) is the key.
    key = ("night", "ranker", "measure")
    results = pl.DataFrame([(r.night, r.ranker, r.measure) for r in plan.results],
                           schema={c: ROW_DTYPES[c] for c in key}, orient="row"
                           ).with_row_index("r")
    rows = rows.select(ROW_COLUMNS)
    r = rows.select(key).join(results, on=list(key), how="left", maintain_order="left")["r"]
    if r.null_count():
        rows, r = rows.filter(r.is_not_null()), r.drop_nulls()
    if rows.height == 0:
        return out
    # One order for the rows, whatever order they came in (by result, then query id): the sums
    # are then the same bits. A permutation of row-long arrays, not a sorted copy of the rows.
    ids = rows["query_id"]
    index = ids.unique().sort().to_frame("query_id").with_row_index("q")
    q = (ids.rank("dense") - 1).to_numpy().astype(np.int64)
    r = r.to_numpy().astype(np.int64)
    order = np.lexsort((q, r))
    q, r = q[order], r[order]
    n = index.height
    weight, codes = _query_attributes(index, queries, plan)
    keys = _query_keys(index, plan)
    values = _floats(rows["value"])[order]
    has = np.isfinite(values)
    value = np.where(has, values, 0.0)
    del values
    bounds = row_bounds(rows, order)
    _add_numbers(out.numbers, rows, order, r, q, value, has, bounds, weight, codes, plan)
    _add_resampled(out, keys, r, q, value, has, weight, codes, plan, n)
    if plan.pairs:
        _add_pairs(out, index, keys, r, q, value, has, codes, plan, n)
        add_pair_bounds(out.pair_bounds, r, q, bounds, plan.pairs, n)
    _add_differing(out, rows, order, q, index)
    return out


def _query_keys(index: pl.DataFrame, plan: Plan) -> np.ndarray | None:
    """The root of every draw of each query (``stats.resampling``), taken once a chunk for the
    intervals and the pairs alike; None without resamples."""
    if plan.n_bootstrap == 0:
        return None
    # numba: imported on first use only
    from evaluation_pipeline.stats.resampling import query_keys

    return query_keys(index["query_id"], plan.seed)


def _floats(column: pl.Series) -> np.ndarray:
    return column.cast(pl.Float64).to_numpy(allow_copy=True)


def _query_attributes(index: pl.DataFrame, queries: pl.DataFrame | None, plan: Plan
                      ) -> tuple[np.ndarray, list[np.ndarray]]:
    """Each query's weight (0 without a row) and its value's code in every level."""
    n = index.height
    codes = [np.zeros(n, dtype=np.int64)]
    if queries is None:
        return np.zeros(n), codes
    # A slice may be the weight itself.
    columns = list(dict.fromkeys(["query_id", "weight", *(c for c, _ in plan.levels[1:])]))
    table = index.join(queries.select(columns), on="query_id", how="left").sort("q")
    weight = table["weight"].fill_null(0.0).to_numpy().astype(np.float64)
    for column, names in plan.levels[1:]:
        lookup = pl.DataFrame({"v": list(names)}).with_row_index("code")
        values = table[column].cast(pl.String).fill_null(NO_VALUE).to_frame("v")
        codes.append(values.join(lookup, on="v", how="left", maintain_order="left")["code"]
                     .fill_null(names.index(NO_VALUE)).to_numpy().astype(np.int64))
    return weight, codes


def _add_numbers(numbers, rows, order, r, q, value, has, bounds, weight, codes, plan) -> None:
    # One column at a time: at a million queries each row-long array is 50 MB.
    judged = _floats(rows["judged_at_k"])[order]
    recall = _floats(rows["candidate_recall"])[order]
    status = rows["status"].cast(pl.Enum(STATUSES)).to_physical().to_numpy()[order].astype(
        np.int64)
    n_results, groups = numbers.shape[0], plan.n_groups

    def columns():
        yield _N_NUMBER, has.astype(np.float64)
        yield _SUM_NDCG, value
        known = np.isfinite(judged)
        yield _SUM_JUDGED, np.where(known, judged, 0.0)
        yield _N_JUDGED, known.astype(np.float64)
        known = np.isfinite(recall)
        yield _SUM_RECALL, np.where(known, recall, 0.0)
        yield _N_RECALL, known.astype(np.float64)
        low, high = bounds
        bounded = np.isfinite(low)
        yield _N_BOUNDED, bounded.astype(np.float64)
        yield _SUM_MIN, np.where(bounded, low, 0.0)
        yield _SUM_MAX, np.where(bounded, high, 0.0)
        if plan.weighted:
            weight_with_number = np.where(has, weight[q], 0.0)
            yield _SUM_WEIGHT, weight_with_number
            yield _SUM_WEIGHTED, value * weight_with_number

    bins = [r * groups + offset + level_codes[q]
            for offset, level_codes in zip(plan.offsets, codes, strict=False)]
    size = n_results * groups
    for k, column in columns():
        for level_bins in bins:
            numbers[:, :, k] += np.bincount(level_bins, weights=column, minlength=size).reshape(
                n_results, groups)
    for level_bins in bins:
        numbers[:, :, _N_QUERIES] += np.bincount(level_bins, minlength=size).reshape(
            n_results, groups)
        by_status = np.bincount(level_bins * len(STATUSES) + status,
                                minlength=size * len(STATUSES))
        numbers[:, :, _STATUS0:_STATUS0 + len(STATUSES)] += by_status.reshape(
            n_results, groups, len(STATUSES))


def _add_resampled(out, keys, r, q, value, has, weight, codes, plan, n) -> None:
    tonight = plan.tonight
    if not tonight or plan.n_bootstrap == 0:
        return
    from evaluation_pipeline.stats.intervals import sums_by_group

    def columns():  # per result: value, has [, weight * value, weight * has], over queries
        for t in tonight:
            mine = (r == t) & has
            v, h = np.zeros(n), np.zeros(n)
            v[q[mine]], h[q[mine]] = value[mine], 1.0
            yield from [v, h, weight * v, weight * h] if plan.weighted else [v, h]

    distinct, source = distinct_columns(columns())
    counted = np.stack(distinct, axis=1)
    levels = [(label, list(names), level_codes)
              for (label, names), level_codes in zip(plan.levels, codes, strict=True)]
    g = 0
    stride = 4 if plan.weighted else 2
    for _, _, sums in sums_by_group(keys, levels, counted, plan.n_bootstrap, None):
        for group_sums in sums:
            out.resampled[g] = group_sums[:, source].reshape(plan.n_bootstrap, len(tonight),
                                                              stride)
            g += 1


def _add_pairs(out, index, keys, r, q, value, has, codes, plan, n) -> None:
    ids = index["query_id"]
    differences, paired = [], []
    # Movers and the change by slice are read for the pairs of nights alone.
    nights = set(plan.night_pairs)
    for p, (first, second) in enumerate(plan.pairs):
        a, b = np.full(n, np.nan), np.full(n, np.nan)
        mine = (r == first) & has
        a[q[mine]] = value[mine]
        mine = (r == second) & has
        b[q[mine]] = value[mine]
        both = np.isfinite(a) & np.isfinite(b)
        d = np.where(both, b - a, 0.0)
        differences.append(d)
        paired.append(both.astype(np.float64))
        chosen = np.flatnonzero(both)  # in query order
        dd, fa, fb = d[chosen], a[chosen], b[chosen]
        out.pairs[p] = [chosen.size, fa.sum(), fb.sum(), dd.sum(),
                        np.sum(dd > TIE_TOLERANCE), np.sum(dd < -TIE_TOLERANCE),
                        np.sum(np.abs(dd) <= TIE_TOLERANCE),
                        float(np.abs(dd).max()) if chosen.size else 0.0, float(dd @ dd)]
        # Rounded first: a difference written with a few decimals falls in the bin it starts
        # (0.1 - 1.0 is -0.9000000000000000222; a floor alone put it in the bin below -0.9).
        fine = np.clip(np.floor(np.round((dd + 1.0) * (FINE_BINS / 2), 9)), 0,
                       FINE_BINS - 1).astype(np.int64)
        out.histogram[p] = np.bincount(fine, minlength=FINE_BINS)
        worst = np.flatnonzero(dd < -TIE_TOLERANCE)
        if worst.size:
            order = np.lexsort((ids.gather(chosen[worst]).to_numpy(), dd[worst]))
            top = worst[order[:plan.n_regressions]]
            names = ids.gather(chosen[top]).to_list()
            out.regressions[p] = [(float(dd[i]), name, float(fa[i]), float(fb[i]))
                                  for i, name in zip(top, names, strict=True)]
        if p in nights:
            _add_movers_and_groups(out, p, ids, chosen, dd, fa, fb, d, paired[-1], codes, plan)
        out.small[p] = (list(zip(ids.gather(chosen).to_list(), dd.tolist(), strict=True))
                        if chosen.size <= EXACT_TEST_QUERIES else None)
    if plan.n_bootstrap == 0:
        return
    from evaluation_pipeline.stats.resampling import resampled_sums

    counted_columns = [c for pair in zip(differences, paired, strict=True) for c in pair]
    distinct, source = distinct_columns(counted_columns)
    # With pairs of nights and slices, the same pass (the same draws) also sums each slice
    # value's cell, for the night's change by slice; cell 0 (all) gets the very additions it
    # gets alone, so the pairs' own sums keep their bits.
    cells = None
    if plan.night_pairs and len(plan.levels) > 1:
            cells = np.stack([offset + level_codes for offset, level_codes
                              in zip(plan.offsets, codes, strict=False)], axis=1)
    # The signs summed over each pair's paired queries invert the test into its interval
    # (stats.inference.sign_flip_interval); the paired sets are mostly one, summed once.
    paired_sets, paired_source = distinct_columns(paired)
    sums, signed = resampled_sums(keys, plan.n_bootstrap, cells=cells,
                                  n_cells=1 if cells is None else plan.n_groups,
                                  counted=np.stack(distinct, axis=1),
                                  signed=np.stack([*differences, *paired_sets], axis=1))
    by_cell = sums[:, :, source]
    n_pairs = len(plan.pairs)
    for p in range(n_pairs):
        out.counted[p] = by_cell[:, 0, 2 * p:2 * p + 2]
        out.signed[p] = signed[:, p]
        out.signs[p] = signed[:, n_pairs + paired_source[p]]
    if cells is not None:
        # The night's change by slice, each value with its interval; ``all`` is the pair's own.
        for i, p in enumerate(plan.night_pairs):
            out.night_groups[i] = by_cell[:, :, 2 * p:2 * p + 2].transpose(1, 0, 2)


def _add_movers_and_groups(out, p, ids, chosen, dd, fa, fb, d, both, codes, plan) -> None:
    """Pair ``p``'s largest changes either way, and its paired count and sum of differences
    per group (slice value)."""
    moved = np.flatnonzero(np.abs(dd) > TIE_TOLERANCE)
    if moved.size:
        order = np.lexsort((ids.gather(chosen[moved]).to_numpy(), -np.abs(dd[moved])))
        top = moved[order[:plan.n_regressions]]
        names = ids.gather(chosen[top]).to_list()
        out.movers[p] = [(-abs(float(dd[i])), name, float(dd[i]), float(fa[i]), float(fb[i]))
                         for i, name in zip(top, names, strict=True)]
    for offset, level_codes in zip(plan.offsets, codes, strict=False):
        cells = offset + level_codes
        out.pair_groups[p, :, 0] += np.bincount(cells, weights=both, minlength=plan.n_groups)
        out.pair_groups[p, :, 1] += np.bincount(cells, weights=d, minlength=plan.n_groups)


def _add_differing(out: Partial, rows: pl.DataFrame, order: np.ndarray, q: np.ndarray,
                   index: pl.DataFrame) -> None:
    """Queries where tonight's rankers evidently rank different candidate sets: more than one
    (size, recall) among the rankers that returned it, a null recall being a value of its
    own. Per-query results keep counts, not documents: different counts prove the sets differ,
    equal ones do not prove them equal (``aggregation.comparison.candidate_set_differences`` checks
    the pool itself). By the query's row number: grouping by the id's text held several times
    the memory."""
    mine = rows.select((pl.col("night") == TONIGHT) & (pl.col("status") != "missing_from_run")
                       )[:, 0].to_numpy()[order]
    evidence = pl.DataFrame({
        "q": q[mine],
        "size": rows["n_candidates"].to_numpy(allow_copy=True)[order][mine],
        "recall": rows["candidate_recall"].to_numpy(allow_copy=True)[order][mine],
    }).with_columns(pl.col("size", "recall").fill_nan(None))  # numpy's NaN: the nulls again
    found = evidence.group_by("q").agg(
        (pl.col("size").min() != pl.col("size").max())
        | (pl.col("size").null_count().is_between(1, pl.len() - 1))
        | (pl.col("recall").min() != pl.col("recall").max())
        | (pl.col("recall").null_count().is_between(1, pl.len() - 1))
    ).filter(pl.col("size"))["q"].sort()
    out.differing = found.len()
    out.differing_first = index["query_id"].gather(found.head(5)).to_list()
