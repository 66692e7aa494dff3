"""Content SHA-256 of judgment versions and candidate pools (contract section 1).

The canonical content is one line per row, fields separated by a tab, rows sorted by their key
(byte-wise): judgments ``query_id, doc_id, grade ('' when unknown), grade_status``; pools
``ranker, query_id, doc_id, score`` with the score written as the decimal integer of its IEEE-754
bit pattern (exact, and independent of any float formatting). Optional columns do not count.

Hash version 3 writes every string field after its byte length and a colon
(``7:query-1``), so that no id, whatever bytes it holds (a tab, a newline), can make two
contents one text; versions 1 and 2 wrote the fields bare. Hash versions 2 and 3 cut the lines
into ranges of whole blocks, so that ranges can be hashed apart (on Spark's executors) and
combined in order: a block (one (ranker, query_id) of a pool, one query_id of a version) belongs to
range ``rows before it in canonical order // RANGE_ROWS``; each range's lines are hashed with
SHA-256, and the content hash is the SHA-256 of the version's tag (``VERSION_TAGS``) followed by the
32-byte digests of the ranges that hold rows, in range order.
Versions 1 (one SHA-256 of all lines) and 2 are kept (``sha256_of(..., version=...)``) to
compare with what was published under them (a manifest without ``hash_version`` holds 1).

The lines are written by compiled kernels (``metric.kernels.lines``) straight from the blocks the
scorer uses (``metric.kernels.blocks``), some 64k lines at a time, and fed to hashlib as they come.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import polars as pl

from evaluation_pipeline.metric.kernels.blocks import RATED_DOC, Blocks, group_rows
from evaluation_pipeline.metric.kernels.buffers import string_buffers
from evaluation_pipeline.metric.kernels.threads import helper
from schemas import columns

# A block is one (ranker, query) of a pool, one query of a version: the key without doc_id.
POOL_KEYS = list(columns.POOL_KEY[:-1])
JUDGMENT_KEYS = list(columns.JUDGMENT_KEY[:-1])
# Lines are written and hashed about 64k rows (some 4 MB) at a time: two buffers that size are
# reused from the allocator and stay in cache, where 1M-row buffers were fresh pages each time
# (0.28 s of system time of a 0.9 s hash at 10M rows here).
_CHUNK_ROWS = 65_536

# The content hash's version (contract section 1), recorded beside every published hash.
HASH_VERSION = 3
VERSIONS = (1, 2, 3)
# What the combined hash of each ranged version starts with.
VERSION_TAGS = {2: b"ndcg-eval content hash v2\n", 3: b"ndcg-eval content hash v3\n"}
# Rows per range of hash version 2: part of the hash's definition, never tuned. Some 60 MB of
# lines, a few SHA-256 calls of a chunk each, and few enough digests for the driver to combine.
RANGE_ROWS = 1_048_576


def checked_kind(kind: str) -> str:
    """``kind``, when it names what a content hash is taken of: "pool" or "judgments"."""
    if kind not in ("pool", "judgments"):
        raise ValueError(f"kind must be 'pool' or 'judgments', not {kind!r}")
    return kind


def blocks_of(kind: str, piece: pl.DataFrame | Blocks) -> Blocks:
    """A piece fed to a digest of ``kind`` as blocks: a frame is cut (its blocks'
    ``duplicate`` flags a repeated key), blocks are taken as they are."""
    if isinstance(piece, Blocks):
        return piece
    return pool_blocks(piece) if kind == "pool" else judgment_blocks(piece)


def pool_blocks(pool: pl.DataFrame, starts: np.ndarray | None = None) -> Blocks:
    """A pool's rows as (ranker, query_id) blocks, with the columns the hash and kernel read.

    ``starts``: ``metric.kernels.blocks.block_starts(pool, POOL_KEYS)``, if the caller has it. A
    ``rank`` column comes along when the pool has one (``ties: rank`` reads it; the hash does
    not)."""
    fields = {**_POOL_FIELDS, columns.RANK: pl.Int64} if columns.RANK in pool.columns else (
        _POOL_FIELDS)
    return group_rows(_typed(pool, fields), POOL_KEYS, starts)


def judgment_blocks(judgments: pl.DataFrame) -> Blocks:
    """A version's rows as query_id blocks. In a version with raters each row is one rating:
    its line's doc_id field is ``rating_field`` (doc_id and rater), which is also what a
    repeated key repeats; ``RATED_DOC`` and ``rater`` keep the rating's own columns."""
    if columns.RATER not in judgments.columns:
        return group_rows(_typed(judgments, _JUDGMENT_FIELDS), JUDGMENT_KEYS)
    rated = _typed(judgments, {**_JUDGMENT_FIELDS, columns.RATER: pl.String})
    return group_rows(rated.with_columns(
        pl.col("doc_id").alias(RATED_DOC), rating_field("doc_id", columns.RATER).alias("doc_id")),
        JUDGMENT_KEYS)


