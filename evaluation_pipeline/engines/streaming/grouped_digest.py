"""The content hash (contract section 1) of blocks that arrive in any order.

``metric.hashing.StreamingDigest`` needs its pieces in key order: a range's lines are hashed as
they come. A run grouped by query but not sorted (``engines.streaming.grouping``) brings the
blocks of one range from all over the file. A pool's blocks are packed as each row's doc_id
(its length, then its bytes) and score bits, 25 bytes a row here against 60 of its line (the
ranker and query_id are the block's), and given the grouping pass's order of blocks, each range
is hashed from memory as soon as its last block has come (``open_ranges``), what is held past a
cap going to a scratch file and read back then. Without that order (and for a version, whose
blocks are spilled as their canonical lines: the same compiled writer, the same bytes) every
block goes to the scratch file, with its key, rows, offset and size, and at the end the blocks
are read back in key order, range by range, into SHA-256: the same hash, with the blocks on
disk rather than the rows sorted. Only the blocks of the range being hashed are then mapped
into memory.
"""

from __future__ import annotations

import hashlib
import mmap
import os
from pathlib import Path

import numpy as np
import polars as pl
from numba import njit

from evaluation_pipeline.engines.streaming.open_ranges import OpenRanges, gather
from evaluation_pipeline.metric.hashing import (
    _CHUNK_ROWS,
    HASH_VERSION,
    RANGE_ROWS,
    _chunks,
    _writer,
    blocks_of,
    checked_kind,
    combine,
)
from evaluation_pipeline.metric.kernels.blocks import Blocks
from evaluation_pipeline.metric.kernels.intrinsics import copy_bytes
from evaluation_pipeline.metric.kernels.lines import _digits, put_int
from evaluation_pipeline.metric.kernels.loading import read_only
from evaluation_pipeline.metric.kernels.threads import helper
from schemas import columns

_NEGATIVE_ZERO = np.int64(-(2**63))
_WORDS = (len(columns.GRADED), len(columns.UNKNOWN))


class GroupedDigest:
    """``StreamingDigest``'s hash of blocks fed in any order, each block whole in one piece
    and no key in two blocks (``grouping.detect`` proves both before the stream starts).

    ``groups``: a pool's blocks as the grouping pass found them (``Order.groups``), which then
    must come in that order; each range is hashed from memory once its last block has come,
    with at most ``held_bytes`` held (``open_ranges``). Without it every block is spilled."""

    def __init__(self, kind: str, scratch: Path, groups: pl.DataFrame | None = None,
                 held_bytes: int = 0) -> None:
        self._kind = checked_kind(kind)
        self._path = scratch / f"{kind}.lines"
        self._file = open(self._path, "w+b")  # noqa: SIM115 - closed by hexdigest
        self._written = 0
        self._blocks: list[pl.DataFrame] = []
        self._buffer = np.empty(0, np.uint8)
        self._open = OpenRanges(groups, held_bytes) if (
            kind == "pool" and groups is not None) else None
        # Per spilled range, its parts in the scratch file: (ranks, sizes, offset, bytes).
        self._spilled: dict[int, list[tuple[np.ndarray, np.ndarray, int, int]]] = {}

    def update(self, piece: pl.DataFrame | Blocks) -> Blocks:
        """Write one piece's lines; returns its blocks (``duplicate`` flags a repeated key)."""
        piece = blocks_of(self._kind, piece)
        if not piece.n_blocks:
            return piece
        if self._open is not None:
            self._buffer, ends = _packed(piece, self._buffer)
            to_file, closed = self._open.take(piece, self._buffer, ends, self._hash)
            for number, (ranks, sizes, data) in to_file:
                self._file.write(memoryview(data))
                self._spilled.setdefault(number, []).append(
                    (ranks, sizes, self._written, len(data)))
                self._written += len(data)
            if closed:
                self._file.flush()
            for number, held in closed:  # whole: its parts read back, hashed with the rest
                parts = [(ranks, sizes, np.frombuffer(os.pread(
                    self._file.fileno(), size, at), np.uint8))
                    for ranks, sizes, at, size in self._spilled.pop(number)] + held
                self._open.digests[number] = self._hash(
                    *(np.concatenate(column) for column in zip(*parts)))
            return piece
        if self._kind == "pool":
            self._buffer, ends = _packed(piece, self._buffer)
            self._file.write(memoryview(self._buffer[:int(ends[-1])]))
        else:
            ends = _judgment_line_ends(piece)
            write = _writer(self._kind, piece, HASH_VERSION)
            for chunk in _chunks(piece, np.arange(piece.n_blocks, dtype=np.int64)):
                self._buffer, size = write(chunk, self._buffer)
                self._file.write(memoryview(self._buffer[:size]))
        sizes = np.diff(np.r_[0, ends])
        if int(ends[-1]) != self._file.tell() - self._written:
            raise RuntimeError("canonical line sizes disagree with the lines written")
        self._blocks.append(piece.keys.with_columns(
            offset=pl.Series(self._written + ends - sizes, dtype=pl.Int64),
            size=pl.Series(sizes, dtype=pl.Int64),
            rows=pl.Series(np.diff(piece.starts), dtype=pl.Int64)))
        self._written += int(ends[-1])
        return piece

    def _hash(self, ranks: np.ndarray, sizes: np.ndarray, data: np.ndarray) -> bytes:
        """The digest of one whole range held in memory: its blocks (``ranks``, their places
        in key order; ``sizes``, their bytes one after the other in ``data``)."""
        order = np.argsort(ranks, kind="stable")
        table = self._open.keys[ranks[order]].with_columns(
            offset=pl.Series((np.cumsum(sizes) - sizes)[order], dtype=pl.Int64),
            size=pl.Series(sizes[order], dtype=pl.Int64))
        rows = self._open.rows[ranks[order]]
        return _pool_digests(data, None, table, rows, np.zeros(len(rows), np.int64))[0]

    def _open_hexdigest(self) -> str:
        """The hash of the ranges, each hashed when its last block came."""
        self._file.close()
        self._path.unlink()
        self._open.finished()
        digests = self._open.digests
        if self._spilled or sorted(digests) != np.unique(self._open.ranges).tolist():
            raise RuntimeError("a range of the run's content hash was not hashed")
        return combine([digests[r] for r in sorted(digests)])

    def hexdigest(self) -> str:
        if self._open is not None:
            return self._open_hexdigest()
        self._file.close()
        if not self._blocks:
            return combine([])
        table = pl.concat(self._blocks)
        table = table.sort(table.columns[:-3])  # byte-wise, as canonical_blocks orders
        rows = table["rows"].to_numpy()
        ranges = (np.cumsum(rows) - rows) // RANGE_ROWS
        cuts = np.flatnonzero(np.diff(ranges)) + 1
        offsets, sizes = table["offset"].to_numpy(), table["size"].to_numpy()
        digests = []
        with open(self._path, "rb") as handle, mmap.mmap(handle.fileno(), 0,
                                                         access=mmap.ACCESS_READ) as lines:
            source = np.frombuffer(lines, dtype=np.uint8)
            if self._kind == "pool":
                digests = _pool_digests(source, lines, table, rows, ranges)
                del source
                self._path.unlink()
                return combine(digests)
            buffers, hashing = [np.empty(0, np.uint8), np.empty(0, np.uint8)], None
            for k, (at, size) in enumerate(zip(np.split(offsets, cuts), np.split(sizes, cuts))):
                total = int(size.sum())
                if len(buffers[k % 2]) < total:
                    buffers[k % 2] = np.empty(total, np.uint8)
                gather(*read_only((source, at, size)), buffers[k % 2])
                if hashing is not None:
                    digests.append(hashing.result())
                    lines.madvise(mmap.MADV_DONTNEED)  # the range's pages leave this process
                hashing = helper("sha256").submit(_sha256, buffers[k % 2][:total])
            digests.append(hashing.result())
            del source
        self._path.unlink()
        return combine(digests)


