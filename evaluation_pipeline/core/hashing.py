"""Content SHA-256 of judgment versions and candidate pools (contract section 1).

The canonical content is one line per row, fields separated by a tab, rows sorted by their key
(byte-wise): judgments ``query_id, doc_id, grade ('' when unknown), grade_status``; pools
``ranker, query_id, doc_id, score`` with the score written as the decimal integer of its IEEE-754
bit pattern (exact, and independent of any float formatting). Optional columns do not count.

The lines are written by compiled kernels (``core.line_kernels``) straight from the blocks the
scorer uses (``core.blocks``), some 64k lines at a time, and fed to hashlib as they come.
"""

from __future__ import annotations

import hashlib

import numpy as np
import polars as pl

from evaluation_pipeline.core.blocks import Blocks, group_rows
from evaluation_pipeline.core.buffers import string_buffers
from evaluation_pipeline.core.threads import helper
from schemas import columns

# A block is one (ranker, query) of a pool, one query of a version: the key without doc_id.
POOL_KEYS = list(columns.POOL_KEY[:-1])
JUDGMENT_KEYS = list(columns.JUDGMENT_KEY[:-1])
# Lines are written and hashed about 64k rows (some 4 MB) at a time: two buffers that size are
# reused from the allocator and stay in cache, where 1M-row buffers were fresh pages each time
# (0.28 s of system time of a 0.9 s hash at 10M rows here).
_CHUNK_ROWS = 65_536


def pool_blocks(pool: pl.DataFrame, starts: np.ndarray | None = None) -> Blocks:
    """A pool's rows as (ranker, query_id) blocks, with the columns the hash and kernel read.

    ``starts``: ``core.blocks.block_starts(pool, POOL_KEYS)``, if the caller has it. A ``rank``
    column comes along when the pool has one (``ties: rank`` reads it; the hash does not)."""
    fields = {**_POOL_FIELDS, columns.RANK: pl.Int64} if columns.RANK in pool.columns else (
        _POOL_FIELDS)
    return group_rows(_typed(pool, fields), POOL_KEYS, starts)


def judgment_blocks(judgments: pl.DataFrame) -> Blocks:
    """A version's rows as query_id blocks."""
    return group_rows(_typed(judgments, _JUDGMENT_FIELDS), JUDGMENT_KEYS)


# The fields of each kind's canonical lines, with the types the lines are written from: every
# column but the lineage ones (the pool's or version's name is not its content).
_POOL_FIELDS = {name: dtype for name, dtype in columns.RUN_DTYPES.items()
                if name not in columns.LINEAGE_COLUMNS}
_JUDGMENT_FIELDS = {name: dtype for name, dtype in columns.JUDGMENT_DTYPES.items()
                    if name not in columns.LINEAGE_COLUMNS}


def _typed(frame: pl.DataFrame, fields: dict) -> pl.DataFrame:
    return frame.select(pl.col(name).cast(dtype) for name, dtype in fields.items())


def pool_sha256(pool: pl.DataFrame | Blocks) -> str:
    digest = hashlib.sha256()
    update_pool(digest, pool if isinstance(pool, Blocks) else pool_blocks(pool))
    return digest.hexdigest()


def judgments_sha256(judgments: pl.DataFrame | Blocks) -> str:
    digest = hashlib.sha256()
    blocks = judgments if isinstance(judgments, Blocks) else judgment_blocks(judgments)
    update_judgments(digest, blocks)
    return digest.hexdigest()


def update_pool(digest, blocks: Blocks) -> None:
    """Feed a pool's canonical lines to ``digest``."""
    # Here, not at the top: numba loads with the first kernel call (see core.kernel).
    from evaluation_pipeline.core.line_kernels import pool_lines

    bits = blocks.numpy("score").view(np.int64)  # -0.0: see line_kernels.pool_lines
    rankers = string_buffers(blocks.keys["ranker"])
    queries = string_buffers(blocks.keys["query_id"])
    _feed(digest, _chunks(blocks), lambda chunk, out: pool_lines(
        chunk, blocks.starts, blocks.order, *rankers, *queries, *blocks.docs, bits, out))


def update_judgments(digest, blocks: Blocks) -> None:
    """Feed a version's canonical lines to ``digest``."""
    from evaluation_pipeline.core.line_kernels import judgment_lines  # see update_pool

    graded = (blocks.frame["grade_status"] == columns.GRADED).to_numpy()
    grade = blocks.frame["grade"].fill_null(0).to_numpy()
    queries = string_buffers(blocks.keys["query_id"])
    _feed(digest, _chunks(blocks), lambda chunk, out: judgment_lines(
        chunk, blocks.starts, blocks.order, *queries, *blocks.docs, grade, graded, out))


def _feed(digest, chunks: list, write) -> None:
    """``digest.update`` with the lines ``write(chunk, buffer) -> (buffer, size)`` of each chunk.

    With several chunks, the lines of one are written while the one before is hashed on a
    helper thread (both release the GIL): SHA-256 alone is about 40% of the work. Two buffers
    take turns; one is reused only after its hash is done."""
    if len(chunks) == 1:
        out, size = write(chunks[0], np.empty(0, np.uint8))
        digest.update(out[:size])
        return
    buffers = [np.empty(0, np.uint8), np.empty(0, np.uint8)]
    hashing = None
    for k, chunk in enumerate(chunks):
        buffers[k % 2], size = write(chunk, buffers[k % 2])
        if hashing is not None:
            hashing.result()
        hashing = helper("sha256").submit(digest.update, buffers[k % 2][:size])
    if hashing is not None:
        hashing.result()


def _chunks(blocks: Blocks):
    """Block numbers in canonical order, about ``_CHUNK_ROWS`` rows at a time: whole blocks,
    none empty (a block longer than a chunk is a chunk of its own)."""
    order = blocks.canonical_blocks()
    rows_before = np.cumsum(np.diff(blocks.starts)[order])
    cuts = np.searchsorted(rows_before, np.arange(_CHUNK_ROWS, rows_before[-1] if len(
        rows_before) else 0, _CHUNK_ROWS), side="right")
    # Cuts falling inside one long block coincide, and one inside the first block is at 0.
    cuts = np.unique(cuts[(cuts > 0) & (cuts < len(order))])
    return np.split(order, cuts) if len(order) else []


class StreamingDigest:
    """The same SHA-256 as :func:`judgments_sha256` / :func:`pool_sha256`, fed in pieces.

    Valid only when the pieces arrive in key order (batches of whole queries of a file sorted
    by its key prefix, or rows fully sorted by key): each piece is put in canonical order, the
    sequence of pieces is not.
    """

    def __init__(self, kind: str) -> None:
        if kind not in ("pool", "judgments"):
            raise ValueError(f"kind must be 'pool' or 'judgments', not {kind!r}")
        self._kind = kind
        self._digest = hashlib.sha256()

    def update(self, piece: pl.DataFrame | Blocks) -> Blocks:
        """Hash one piece; returns its blocks (whose ``duplicate`` flags a repeated key)."""
        if isinstance(piece, pl.DataFrame):
            piece = pool_blocks(piece) if self._kind == "pool" else judgment_blocks(piece)
        (update_pool if self._kind == "pool" else update_judgments)(self._digest, piece)
        return piece

    def hexdigest(self) -> str:
        return self._digest.hexdigest()