def rating_field(doc_id: str, rater: str) -> pl.Expr:
    """A rating's doc_id field (contract section 1): its doc_id and its rater, each after its
    byte length and a colon, joined by a tab, so that no two (doc_id, rater) give one field."""
    return pl.concat_str(pl.col(doc_id).str.len_bytes().cast(pl.String), pl.lit(":"),
                         pl.col(doc_id), pl.lit("\t"), pl.col(rater).str.len_bytes().cast(
                             pl.String), pl.lit(":"), pl.col(rater))


# The fields of each kind's canonical lines, with the types the lines are written from: every
# column but the lineage ones (the pool's or version's name is not its content).
_POOL_FIELDS = {name: dtype for name, dtype in columns.RUN_DTYPES.items()
                if name not in columns.LINEAGE_COLUMNS}
_JUDGMENT_FIELDS = {name: dtype for name, dtype in columns.JUDGMENT_DTYPES.items()
                    if name not in columns.LINEAGE_COLUMNS}


def _typed(frame: pl.DataFrame, fields: dict) -> pl.DataFrame:
    return frame.select(pl.col(name).cast(dtype) for name, dtype in fields.items())


def pool_sha256(pool: pl.DataFrame | Blocks) -> str:
    return sha256_of("pool", pool)


def judgments_sha256(judgments: pl.DataFrame | Blocks) -> str:
    return sha256_of("judgments", judgments)


def sha256_of(kind: str, frame: pl.DataFrame | Blocks, version: int = HASH_VERSION) -> str:
    """The content hash of ``kind`` ("pool" or "judgments") in hash ``version`` (1 or 2)."""
    digest = StreamingDigest(kind, version)
    digest.update(frame)
    return digest.hexdigest()


def range_digest(kind: str, frame: pl.DataFrame | Blocks, version: int = HASH_VERSION) -> bytes:
    """The 32-byte SHA-256 of one range's lines: ``frame`` holds its rows (whole blocks)."""
    blocks = blocks_of(kind, frame)
    digest = hashlib.sha256()
    update_lines(digest, kind, blocks, version)
    return digest.digest()


def combine(range_digests, version: int = HASH_VERSION) -> str:
    """The content hash from the digests of the ranges that hold rows, in range order."""
    digest = hashlib.sha256(VERSION_TAGS[version])
    for piece in range_digests:
        digest.update(piece)
    return digest.hexdigest()


def update_lines(digest, kind: str, blocks: Blocks, version: int = HASH_VERSION) -> None:
    """Feed ``blocks``' canonical lines, in canonical order, to ``digest``."""
    chunks = _chunks(blocks)
    _feed(chunks, [0] * len(chunks), _writer(kind, blocks, version), lambda number: digest)


def _writer(kind: str, blocks: Blocks, version: int = HASH_VERSION):
    """``write(chunk, buffer) -> (buffer, size)``: the canonical lines of a chunk's blocks
    (from version 3 on, each string field after its length: versions 1 and 2 wrote the
    fields bare, so that a tab or newline inside an id could make two contents one line)."""
    # Here, not at the top: numba loads with the first kernel call (see metric.kernels.loading).
    from evaluation_pipeline.metric.kernels.lines import judgment_lines, pool_lines
    from evaluation_pipeline.metric.kernels.loading import read_only

    prefixed = version >= 3
    queries = string_buffers(blocks.keys["query_id"])
    if kind == "pool":
        bits = read_only(blocks.numpy("score").view(np.int64))  # -0.0: see line_kernels.pool_lines
        rankers = string_buffers(blocks.keys["ranker"])
        return lambda chunk, out: pool_lines(
            chunk, blocks.starts, blocks.order, *rankers, *queries, *blocks.docs, bits, out,
            prefixed)
    graded = (blocks.frame["grade_status"] == columns.GRADED).to_numpy()
    grade = read_only(blocks.frame["grade"].fill_null(0).to_numpy())
    return lambda chunk, out: judgment_lines(
        chunk, blocks.starts, blocks.order, *queries, *blocks.docs, grade, graded, out,
        prefixed)


def _feed(chunks: list, ranges: list, write, digest_for) -> None:
    """Hash the lines ``write(chunk, buffer) -> (buffer, size)`` of each chunk with
    ``digest_for(its range)``, chunk after chunk.

    With several chunks, the lines of one are written while the one before is hashed on a
    helper thread (both release the GIL): SHA-256 alone is about 40% of the work. Two buffers
    take turns; one is reused only after its hash is done, and ``digest_for`` is called once
    the chunk before is hashed (it may close that chunk's range)."""
    if len(chunks) == 1:
        out, size = write(chunks[0], np.empty(0, np.uint8))
        digest_for(ranges[0]).update(out[:size])
        return
    buffers = [np.empty(0, np.uint8), np.empty(0, np.uint8)]
    hashing = None
    for k, (chunk, number) in enumerate(zip(chunks, ranges)):
        buffers[k % 2], size = write(chunk, buffers[k % 2])
        if hashing is not None:
            hashing.result()
        hashing = helper("sha256").submit(digest_for(number).update, buffers[k % 2][:size])
    if hashing is not None:
        hashing.result()


