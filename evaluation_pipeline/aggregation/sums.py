"""A report's numbers from the partials of its chunks (``aggregation.partials``).

``plan_of`` fixes what is summed, ``local_partial`` sums the chunks of per-query frames on this
machine (``engines.spark.report`` does the same on a cluster), and ``Numbers`` turns the
combined sums into the aggregates frame, the paired results and the means the nightly watch
reads: whichever machine summed them, the same sums give the same report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import polars as pl

from evaluation_pipeline.aggregation import partials as rp
from evaluation_pipeline.aggregation.partials import (
    PREVIOUS,
    TONIGHT,
    Partial,
    Plan,
    Result,
)
from evaluation_pipeline.stats.inference import (
    detectable_effect,
    percentile_interval,
    ratio_samples,
    sign_flip_interval,
    sign_flip_p_value,
)
from schemas.columns import (
    AGGREGATE_DTYPES,
    AGGREGATE_KEY,
    INTERVAL_COLUMNS,
    REPORT_OPTIONAL_COLUMNS,
    STATUS_COUNT_COLUMNS,
    TIE_TOLERANCE,
    with_measure_columns,
    with_ndcg_aggregates,
)

Pair = tuple[Result, Result]


def results_of(per_query: pl.DataFrame | pl.LazyFrame, night: int = TONIGHT) -> list[Result]:
    """Every (ranker, measure) of per-query rows, in ``Result``'s order, as results of
    ``night``."""
    found = (with_measure_columns(per_query.lazy()).select("ranker", "cutoff", "measure").unique()
             .collect(engine="streaming"))
    return sorted(Result(night, ranker, None if cutoff is None else int(cutoff), measure)
                  for ranker, cutoff, measure in found.iter_rows())


def plan_of(tonight: Sequence[Result], *, previous: Sequence[Result] = (),
            pairs: Sequence[Pair] = (), queries: pl.DataFrame | None = None,
            slices: tuple[str, ...] = (), n_bootstrap: int = 2000, seed: int = 20261130,
            n_regressions: int = 10, n_queries: int = 0) -> Plan:
    """The plan of a report: ``n_queries``, the distinct query ids of both nights' rows, sets
    the number of chunks."""
    # A pair's result that has no rows (a ranker without one cutoff) is summed too: its pair
    # then has no query.
    results = tuple(dict.fromkeys((*tonight, *previous, *(r for pair in pairs for r in pair))))
    where = {result: i for i, result in enumerate(results)}
    return Plan(
        results=results,
        levels=rp.slice_levels(queries, slices),
        weighted=queries is not None,
        pairs=tuple((where[first], where[second]) for first, second in pairs),
        n_bootstrap=n_bootstrap,
        seed=seed,
        n_regressions=n_regressions,
        n_chunks=rp.chunk_count(n_queries),
    )


def rows_of(per_query: pl.DataFrame | pl.LazyFrame, night: int) -> pl.DataFrame:
    """Per-query rows as the partials read them (``ROW_COLUMNS``, ``night`` added)."""
    return _rows(per_query.lazy(), night).collect()


def _rows(per_query: pl.LazyFrame, night: int) -> pl.LazyFrame:
    # One dtype per column, whatever the frame's: the two nights are stacked, and a partial's
    # bits must not depend on how a file stored its numbers.
    per_query = with_measure_columns(per_query)
    present = per_query.collect_schema().names()
    return per_query.select(
        pl.lit(night, dtype=rp.ROW_DTYPES["night"]).alias("night"),
        *[(pl.col(c) if c in present else _absent(c)).cast(dtype)
          for c, dtype in rp.ROW_DTYPES.items() if c != "night"])


def _absent(column: str) -> pl.Expr:
    if column not in REPORT_OPTIONAL_COLUMNS:
        raise pl.exceptions.ColumnNotFoundError(f"per-query rows have no column {column!r}")
    return pl.lit(None).alias(column)


def distinct_queries(*frames: pl.DataFrame | pl.LazyFrame | None) -> int:
    present = [f.lazy().select("query_id") for f in frames if f is not None]
    if not present:
        return 0
    return pl.concat(present).select(pl.col("query_id").n_unique()).collect(
        engine="streaming").item()


def local_partial(current: pl.DataFrame, previous: pl.DataFrame | None,
                  queries: pl.DataFrame | None, plan: Plan,
                  progress: Callable[[int, int], None] | None = None) -> Partial:
    """The partials of every chunk of ``current`` (tonight) and ``previous`` (the previous
    night's rows, or the first pool of a comparison across pools), added in chunk order."""
    frames = [rows_of(current, TONIGHT)]
    if previous is not None:
        frames.append(rows_of(previous, PREVIOUS))
    rows = pl.concat(frames)
    chunks = rp.chunk_ids(rows["query_id"], plan.n_chunks)
    # A mask, not a column of the frame: filtering by a column held three times as much.
    return _sum_chunks(lambda chunk: rows if plan.n_chunks == 1
                       else rows.filter(pl.Series(chunks == chunk)), queries, plan, progress)


def scanned_partial(current: pl.LazyFrame, previous: pl.LazyFrame | None,
                    queries: pl.DataFrame | None, plan: Plan,
                    progress: Callable[[int, int], None] | None = None) -> Partial:
    """:func:`local_partial` of two scans (local files), one chunk's rows in memory at a time:
    each chunk is a streamed pass over the files that keeps the rows of its queries, so the
    memory is a chunk's (CHUNK_QUERIES queries) whatever the size of the results; the rows,
    and so the sums, are those of the frames read whole."""
    sources = [(current, TONIGHT), *([] if previous is None else [(previous, PREVIOUS)])]

    def rows_of_chunk(chunk: int) -> pl.DataFrame:
        frames = []
        for scan, night in sources:
            rows = _rows(scan, night)
            if plan.n_chunks > 1:
                rows = rows.filter(pl.col("query_id").map_batches(
                    lambda ids: pl.Series(rp.chunk_ids(ids, plan.n_chunks)),
                    return_dtype=pl.Int64, is_elementwise=True) == chunk)
            frames.append(rows.collect(engine="streaming"))
        return pl.concat(frames)

    return _sum_chunks(rows_of_chunk, queries, plan, progress)


def _sum_chunks(rows_of_chunk: Callable[[int], pl.DataFrame], queries: pl.DataFrame | None,
                plan: Plan, progress: Callable[[int, int], None] | None) -> Partial:
    """Each chunk's partial, from its rows and its queries' rows of the queries table, added
    in chunk order; a chunk's rows are let go before the next chunk's are read."""
    cut = _queries_cut(queries, plan)
    total = rp.empty(plan)
    for chunk in range(plan.n_chunks):
        part = rp.chunk_partial(rows_of_chunk(chunk), _of_chunk(queries, cut, chunk), plan)
        total = rp.combine(total, part, plan)
        if progress is not None:
            progress(chunk + 1, plan.n_chunks)
    return total


def _queries_cut(queries: pl.DataFrame | None, plan: Plan) -> np.ndarray | None:
    """The chunk of each row of the queries table (None: every chunk reads it whole)."""
    if queries is None or plan.n_chunks == 1:
        return None
    return rp.chunk_ids(queries["query_id"], plan.n_chunks)


def _of_chunk(queries: pl.DataFrame | None, cut: np.ndarray | None, chunk: int
              ) -> pl.DataFrame | None:
    """The queries table's rows of one chunk's queries: joined against the whole table, each
    chunk held 0.3 GB more at 3.3M queries (the joined rows are the same either way)."""
    return queries if cut is None else queries.filter(pl.Series(cut == chunk))


class Numbers:
    """The combined sums of a plan, read as the report's numbers."""

    def __init__(self, plan: Plan, total: Partial):
        self.plan, self.total = plan, total

    # -- aggregates ---------------------------------------------------------------------------
    def aggregates(self, ci_level: float, lineage: dict[str, str] | None = None) -> pl.DataFrame:
        """One row per tonight's (ranker, measure, slice_column, slice_value) with a query: the
        columns and order of ``aggregation.aggregate_table.aggregate_with_intervals``."""
        plan, numbers, resampled = self.plan, self.total.numbers, self.total.resampled
        groups = [(label, name) for label, names in plan.levels for name in names]
        rows = []
        for ti, t in enumerate(plan.tonight):
            result = plan.results[t]
            for g, (label, name) in enumerate(groups):
                cell = numbers[t, g]
                if cell[rp._N_QUERIES] == 0:
                    continue
                with_number = int(cell[rp._N_NUMBER])
                row = {
                    "ranker": result.ranker, "cutoff": result.cutoff,
                    "measure": result.measure, "slice_column": label,
                    "slice_value": name, "n_queries": int(cell[rp._N_QUERIES]),
                    "n_with_number": with_number,
                    "macro_value": _ratio(cell[rp._SUM_NDCG], cell[rp._N_NUMBER]),
                    **dict.fromkeys(INTERVAL_COLUMNS),
                    "weighted_value": (_ratio(cell[rp._SUM_WEIGHTED], cell[rp._SUM_WEIGHT])
                                      if plan.weighted else None),
                    **{column: int(cell[rp._STATUS0 + i])
                       for i, column in enumerate(STATUS_COUNT_COLUMNS)},
                    "mean_judged_at_k": _ratio(cell[rp._SUM_JUDGED], cell[rp._N_JUDGED]),
                    "mean_candidate_recall": _ratio(cell[rp._SUM_RECALL], cell[rp._N_RECALL]),
                    "n_bounded": int(cell[rp._N_BOUNDED]),
                    "macro_value_min": _ratio(cell[rp._SUM_MIN], cell[rp._N_BOUNDED]),
                    "macro_value_max": _ratio(cell[rp._SUM_MAX], cell[rp._N_BOUNDED]),
                }
                if with_number >= 2 and plan.n_bootstrap:
                    sums = resampled[g, :, ti]
                    row["macro_value_low"], row["macro_value_high"] = percentile_interval(
                        ratio_samples(sums[:, 0], sums[:, 1]), ci_level)
                    if plan.weighted:
                        row["weighted_value_low"], row["weighted_value_high"] = (
                            percentile_interval(ratio_samples(sums[:, 2], sums[:, 3]),
                                                ci_level))
                rows.append(row)
        frame = with_ndcg_aggregates(
            pl.DataFrame(rows, schema=AGGREGATE_DTYPES).sort(list(AGGREGATE_KEY)))
        if lineage:
            frame = frame.with_columns(pl.lit(value, dtype=pl.String).alias(column)
                                       for column, value in lineage.items())
        return frame

    def overall_means(self, night: int) -> dict[tuple[str, int], float | None]:
        """(ranker, cutoff) -> the spec's macro nDCG@K over all queries of ``night``'s
        results."""
        numbers = self.total.numbers
        return {(r.ranker, r.cutoff): _ratio(numbers[i, 0, rp._SUM_NDCG],
                                             numbers[i, 0, rp._N_NUMBER])
                for i, r in enumerate(self.plan.results) if r.night == night and r.is_spec_ndcg}

    def mean_candidate_recall(self, result: Result) -> float | None:
        i = self.plan.results.index(result)
        cell = self.total.numbers[i, 0]
        return _ratio(cell[rp._SUM_RECALL], cell[rp._N_RECALL])

    # -- pairs --------------------------------------------------------------------------------
    def pair_interval(self, p: int, ci_level: float) -> tuple[float | None, float | None]:
        """The percentile bootstrap interval of pair ``p``'s mean difference; (None, None)
        with fewer than two paired queries or no resamples."""
        if int(self.total.pairs[p][0]) < 2 or not self.plan.n_bootstrap:
            return None, None
        counted = self.total.counted[p]
        return percentile_interval(ratio_samples(counted[:, 0], counted[:, 1]), ci_level)

    def pair(self, p: int, ci_level: float) -> dict:
        """Pair ``p``'s paired statistics (n_paired, the means, the difference's interval, the
        p-value, wins, losses and ties), its most regressed queries and its histogram of
        differences."""
        n, sum_first, sum_second, sum_d, wins, losses, ties, largest, _ = self.total.pairs[p]
        n = int(n)
        low, high = self.pair_interval(p, ci_level)
        n_bounded, least, greatest = self.total.pair_bounds[p]
        n_bounded = int(n_bounded)
        mean_difference = sum_d / n if n else None
        difference_min = float(least / n_bounded) if n_bounded else None
        difference_max = float(greatest / n_bounded) if n_bounded else None
        p_value = 1.0 if n == 0 else sign_flip_p_value(
            self._exact_differences(p), self.total.signed[p], n=n, mean=sum_d / n,
            largest=largest)
        return {
            "n_paired": n,
            "mean_first": sum_first / n if n else None,
            "mean_second": sum_second / n if n else None,
            "mean_difference": mean_difference,
            "difference_low": low,
            "difference_high": high,
            "n_bounded": n_bounded,
            "difference_min": difference_min,
            "difference_max": difference_max,
            "holds_for_every_grading": holds_for_every_grading(
                mean_difference, difference_min, difference_max),
            "p_value": p_value,
            # The sign-flip resamples behind p_value: a p of 1 / (1 + these) is the test's
            # floor, the observed difference beyond every resample (report.format.p_shown).
            "test_resamples": len(self.total.signed[p]),
            "wins": int(wins),
            "losses": int(losses),
            "ties": int(ties),
            "regressions": [
                {"query_id": query_id, "ndcg_first": first, "ndcg_second": second,
                 "difference": difference}
                for difference, query_id, first, second in self.total.regressions[p]],
            "movers": [
                {"query_id": query_id, "ndcg_first": first, "ndcg_second": second,
                 "difference": difference}
                for _, query_id, difference, first, second in self.total.movers[p]],
            "histogram": DifferenceHistogram(self.total.histogram[p].copy(), largest, n),
        }

    def adjusted(self, p: int, *, alpha: float, scale: int | None, power: float) -> dict:
        """Pair ``p``'s statistics at the level its family holds it to (``scale``: the divisor
        of ``alpha`` from ``stats.inference.holm_scales``; None: the pair is in no family, as
        it has no p): the sign-flip test's interval inverted at that level, which excludes 0
        exactly when the Holm-adjusted p is below ``alpha``, and the least change the test
        detects there with probability ``power``."""
        n, _, _, sum_d, _, _, _, largest, sum_squares = self.total.pairs[p]
        n = int(n)
        low = high = effect = None
        if scale is not None and n:
            low, high = sign_flip_interval(
                self._exact_differences(p), self.total.signed[p], self.total.signs[p], n=n,
                mean=sum_d / n, largest=largest, alpha=alpha, scale=scale)
            effect = detectable_effect(n, sum_squares, sum_d / n, alpha=alpha, power=power,
                                       scale=scale)
        return {"adjusted_level": None if scale is None else 1.0 - alpha / scale,
                "difference_low_adjusted": low, "difference_high_adjusted": high,
                "detectable_effect": effect}

    def _exact_differences(self, p: int) -> np.ndarray | None:
        """Pair ``p``'s differences in query order while they are few enough for the exact
        test (every sign pattern), else None."""
        small = self.total.small[p]
        return None if small is None else np.array([d for _, d in sorted(small)])

    def pair_slices(self, p: int, ci_level: float,
                    whole: tuple[float | None, float | None] | None = None) -> list[dict]:
        """Pair ``p``'s change broken down by slice: per slice column and value with a paired
        query, the paired mean difference, its interval (pairs of nights) and its share of the
        pair's total change (the value's sum of differences over the pair's, so the shares of
        one column add up to 1). A share is given only where the total change is itself told
        from zero (its interval excludes 0): a share of a change that may be nothing is noise
        (a total near 0 makes shares of hundreds of percent), and is None."""
        plan, sums = self.plan, self.total.pair_groups[p]
        nights = plan.night_pairs
        resampled = self.total.night_groups[nights.index(p)] if p in nights else None
        total = float(sums[0, 1])
        # ``whole``: the pair's own interval, when the caller has it from :meth:`pair`.
        whole = whole if whole is not None else self.pair_interval(p, ci_level)
        told = whole[0] is not None and (whole[0] > 0 or whole[1] < 0)
        out, g = [], len(plan.levels[0][1])
        for label, names in plan.levels[1:]:
            for name in names:
                n, sum_d = int(sums[g, 0]), float(sums[g, 1])
                low = high = None
                if n >= 2 and resampled is not None and plan.n_bootstrap:
                    counted = resampled[g]
                    low, high = percentile_interval(
                        ratio_samples(counted[:, 0], counted[:, 1]), ci_level)
                if n:
                    out.append({"slice": label, "value": name, "n_paired": n,
                                "mean_difference": sum_d / n, "difference_low": low,
                                "difference_high": high,
                                "share": sum_d / total if told and abs(total) > 0 else None})
                g += 1
        return out

    def differing(self) -> tuple[int, list[str]]:
        """(how many, the first five) of tonight's queries whose rankers evidently rank
        different candidate sets."""
        return self.total.differing, list(self.total.differing_first)


class DifferenceHistogram:
    """The paired differences of a pair in ``FINE_BINS`` bins over [-1, 1], summed into a
    chart's bins: 20 over a symmetric axis of a whole hundredth, at least 0.05, that holds
    the largest difference."""

    def __init__(self, fine: np.ndarray, largest: float, n: int):
        self.fine, self.largest, self.n = fine, float(largest), n

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, DifferenceHistogram) and self.n == other.n
                and self.largest == other.largest and np.array_equal(self.fine, other.fine))

    __hash__ = None  # mutable counts

    def chart_bins(self, bins: int = 20) -> tuple[np.ndarray, np.ndarray]:
        """(counts, edges) of the chart."""
        half = bins // 2
        hundredths = max(5, int(np.ceil(round(self.largest * 100, 9))))
        per_bin = hundredths * rp.FINE_BINS // 200 // half  # fine bins in a chart bin
        centre = rp.FINE_BINS // 2
        first = centre - half * per_bin
        fine = self.fine.copy()
        # What falls outside the axis (none, as the axis holds the largest difference) and its
        # right edge belong to the outer bins, as numpy.histogram counts its last edge.
        lo, hi = first, centre + half * per_bin
        fine[lo] += fine[:lo].sum()
        fine[hi - 1] += fine[hi:].sum()
        counts = fine[lo:hi].reshape(bins, per_bin).sum(axis=1)
        extent = hundredths / 100
        return counts, np.linspace(-extent, extent, bins + 1)


def holds_for_every_grading(mean_difference: float | None, least: float | None,
                            greatest: float | None) -> bool | None:
    """Whether a difference's direction survives every grading of the holes: its bounds
    exclude 0 on the side of the difference (None without a difference or without bounds;
    False for a tie, which has no direction to keep)."""
    if mean_difference is None or least is None or greatest is None:
        return None
    if mean_difference > TIE_TOLERANCE:
        return bool(least > 0.0)
    if mean_difference < -TIE_TOLERANCE:
        return bool(greatest < 0.0)
    return False


def _ratio(numerator: float, denominator: float) -> float | None:
    return float(numerator / denominator) if denominator > 0 else None

