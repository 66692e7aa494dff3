"""Input grouped by its key but not sorted by it, streamed without an external sort.

A TREC run or a ranker's log holds each query's rows together, the queries in the order they
were asked (q2 before q10), not in byte order of their ids. The stream's merge needs a sorted
run only to meet each batch with its judgments, and the content hash needs the canonical order
only per range of lines; neither needs the run itself moved:

- ``detect`` finds in one streamed pass over the key columns whether every key group
  (a ranker's query, a version's query) is contiguous, and keeps the groups' order: the run's
  *positions* (``Order``);
- ``Order.judgments_for`` writes the judgments of one ranker in that order (the judged queries
  the ranker did not return after them, by query_id), the smaller side sorted by DuckDB under
  the memory budget;
- ``metric.grouped_digest.GroupedDigest`` hashes blocks that arrive in any order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from evaluation_pipeline.engines.streaming.batch_checks import NotSorted
from evaluation_pipeline.engines.streaming.reading import (
    Fill,
    Groups,
    batches,
    read_batches,
    whole_groups,
)
from evaluation_pipeline.ingest.external_sort import spilling, sql_text
from evaluation_pipeline.io.budget import Budget
from evaluation_pipeline.metric.hashing import JUDGMENT_KEYS, POOL_KEYS, StreamingDigest
from evaluation_pipeline.metric.kernels.blocks import block_starts, sorted_by

GROUPED_NOTE = ("run is grouped by (ranker, query_id) but not sorted: streaming it as it is, "
                "with the judgments ordered as the run returns its queries (no sort of the run)")

# The pool digest holds each range's blocks in memory until the range is whole, up to this
# share of the memory budget (``open_ranges``); the rest is spilled to its scratch file.
HELD_SHARE = 32

# The judgments' column of the run's position of their query (``Order``); judged queries the
# ranker did not return all take the position after its last.
POSITION = "_position"


@dataclass(frozen=True)
class Order:
    """The key groups of an input, in the order the input holds them: ``groups`` has the key
    columns, ``rows`` (the group's rows) and ``position`` (0, 1, ... in input order)."""

    groups: pl.DataFrame
    keys: tuple[str, ...]

    @property
    def is_sorted(self) -> bool:
        return sorted_by(self.groups.select(self.keys), list(self.keys))

    def judgments_for(self, ranker: str, judgments: list[Path], columns: tuple[str, ...],
                      scratch: Path, budget: Budget, number: int) -> Path:
        """The judgments in ``ranker``'s order of queries, with ``POSITION``: a Parquet file in
        ``scratch`` sorted by (position, query_id, doc_id), written by DuckDB within
        ``budget``. ``columns``: those of the judgments to keep (present in every file)."""
        mine = self.groups.filter(pl.col("ranker") == ranker).select("query_id", "position")
        order_path = scratch / f"order-{number}.parquet"
        mine.write_parquet(order_path)
        after = self.groups.height  # the queries the ranker did not return: after its last
        target = scratch / f"judgments-{number}.ordered.parquet"
        files = ", ".join(sql_text(path) for path in judgments)
        picked = ", ".join(f'j."{c}"' for c in columns)
        extra = ', j."rater"' if "rater" in columns else ""
        query = (f"SELECT {picked}, COALESCE(o.position, {after}) AS {POSITION} "
                 f"FROM read_parquet([{files}]) j LEFT JOIN read_parquet({sql_text(order_path)}) o"
                 f" ON j.query_id = o.query_id ORDER BY {POSITION}, j.query_id, j.doc_id{extra}")
        rows = sum(int(pl.scan_parquet(p, glob=False).select(pl.len()).collect().item())
                   for p in judgments)
        with spilling(budget, f"ordering the judgments as ranker {ranker!r} returned its "
                      "queries", sort_rows=rows) as connection:
            connection.execute(f"COPY ({query}) TO {sql_text(target)} "
                               "(FORMAT parquet, COMPRESSION zstd)")
        return target


def detect(paths: list[Path], keys: list[str], fill: Fill, batch_rows: int) -> Order | None:
    """The input's key groups in input order (``Order``), or None when a key group is split
    (its rows in two places, in one file or two) or, for a run, a ranker's queries are: the
    input then needs the external sort. One streamed pass over the key columns, which ends at
    the first batch that holds a key group twice.

    The pass holds a row per contiguous run of a key: a row per group for a grouped input, but
    a row per input row for a shuffled one (20M rows held some 4 GB). A shuffled input repeats
    a key within its first batch, so it is told apart there, holding one batch. An input whose
    repeats all lie farther apart than a batch (each query's first rows, then each one's
    second, ...) is still read to its end before it is found split."""
    parts: list[pl.DataFrame] = []
    files: dict[str, int] = {}
    for frame, path in _key_batches(paths, keys, fill, batch_rows):
        starts = block_starts(frame, keys)
        heads = frame.gather(starts[:-1])
        if heads.select(pl.struct(keys).is_duplicated().any()).item():
            return None
        parts.append(heads.with_columns(
            rows=pl.Series(np.diff(starts), dtype=pl.Int64),
            file=pl.lit(files.setdefault(str(path), len(files)), dtype=pl.Int32)))
    if not parts:
        return None
    groups = _join_across_batches(pl.concat(parts), keys)
    if groups.select(pl.struct(keys).is_duplicated().any()).item():
        return None
    if "ranker" in keys and not _contiguous(groups["ranker"]):
        return None
    return Order(groups.drop("file").with_row_index("position").with_columns(
        pl.col("position").cast(pl.Int64)), tuple(keys))


def _key_batches(paths, keys, fill, batch_rows) -> Iterator[tuple[pl.DataFrame, Path]]:
    for batch in read_batches(paths, tuple(keys), fill, batch_rows):
        yield batch.frame, batch.path


def _join_across_batches(groups: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Groups cut by a batch boundary joined again: a group whose key and file are those of
    the group before it continues it (a new file always starts a group)."""
    same = pl.all_horizontal([pl.col(c) == pl.col(c).shift(1) for c in (*keys, "file")])
    run = (~same.fill_null(False)).cum_sum().alias("_group")
    return (groups.with_columns(run).group_by("_group", maintain_order=True)
            .agg(*(pl.col(c).first() for c in (*keys, "file")), pl.col("rows").sum())
            .drop("_group"))


def _contiguous(values: pl.Series) -> bool:
    """Each value's occurrences are one run."""
    runs = values.rle_id()
    return int(runs.max()) + 1 == values.n_unique() if len(values) else True


@dataclass
class Grouped:
    """The stream's state for a run grouped by (ranker, query_id) but not sorted: its order,
    the blocks' positions as they come, and the scratch folder and budget of the judgments'
    ordered copies and the digests' lines."""

    order: Order
    scratch: Path
    budget: Budget
    _position: int = 0  # the position of the next block of the run
    _copies: list[Path] = field(default_factory=list)
    _judged: pl.DataFrame | None = None  # the judgments' queries in their order
    checked: bool = False  # the judgments were checked before their copy was made

    @classmethod
    def of(cls, paths: list[Path], fill: Fill, batch_rows: int, scratch: Path, budget: Budget
           ) -> Grouped | None:
        order = detect(paths, POOL_KEYS, fill, batch_rows)
        return None if order is None or order.is_sorted else cls(order, scratch, budget)

    def pool_digest(self):
        from evaluation_pipeline.engines.streaming.grouped_digest import GroupedDigest

        return GroupedDigest("pool", self.scratch, self.order.groups,
                             self.budget.memory_limit // HELD_SHARE)

    def positions(self, blocks, part: pl.DataFrame, whole: bool) -> tuple[int, int]:
        """The positions of the first and last block of ``part`` of a batch (``blocks``), the
        batch's parts taken in order; ``whole``: the part is the whole batch."""
        count = blocks.n_blocks if whole else int(
            (blocks.keys["ranker"] == part["ranker"][0]).sum())
        first = self._position
        self._position += count
        return first, self._position - 1

    def judgment_groups(self, ranker: str, judgments: list[Path], wanted: tuple[str, ...],
                        fill: Fill, batch_rows: int, check: Callable | None = None
                        ) -> Iterator[Groups]:
        """The judgments' batches of whole queries, with ``POSITION``, in ``ranker``'s order of
        queries: the judgments as they are when the ranker's queries come in the same order
        there (the usual case: both written in the order the queries were asked; a query the
        ranker did not return takes the position of the returned one before it, and so meets
        its batch as a judged query missing from the run), else the copy
        ``Order.judgments_for`` writes, after ``check`` (when given) has been called on each
        of the judgments' own batches, so that a refusal names their file and rows (then
        ``checked`` is set). The previous ranker's copy is removed."""
        while self._copies:
            self._copies.pop().unlink(missing_ok=True)
        mine = self.order.groups.filter(pl.col("ranker") == ranker).select(
            "query_id", "position")
        positions = self._judged.join(mine, on="query_id", how="left",
                                      maintain_order="left")["position"]
        if positions.drop_nulls().is_sorted():  # each query once: strictly increasing
            return _positioned(whole_groups(batches(judgments, wanted, fill, batch_rows),
                                            JUDGMENT_KEYS, "judgments", ordered=False),
                               positions.fill_null(strategy="forward").fill_null(-1).to_numpy())
        if check is not None:
            with closing(batches(judgments, wanted, fill, batch_rows)) as read:
                for group in whole_groups(read, JUDGMENT_KEYS, "judgments", ordered=False):
                    check(group)
            self.checked = True
        present = pl.scan_parquet(judgments[0], glob=False).collect_schema().names()
        self._copies.append(self.order.judgments_for(
            ranker, judgments, tuple(c for c in wanted if c in present), self.scratch,
            self.budget, self._position))
        return whole_groups(batches(list(self._copies), (*wanted, POSITION), fill, batch_rows),
                            [POSITION, *JUDGMENT_KEYS], "judgments")

    def judgment_digest(self, paths: list[Path], fill: Fill, batch_rows: int):
        """The digest of the judgments as the stream reads them, their order of queries kept
        (one pass over query_id): ``StreamingDigest`` for judgments sorted by query_id, the
        grouped one for judgments grouped by query_id in another order; judgments that are
        neither raise NotSorted (the stream then sorts them)."""
        judged = detect(paths, JUDGMENT_KEYS, fill, batch_rows)
        if judged is None:
            raise NotSorted("judgments")
        self._judged = judged.groups.select("query_id")
        if judged.is_sorted:
            return StreamingDigest("judgments")
        from evaluation_pipeline.engines.streaming.grouped_digest import GroupedDigest

        return GroupedDigest("judgments", self.scratch)


def _positioned(groups: Iterator[Groups], positions) -> Iterator[Groups]:
    """``groups`` (whole queries, in the order ``positions`` has one per query) with each
    row's ``POSITION``."""
    with closing(groups):
        at = 0
        for group in groups:
            count = len(group.starts) - 1
            frame = group.frame.with_columns(pl.Series(POSITION, np.repeat(
                positions[at:at + count], np.diff(group.starts)), dtype=pl.Int64))
            at += count
            yield Groups(group.path, group.offset, frame, group.starts)