def _chunks(blocks: Blocks, order: np.ndarray | None = None, ranges: np.ndarray | None = None):
    """Block numbers in canonical order (``order``, default ``blocks.canonical_blocks()``),
    about ``_CHUNK_ROWS`` rows at a time: whole blocks, none empty (a block longer than a chunk
    is a chunk of its own), and none spanning two ``ranges`` (each block's range number)."""
    order = blocks.canonical_blocks() if order is None else order
    rows_before = np.cumsum(np.diff(blocks.starts)[order])
    cuts = np.searchsorted(rows_before, np.arange(_CHUNK_ROWS, rows_before[-1] if len(
        rows_before) else 0, _CHUNK_ROWS), side="right")
    if ranges is not None:
        cuts = np.concatenate([cuts, np.flatnonzero(np.diff(ranges)) + 1])
    # Cuts falling inside one long block coincide, and one inside the first block is at 0.
    cuts = np.unique(cuts[(cuts > 0) & (cuts < len(order))])
    return np.split(order, cuts) if len(order) else []


class StreamingDigest:
    """The content hash of :func:`judgments_sha256` / :func:`pool_sha256`, fed in pieces.

    Valid only when the pieces arrive in key order (batches of whole queries of a file sorted
    by its key prefix, or rows fully sorted by key, cut anywhere): each piece is put in
    canonical order, the sequence of pieces is not. A range closes when a block starts past
    the next multiple of ``RANGE_ROWS`` rows; a piece starting with the block the piece before
    ended with continues that block, in its range. ``version`` 1: one SHA-256 of all lines.
    """

    def __init__(self, kind: str, version: int = HASH_VERSION) -> None:
        if version not in VERSIONS:
            raise ValueError(f"unknown content hash version {version!r}")
        self._kind, self._version = checked_kind(kind), version
        self._rows = 0  # rows hashed so far
        self._range = -1  # the number of the open range
        self._open = None  # its SHA-256
        self._closed: list[bytes] = []  # the digests of the ranges before it
        self._last_key = None  # the key of the last block hashed

    def update(self, piece: pl.DataFrame | Blocks) -> Blocks:
        """Hash one piece; returns its blocks (whose ``duplicate`` flags a repeated key)."""
        piece = blocks_of(self._kind, piece)
        if not piece.n_blocks:
            return piece
        order = piece.canonical_blocks()
        sizes = np.diff(piece.starts)[order]
        ranges = (self._rows + np.cumsum(sizes) - sizes) // RANGE_ROWS
        if piece.keys.row(int(order[0])) == self._last_key:
            ranges[0] = self._range
        chunks = _chunks(piece, order, ranges)
        firsts = np.cumsum([0] + [len(chunk) for chunk in chunks[:-1]])
        _feed(chunks, ranges[firsts].tolist(), _writer(self._kind, piece, self._version),
              self._digest_for)
        self._rows += int(sizes.sum())
        self._last_key = piece.keys.row(int(order[-1]))
        return piece

    def _digest_for(self, number: int):
        if number != self._range and (self._version != 1 or self._open is None):
            if self._open is not None:
                self._closed.append(self._open.digest())
            self._range, self._open = number, hashlib.sha256()
        return self._open

    def hexdigest(self) -> str:
        if self._version == 1:
            return (self._open or hashlib.sha256()).hexdigest()
        return combine(self._closed + ([self._open.digest()] if self._open is not None else []),
                       self._version)


@dataclass(frozen=True)
class KnownHashes:
    """Content hashes an engine need not compute again: of inputs whose bytes are proven to be
    the very bytes hashed to them (a published file checked against the stamp its publish
    took, ``io.integrity``). Each one given is what the lineage names; None is computed."""

    judgments: str | None = None
    pool: str | None = None


class KnownDigest:
    """A :class:`StreamingDigest` whose hash is already known: it is fed the same pieces and
    hashes none, but still cuts a frame into blocks, whose ``duplicate`` the checks read."""

    def __init__(self, kind: str, sha256: str) -> None:
        self._kind, self._sha256 = checked_kind(kind), sha256

    def update(self, piece: pl.DataFrame | Blocks) -> Blocks:
        return blocks_of(self._kind, piece)

    def hexdigest(self) -> str:
        return self._sha256