def _pool_digests(source: np.ndarray, spill: mmap.mmap | None, table: pl.DataFrame, rows,
                  ranges) -> list[bytes]:
    """The range digests of a pool's packed blocks (``table``: in key order), the lines of some
    ``_CHUNK_ROWS`` rows written at a time while the chunk before is hashed on a helper.
    ``spill``: the map ``source`` reads, whose pages are let go range by range."""
    from evaluation_pipeline.metric.kernels.buffers import string_buffers

    offsets, sizes = table["offset"].to_numpy(), table["size"].to_numpy()
    before = np.cumsum(rows) - rows
    cuts = np.unique(np.r_[np.flatnonzero(np.diff(ranges)) + 1, np.searchsorted(
        before, np.arange(_CHUNK_ROWS, int(before[-1]) + 1, _CHUNK_ROWS))])
    cuts = cuts[(cuts > 0) & (cuts < len(rows))]
    digests: list[bytes] = []
    current, hashing = None, None
    packed = np.empty(0, np.uint8)
    buffers = [np.empty(0, np.uint8), np.empty(0, np.uint8)]
    for k, (lo, hi) in enumerate(zip(np.r_[0, cuts], np.r_[cuts, len(rows)])):
        lo, hi = int(lo), int(hi)
        total = int(sizes[lo:hi].sum())
        packed = packed if len(packed) >= total else np.empty(total, np.uint8)
        gather(*read_only((source, offsets[lo:hi], sizes[lo:hi])), packed)
        r_off, r_data = string_buffers(table["ranker"].slice(lo, hi - lo))
        q_off, q_data = string_buffers(table["query_id"].slice(lo, hi - lo))
        n_rows = int(rows[lo:hi].sum())
        bound = 16 + total + int((rows[lo:hi] * (np.diff(r_off) + np.diff(q_off))).sum()) + \
            n_rows * (3 * 21 + 24)
        if len(buffers[k % 2]) < bound:
            buffers[k % 2] = np.empty(bound, np.uint8)
        size = _pool_lines_packed(
            *read_only((packed, rows[lo:hi], r_off, r_data, q_off, q_data)), buffers[k % 2])
        if hashing is not None:
            hashing.result()
        if current is None or int(ranges[lo]) != current[0]:
            if current is not None:
                digests.append(current[1].digest())
                if spill is not None:
                    spill.madvise(mmap.MADV_DONTNEED)  # the range's pages leave this process
            current = (int(ranges[lo]), hashlib.sha256())
        hashing = helper("sha256").submit(current[1].update, buffers[k % 2][:size])
    if hashing is not None:
        hashing.result()
    if current is not None:
        digests.append(current[1].digest())
    return digests


