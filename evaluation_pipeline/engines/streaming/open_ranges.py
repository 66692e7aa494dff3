"""A grouped run's ranges of the content hash, hashed as soon as their last block has come.

The hash (contract section 1) is a SHA-256 per range of ``RANGE_ROWS`` lines in key order. A
run grouped by query but not sorted brings a range's blocks from all over the file, but the
grouping pass (``grouping.detect``) has seen every block's key and rows before the stream
starts: so each block's range, its place in key order, and the position in the run of each
range's last block are known in advance. ``OpenRanges`` keeps the packed blocks of each open
range in memory and hashes the range the moment its last block comes, then lets it go.

For ids in numeric order most ranges close soon after their queries arrive (byte order and
numeric order agree on ids of one length); ids shorter than the rest keep theirs open until
the longer ids of the same range come. What is held is capped: past the cap, what the open
range that would stay open longest holds goes to the digest's scratch file, and is read back
and hashed with the rest of the range when its last block comes. Either way every range is
hashed during the stream, on the digest's thread, none at the end.
"""

from __future__ import annotations

import numpy as np
import polars as pl
from numba import njit

from evaluation_pipeline.metric import hashing
from evaluation_pipeline.metric.kernels.blocks import Blocks
from evaluation_pipeline.metric.kernels.loading import read_only


class OpenRanges:
    """The pool's ranges, from the run's ``Order`` (``groups`` in input order: ranker,
    query_id, rows). Blocks must come in that order (checked). ``held_bytes``: the most packed
    bytes kept in memory."""

    def __init__(self, groups: pl.DataFrame, held_bytes: int) -> None:
        # As strings, as the blocks have them: a query_id stored as integers is read as text,
        # and its byte order is not its numeric order.
        groups = groups.with_columns(pl.col("ranker", "query_id").cast(pl.String))
        ranked = (groups.select("ranker", "query_id", "rows").with_row_index("position")
                  .sort("ranker", "query_id"))  # byte-wise, as canonical_blocks orders
        self._input_keys = groups.select("ranker", "query_id")
        self.keys = ranked.select("ranker", "query_id")  # in key order
        self.rows = ranked["rows"].to_numpy().astype(np.int64)
        position = ranked["position"].to_numpy().astype(np.int64)
        in_key_order = (np.cumsum(self.rows) - self.rows) // hashing.RANGE_ROWS
        self.ranges = in_key_order  # each block's range, the blocks in key order
        n = len(position)
        self._range = np.empty(n, np.int64)  # by input position
        self._range[position] = in_key_order
        self._rank = np.empty(n, np.int64)  # by input position: its place in key order
        self._rank[position] = np.arange(n, dtype=np.int64)
        n_ranges = int(in_key_order[-1]) + 1 if n else 0
        self._missing = np.bincount(in_key_order, minlength=n_ranges)  # blocks still to come
        self._closes_at = np.zeros(n_ranges, np.int64)  # the input position of its last block
        np.maximum.at(self._closes_at, in_key_order, position)
        self.spilled = np.zeros(n_ranges, bool)
        self._held: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
        self._held_bytes = np.zeros(n_ranges, np.int64)
        self._cap = held_bytes
        self._next = 0  # the input position of the next block
        self.digests: dict[int, bytes] = {}  # of the ranges hashed from memory
        self.peak_held = 0  # the most bytes held at once (for the benchmark's record)

    def take(self, blocks: Blocks, packed: np.ndarray, ends: np.ndarray, hash_range
             ) -> tuple[list[tuple[int, tuple]], list[tuple[int, list]]]:
        """Hold the blocks of ``packed`` (block b's bytes end at ``ends[b]``), and hash each
        range whose last block this was (``hash_range(ranks, sizes, data)`` returns its
        digest). Returns what goes to the scratch file, (range, (places in key order, sizes,
        bytes)), when more than the cap is held; and the ranges whose last block this was and
        that have parts there, each with its parts still held, to be hashed with those."""
        n = blocks.n_blocks
        first = self._next
        if not blocks.keys.select("ranker", "query_id").equals(
                self._input_keys.slice(first, n)):
            raise RuntimeError("the run's blocks came in another order than the grouping "
                               "pass found")
        self._next += n
        ranges = self._range[first:first + n]
        ranks = self._rank[first:first + n]
        if not np.array_equal(np.diff(blocks.starts), self.rows[ranks]):
            raise RuntimeError("the run's blocks have other row counts than the grouping pass "
                               "found")
        sizes = np.diff(np.r_[0, ends])
        starts = ends - sizes
        to_file, closed = [], []
        for r in np.unique(ranges).tolist():
            mine = np.flatnonzero(ranges == r)
            part = (ranks[mine], sizes[mine], _cut(packed, starts[mine], sizes[mine]))
            self._missing[r] -= len(mine)
            self._held.setdefault(r, []).append(part)
            self._held_bytes[r] += len(part[2])
            if self._missing[r] == 0:
                held = self._held.pop(r)
                self._held_bytes[r] = 0
                if self.spilled[r]:
                    closed.append((r, held))
                else:
                    self.digests[r] = hash_range(*(np.concatenate(p) for p in zip(*held)))
        self.peak_held = max(self.peak_held, int(self._held_bytes.sum()))
        while self._held and int(self._held_bytes.sum()) > self._cap:
            # What the open range whose last block comes last holds would be held longest:
            # to the file with it. Its later blocks are held again, up to the cap.
            r = max(self._held, key=lambda held: self._closes_at[held])
            to_file.extend((r, part) for part in self._held.pop(r))
            self._held_bytes[r] = 0
            self.spilled[r] = True
        return to_file, closed

    def finished(self) -> None:
        if self._held or self._next != len(self._rank):
            raise RuntimeError("the run ended before every block the grouping pass found came")


def _cut(packed: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The bytes of the given blocks, one after the other, in a copy of their own."""
    out = np.empty(int(sizes.sum()), np.uint8)
    gather(*read_only((packed, starts, sizes)), out)
    return out


@njit(cache=True, nogil=True)
def gather(source, offsets, sizes, out):
    """``sizes[k]`` bytes of ``source`` from each ``offsets[k]``, one after the other, into
    ``out``."""
    at = 0
    for k in range(len(offsets)):
        out[at:at + sizes[k]] = source[offsets[k]:offsets[k] + sizes[k]]
        at += sizes[k]
