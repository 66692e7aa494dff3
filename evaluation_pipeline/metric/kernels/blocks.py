"""Rows cut into key blocks (a run's (ranker, query_id), a version's query_id), each block's
rows ordered by doc_id: the shape both the kernel and the content hash walk.

Built once per input and shared: the scoring kernel merges each block with its query's
judgments in doc_id order, and the content hash writes the same rows as canonical lines.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from evaluation_pipeline.metric.kernels.buffers import string_buffers
from evaluation_pipeline.metric.kernels.threads import helper

# A version with raters: the rating's own doc_id, beside the doc_id field its line is keyed by
# (``metric.hashing.judgment_blocks``).
RATED_DOC = "rated_doc_id"

@dataclass(frozen=True)
class Blocks:
    frame: pl.DataFrame  # the rows, each block contiguous
    keys: pl.DataFrame  # the key columns of each block, in block order
    starts: np.ndarray  # int64: block b is rows starts[b]:starts[b+1]
    docs: tuple  # doc_id as (offsets, data): see metric.kernels.buffers.string_buffers
    order: np.ndarray  # row numbers, each block's rows by doc_id (UTF-8 bytes)
    duplicate: int  # a row whose keys and doc_id repeat another row's, or -1
    # Columns as numpy arrays, made once: a column read in pieces is copied by each to_numpy
    # (80 MB of scores at 10M rows), and the kernel and the hash both read the scores, from two
    # threads that start together: the lock keeps the second from making its own copy.
    _arrays: dict = field(default_factory=dict, compare=False, repr=False)
    _arrays_lock: threading.Lock = field(default_factory=threading.Lock, compare=False,
                                         repr=False)

    def numpy(self, column: str) -> np.ndarray:
        """``frame[column]`` as one numpy array, made on first use."""
        array = self._arrays.get(column)
        if array is None:
            with self._arrays_lock:
                array = self._arrays.get(column)
                if array is None:
                    array = self._arrays[column] = self.frame[column].to_numpy()
        return array

    @property
    def n_blocks(self) -> int:
        return len(self.starts) - 1

    def canonical_blocks(self) -> np.ndarray:
        """Block numbers in byte-wise order of their keys (the canonical line order)."""
        numbered = self.keys.with_row_index("block")
        columns = self.keys.columns
        if sorted_by(self.keys, columns):
            return np.arange(self.n_blocks, dtype=np.int64)
        return numbered.sort(columns)["block"].to_numpy().astype(np.int64)

    def duplicate_key(self) -> dict | None:
        """The keys and doc_id of a repeated row, for an error message."""
        if self.duplicate < 0:
            return None
        if RATED_DOC in self.frame.columns:  # a rating: its own doc_id, and its rater
            return self.frame.select(*self.keys.columns, pl.col(RATED_DOC).alias("doc_id"),
                                     "rater").row(self.duplicate, named=True)
        return self.frame.select(*self.keys.columns, "doc_id").row(self.duplicate, named=True)


def group_rows(frame: pl.DataFrame, keys: list[str], starts: np.ndarray | None = None
               ) -> Blocks:
    """``frame`` (with ``keys`` and ``doc_id``) as blocks of equal keys.

    A ranker's output and a canonical version already come grouped, and then nothing moves;
    other input is sorted by the keys once (a string sort, the one expensive step this avoids
    in the common case). ``starts``: ``block_starts(frame, keys)``, if the caller has it.
    """
    starts = block_starts(frame, keys) if starts is None else starts
    block_keys = frame.select(keys).gather(starts[:-1])
    if block_keys.is_duplicated().any():
        frame = frame.sort(keys, maintain_order=True)
        starts = block_starts(frame, keys)
        block_keys = frame.select(keys).gather(starts[:-1])
    docs, order, duplicate = order_documents(starts, frame["doc_id"])
    return Blocks(frame, block_keys, starts, docs, order, duplicate)


def order_documents(starts: np.ndarray, doc_id: pl.Series) -> tuple[tuple, np.ndarray, int]:
    """(string set, order, duplicate) of ``doc_id`` cut at ``starts``: see ``Blocks``.

    A large input is done in two halves of its blocks, the second on a helper thread: the
    compiled loops release the GIL, and each half writes only its own rows."""
    # Here, not at the top: numba loads with the first kernel call (see metric.kernels.loading).
    from evaluation_pipeline.metric.kernels.strings import key_order

    docs = string_buffers(doc_id)
    n = len(docs[0]) - 1
    # scratch is touched only where rows share their first 16 bytes: its pages mostly stay unmade.
    order, scratch = np.empty(n, np.int64), np.empty(n, np.int64)

    def part(b_lo: int, b_hi: int) -> int:
        return key_order(starts, docs, b_lo, b_hi, order, scratch)

    n_blocks = len(starts) - 1
    if n < _SPLIT_ROWS or n_blocks < 2:
        return docs, order, int(part(0, n_blocks))
    middle = min(max(int(np.searchsorted(starts, n // 2)), 1), n_blocks - 1)
    second = helper("order-documents").submit(part, middle, n_blocks)
    first, later = part(0, middle), second.result()
    return docs, order, int(first if first >= 0 else later)


_SPLIT_ROWS = 1_000_000  # below this a second thread saves less than it costs


def block_starts(frame: pl.DataFrame, keys: list[str]) -> np.ndarray:
    """First row of each run of equal keys, then the row count (int64)."""
    if frame.height == 0:
        return np.array([0], dtype=np.int64)
    # A row starts a block where any key differs from the row before. Run lazily: the streaming
    # engine does this comparison several times faster than an eager select or rle_id here.
    changed = pl.any_horizontal([pl.col(k) != pl.col(k).shift(1) for k in keys])
    first = frame.lazy().select(changed.fill_null(True).arg_true()).collect().to_series()
    return np.r_[first.to_numpy(), frame.height].astype(np.int64)


def sorted_by(frame: pl.DataFrame, keys: list[str]) -> bool:
    """Rows are in non-decreasing (byte-wise) order of the key tuple."""
    later = pl.lit(False)
    equal_so_far = pl.lit(True)
    for k in keys:
        previous = pl.col(k).shift(1)
        later = later | (equal_so_far & (pl.col(k) > previous))
        equal_so_far = equal_so_far & (pl.col(k) == previous)
    return bool(frame.select((later | equal_so_far).slice(1).all()).item())