def _packed(blocks: Blocks, buffer: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The blocks' rows packed (each row's doc_id length in 4 bytes, its bytes, its score's
    bits in 8; rows in canonical order within each block), and each block's end."""
    d_off, d_data = blocks.docs
    n = len(d_off) - 1
    need = 12 * n + int(d_off[-1] - d_off[0]) + 16
    buffer = buffer if len(buffer) >= need else np.empty(need, np.uint8)
    return buffer, _pack(*read_only((blocks.starts, blocks.order, d_off, d_data,
                                     blocks.numpy("score").view(np.int64))), buffer)


@njit(cache=True, nogil=True)
def _pack(starts, order, d_off, d_data, bits, out):
    ends = np.empty(len(starts) - 1, np.int64)
    at = 0
    for b in range(len(starts) - 1):
        for t in range(starts[b], starts[b + 1]):
            i = order[t]
            a, n = d_off[i], d_off[i + 1] - d_off[i]
            for k in range(4):
                out[at + k] = (n >> (8 * k)) & 255
            copy_bytes(out, at + 4, d_data, a, n)
            at += 4 + n
            value = bits[i]
            value = 0 if value == _NEGATIVE_ZERO else value  # -0.0 hashes as 0.0
            for k in range(8):
                out[at + k] = (value >> (8 * k)) & 255
            at += 8
        ends[b] = at
    return ends


@njit(cache=True, nogil=True)
def _pool_lines_packed(packed, rows, r_off, r_data, q_off, q_data, out):
    """The canonical lines (hash version 3) of packed blocks, block b of ``rows[b]`` rows with
    ranker and query_id string b; returns the bytes written."""
    at, p = 0, 0
    for b in range(len(rows)):
        for _ in range(rows[b]):
            at = _put_raw(out, at, r_data, r_off[b], r_off[b + 1] - r_off[b])
            out[at] = 9
            at = _put_raw(out, at + 1, q_data, q_off[b], q_off[b + 1] - q_off[b])
            out[at] = 9
            n = 0
            for k in range(4):
                n |= np.int64(packed[p + k]) << (8 * k)
            at = _put_raw(out, at + 1, packed, p + 4, n)
            out[at] = 9
            p += 4 + n
            value = np.int64(0)
            for k in range(8):
                value |= np.int64(packed[p + k]) << (8 * k)
            p += 8
            at = put_int(out, at + 1, value)
            out[at] = 10
            at += 1
    return at


@njit(cache=True, nogil=True, inline="always")
def _put_raw(out, at, data, start, n):
    """``n`` bytes of ``data`` from ``start`` as a field: their length, a colon, the bytes."""
    at = put_int(out, at, n)
    out[at] = 58  # ':'
    copy_bytes(out, at + 1, data, start, n)
    return at + 1 + n


def _sha256(data: np.ndarray) -> bytes:
    return hashlib.sha256(data).digest()


def _judgment_line_ends(blocks: Blocks) -> np.ndarray:
    """The byte offset after each block's lines of a version, the blocks in their own order (a
    pool's come from its packed rows, ``_packed``)."""
    from evaluation_pipeline.metric.kernels.buffers import string_buffers

    queries = string_buffers(blocks.keys["query_id"])[0]
    graded = (blocks.frame["grade_status"] == columns.GRADED).to_numpy()
    grade = blocks.frame["grade"].fill_null(0).to_numpy()
    return _judgment_ends(*read_only((blocks.starts, blocks.order, queries, blocks.docs[0],
                                      grade, graded)), _WORDS[0], _WORDS[1])


@njit(cache=True, nogil=True, inline="always")
def _field(off, i):
    """Bytes of string i as a field of hash version 3: its length, a colon, its bytes."""
    n = off[i + 1] - off[i]
    return n + _digits(n) + 1


@njit(cache=True, nogil=True)
def _judgment_ends(starts, order, q_off, d_off, grade, graded, graded_word, unknown_word):
    ends = np.empty(len(starts) - 1, np.int64)
    at = 0
    for b in range(len(starts) - 1):
        key = _field(q_off, b) + 4  # three tabs and the newline
        for t in range(starts[b], starts[b + 1]):
            i = order[t]
            at += key + _field(d_off, i) + (
                _digits(grade[i]) + graded_word if graded[i] else unknown_word)
        ends[b] = at
    return ends
