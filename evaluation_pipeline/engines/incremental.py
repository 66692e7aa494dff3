"""A judgment version scored from an earlier version's scores of the same pool.

A query's per-query rows depend only on that query's candidates and its judgment rows, so when
version B regrades a few queries of version A, the other queries' rows under B are A's rows with
B's lineage. Only the queries whose judgment rows differ (changed, added or removed, an
``unknown`` graded) are scored again, from their candidates alone: the published pool is sorted
by (ranker, query_id, doc_id), so a filter on query_id reads only the row groups that hold them.
The rows are then put in the one row order and written as the full scoring writes them, so the
file is the full scoring's byte for byte (tested against every engine's).

It applies only where the earlier rows are known to be the same evaluation: the same pool
content and spec, hashes of the current version, and the earlier version's own published
judgments. Otherwise the caller scores in full.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import polars as pl
import pyarrow.parquet as pq

from evaluation_pipeline.engines.choice import (
    IN_MEMORY_MAX_ROWS,
    READ_COLUMNS,
    held_peak,
)
from evaluation_pipeline.engines.defaults import PER_QUERY_ROW_GROUP_ROWS
from evaluation_pipeline.evaluation import Lineage, read_lineage, with_lineage
from evaluation_pipeline.io.atomic import atomic_write
from evaluation_pipeline.io.budget import Budget
from evaluation_pipeline.io.datasets import distinct_values
from evaluation_pipeline.io.locations import Location, location
from evaluation_pipeline.metric import pool_holes
from evaluation_pipeline.metric.hashing import (
    judgment_blocks,
    judgments_sha256,
    pool_blocks,
)
from evaluation_pipeline.metric.ndcg import (
    RESULT_SCHEMA,
    index_judgments,
    missing_from_run,
    score_candidates,
    sort_results,
)
from evaluation_pipeline.metric.raters import check_rule, combine_ratings
from evaluation_pipeline.spec import EvaluationSpec
from schemas import validate
from schemas.columns import GRADED, RATER

# Judgment columns that name the version, not a grade: equal rows differ in them only.
_NOT_GRADES = ("judgment_version",)


@dataclass(frozen=True)
class Increment:
    """What an incremental scoring wrote: its lineage, its rows, and the queries scored again
    out of the ones the version judges or the pool holds."""

    lineage: Lineage
    per_query_path: str
    rows: int
    rescored_queries: int
    kept_queries: int
    # (wall, CPU) seconds of each part: reading the earlier rows and both versions, finding
    # the changed queries, reading their candidates and scoring them, putting the rows
    # together, writing.
    seconds: dict[str, tuple[float, float]] = field(default_factory=dict, compare=False)


def changed_queries(previous: pl.DataFrame | pl.LazyFrame, current: pl.DataFrame | pl.LazyFrame
                    ) -> pl.Series:
    """The query_ids whose judgment rows differ between two versions: a row of one that the
    other lacks in any grade column (a regrade, an added or removed document or query, an
    ``unknown`` graded), in byte order.

    Each query of each version gets a digest of its rows (their count, and two sums of 64-bit
    hashes of the rows under two seeds: the rows of a query are unique, so the sums are of a
    set), and the queries whose digests differ, or that one version lacks, are the changed
    ones: a join of the versions' queries, not of their rows. The digests are compared within
    this process only (polars' hash is not stable across releases). A version given as a
    scan (a LazyFrame) is streamed: only its digests are held."""
    previous, current = previous.lazy(), current.lazy()
    names = {which: frame.collect_schema().names() for which, frame in
             (("previous", previous), ("current", current))}
    columns = [c for c in names["current"] if c in names["previous"] and c not in _NOT_GRADES]
    if set(names["previous"]) - set(_NOT_GRADES) != set(names["current"]) - set(_NOT_GRADES):
        # A column one version has and the other lacks may carry grades (raters): all changed.
        return pl.concat([previous.select("query_id"), current.select("query_id")]).unique(
            ).collect(engine="streaming")["query_id"].sort()
    a, b = _query_digests(previous, columns), _query_digests(current, columns)
    joined = a.join(b, on="query_id", how="full", coalesce=True, suffix="_now")
    differ = pl.lit(False)
    for column in _DIGEST_COLUMNS:
        differ = differ | pl.col(column).ne_missing(pl.col(f"{column}_now"))
    return joined.filter(differ)["query_id"].sort()


_DIGEST_COLUMNS = ("rows", "sum_0", "sum_1")

# The changed queries of the last pairs of version files, by the files' identity (path, inode, size,
# modification time): a new version is scored against every pool of the backfill window, and
# the pair's changed queries are the same for each pool (at 100M rows, 0.6 to 1 s a pool).
_CHANGED: OrderedDict[tuple, pl.Series] = OrderedDict()
_CHANGED_PAIRS = 2
_CHANGED_LOCK = threading.Lock()


def _changed_between(previous: Location, current: Location) -> pl.Series:
    """``changed_queries`` of two version files, computed once per pair of files as they are."""
    key = tuple((str(path), stat.st_ino, stat.st_size, stat.st_mtime_ns)
                for path in (previous, current) for stat in [os.stat(str(path))])
    with _CHANGED_LOCK:
        if key in _CHANGED:
            _CHANGED.move_to_end(key)
            return _CHANGED[key]
    changed = changed_queries(pl.scan_parquet(previous, glob=False),
                              pl.scan_parquet(current, glob=False))
    with _CHANGED_LOCK:
        _CHANGED[key] = changed
        while len(_CHANGED) > _CHANGED_PAIRS:
            _CHANGED.popitem(last=False)
    return changed


def _query_digests(judgments: pl.LazyFrame, columns: list[str]) -> pl.DataFrame:
    """Per query_id: its rows and the wrapping sums of its rows' hashes under two seeds (the
    hashes taken in one pass, then summed by query; a row's hash is its values', whatever
    batch it is read in)."""
    row = pl.struct([c for c in columns if c != "query_id"])
    return judgments.select(
        "query_id", *(row.hash(seed=seed).alias(f"sum_{seed}") for seed in (0, 1))
    ).group_by("query_id").agg(pl.len().alias("rows"), pl.col("sum_0").sum(),
                               pl.col("sum_1").sum()).collect(engine="streaming")


def score_increment(previous_scores: Location, previous_judgments: Location,
                    judgments: Location, pool: Location, spec: EvaluationSpec,
                    out_path: Location, *, pool_sha256: str, previous_judgments_sha256: str,
                    judgments_sha256_now: str | None = None, budget: Budget | None = None
                    ) -> Increment | None:
    """``judgments`` x ``pool`` under ``spec`` at ``out_path``, from the rows at
    ``previous_scores`` (the same pool under ``previous_judgments``) and a scoring of the
    queries that changed; None, writing nothing, when those rows are not known to be the same
    evaluation (``pool_sha256``, ``previous_judgments_sha256``: the published hashes, of the
    current hash version; ``judgments_sha256_now``: the published hash of ``judgments``, else
    it is computed). The inputs are published files, validated when they were published.

    The increment holds in memory the earlier rows (twice, as the kept rows are merged with
    the new ones) and the changed queries' judgments and candidates; the versions are scanned
    for their digests (a version with raters is read whole for its largest grade, unless the
    spec sets ``max_grade``, and counted so). When what it holds comes to more than
    ``engines.choice.IN_MEMORY_MAX_ROWS`` rows (the rows past which ``auto`` streams), or its
    estimated peak (``engines.choice.held_peak``) to more than ``budget`` (default
    ``Budget.of()``: ``NDCG_EVAL_MEMORY_LIMIT``), it returns None too, and the full scoring
    streams (benchmarks/README.md)."""
    lap = _Laps()
    footers = {path: pq.read_metadata(str(path)) for path in (previous_scores,
                                                              previous_judgments, judgments,
                                                              pool)}
    columns = {path: set(footer.schema.to_arrow_schema().names)
               for path, footer in footers.items()}
    limit = (budget or Budget.of()).memory_limit

    def fits(judgment_rows: int, candidates: int) -> bool:
        earlier_rows = 2 * footers[previous_scores].num_rows
        return earlier_rows + judgment_rows + candidates <= IN_MEMORY_MAX_ROWS and held_peak([
            (footers[previous_scores], tuple(RESULT_SCHEMA), earlier_rows),
            (footers[judgments], READ_COLUMNS["judgments"], judgment_rows),
            (footers[pool], READ_COLUMNS["run"], candidates)]) <= limit

    # A version whole when its hash is computed here, or when its raters' grades are combined
    # to find its largest grade (one version at a time; not under the spec's max_grade).
    whole = max([0 if judgments_sha256_now else footers[judgments].num_rows,
                 *(footers[path].num_rows for path in (previous_judgments, judgments)
                   if spec.max_grade is None
                   and RATER in columns[path])])
    if not fits(whole, 0):
        return None
    if not set(RESULT_SCHEMA) <= columns[previous_scores]:
        return None  # written by a release whose rows had other columns
    try:
        lineage = read_lineage(location(previous_scores))
    except Exception:
        return None
    # Without the lineage columns, one value stored on every row: read, they were most of the
    # rows' memory (the two sha256 columns alone 80 bytes a row each), and the kept rows'
    # copies with them.
    earlier = pl.read_parquet(previous_scores, columns=list(RESULT_SCHEMA))
    if (lineage.spec_id != spec.spec_id or lineage.pool_sha256 != pool_sha256
            or lineage.judgments_sha256 != previous_judgments_sha256):
        return None
    lap("earlier rows")
    # The versions are scanned, not held: their digests by query, their largest grades and
    # the changed queries' rows are all the increment needs of them.
    before = pl.scan_parquet(previous_judgments, glob=False)
    now_rows = pl.scan_parquet(judgments, glob=False)
    top_grade = _top_grade(now_rows, spec)
    if _top_grade(before, spec) != top_grade:
        return None  # the grade scale of every query (its holes' range) is the version's
    rated = RATER in columns[judgments]
    # One scan for the version's name and its raters, whose rule is refused here as a full
    # scoring refuses it.
    found = distinct_values(location(judgments), ["judgment_version", *([RATER] if rated else [])])
    check_rule(spec, rated, found[RATER] if rated else None, str(judgments))
    if len(found["judgment_version"]) != 1:
        raise ValueError(f"{judgments}: expected one judgment_version, found "
                         f"{found['judgment_version'][:5]}")
    lap("versions")
    changed = _changed_between(previous_judgments, judgments)
    wanted = pl.col("query_id").is_in(changed.implode())
    lap("changed queries")
    # The candidates of the changed queries, as a share of the pool's rows, and their
    # judgment rows, counted before either is read.
    queries_before = earlier["query_id"].unique()
    candidates = footers[pool].num_rows * changed.len() // max(queries_before.len(), 1)
    if not fits(whole, candidates) or not fits(whole + now_rows.select("query_id").filter(
            wanted).select(pl.len()).collect(engine="streaming").item(), candidates):
        return None
    lap("memory check")
    grades = now_rows.filter(wanted).collect()
    lap("changed queries' judgments")
    digest = judgments_sha256_now or judgments_sha256(judgment_blocks(
        pl.read_parquet(judgments)))
    lap("version hash")
    now = Lineage(judgment_version=found["judgment_version"][0],
                  judgments_sha256=digest, candidate_pool=lineage.candidate_pool,
                  pool_sha256=pool_sha256, spec_id=spec.spec_id)
    rescored = _rescored(grades, pool, changed, spec, earlier, top_grade, lap)
    kept = earlier.filter(~pl.col("query_id").is_in(changed.implode())).cast(RESULT_SCHEMA)
    del earlier  # let go before the rows are put together, which copies the kept ones
    # The earlier rows were checked when they were written: the new ones are checked here.
    validate("PerQueryResults", with_lineage(rescored, now), "per-query results")
    # The kept rows are one run in the row order, the rescored ones another: one frame (one
    # chunk, which the sort's gather would otherwise copy while the kept rows are still held),
    # then a sort that takes the runs as they are.
    rows = pl.concat([kept, sort_results(rescored)])
    kept_queries = queries_before.len() - int(queries_before.is_in(changed.implode()).sum())
    del kept, rescored
    per_query = with_lineage(sort_results(rows, runs=True), now)
    del rows
    lap("rows put together")
    atomic_write(out_path, lambda tmp: per_query.write_parquet(
        tmp, compression="zstd", statistics=True, row_group_size=PER_QUERY_ROW_GROUP_ROWS))
    lap("write")
    return Increment(now, str(out_path), per_query.height, changed.len(),
                     kept_queries, lap.seconds)


class _Laps:
    """Seconds since the last call, wall and CPU (of every thread), by the name of the part
    that took them."""

    def __init__(self) -> None:
        self.seconds: dict[str, tuple[float, float]] = {}
        self._last = (time.perf_counter(), time.process_time())

    def __call__(self, name: str) -> None:
        now = (time.perf_counter(), time.process_time())
        wall, cpu = self.seconds.get(name, (0.0, 0.0))
        self.seconds[name] = (wall + now[0] - self._last[0], cpu + now[1] - self._last[1])
        self._last = now


def _top_grade(judgments: pl.DataFrame | pl.LazyFrame, spec: EvaluationSpec) -> int | None:
    """The largest grade a hole may take, as a scoring of the whole version takes it: the
    spec's max_grade, else the version's largest graded grade (under the raters' rule)."""
    if spec.max_grade is not None:
        return None  # the spec's own, which every version shares
    if RATER in judgments.collect_schema().names():  # the raters' grades combined first
        judgments = combine_ratings(judgments.lazy().collect(), spec).lazy()
    top = judgments.lazy().filter(pl.col("grade_status") == GRADED).select(
        pl.col("grade").max()).collect(engine="streaming").item()
    return int(top) if top is not None else 0


def _rescored(grades: pl.DataFrame, pool: Location, changed: pl.Series, spec: EvaluationSpec,
              earlier: pl.DataFrame, top_grade: int | None, lap=lambda name: None
              ) -> pl.DataFrame:
    """The per-query rows of the changed queries alone, as a full scoring gives them: their
    candidates scored, and a ranker that lacks one of them counted as missing it."""
    wanted = pl.col("query_id").is_in(changed.implode())
    candidates = pl.scan_parquet(pool).filter(wanted).collect()
    lap("candidates")
    # The version's scale, not the changed queries' alone.
    index = index_judgments(grades.filter(wanted), spec, top_grade=top_grade)
    # Every ranker of the pool, also one that returned none of these queries.
    rankers = sorted(set(earlier["ranker"].unique().to_list())
                     | set(candidates["ranker"].unique().to_list()))
    # Every ranker's rows of these queries: their unjudged documents are all here.
    unjudged = pool_holes.of_pool(candidates, len(rankers), index.grades, spec)
    if candidates.height:
        blocks = pool_blocks(candidates)
        scored = score_candidates(blocks, index, spec, unjudged)
        returned = blocks.keys
    else:
        scored = pl.DataFrame(schema=RESULT_SCHEMA)
        returned = pl.DataFrame(schema={"ranker": pl.String, "query_id": pl.String})
    rows = pl.concat([scored, missing_from_run(index, returned, rankers, spec, unjudged)]).select(
        list(RESULT_SCHEMA)).cast(RESULT_SCHEMA)
    lap("scoring")
    return rows

