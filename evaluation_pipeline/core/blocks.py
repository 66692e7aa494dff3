"""Rows cut into key blocks (a run's (ranker, query_id), a version's query_id), each block's
rows ordered by doc_id: the shape both the kernel and the content hash walk.

Built once per input and shared: the scoring kernel merges each block with its query's
judgments in doc_id order, and the content hash writes the same rows as canonical lines.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from evaluation_pipeline.core import kernel
from evaluation_pipeline.core.buffers import string_set


@dataclass(frozen=True)
class Blocks:
    frame: pl.DataFrame  # the rows, each block contiguous
    keys: pl.DataFrame  # the key columns of each block, in block order
    starts: np.ndarray  # int64: block b is rows starts[b]:starts[b+1]
    docs: tuple  # doc_id as a string set (core.buffers.string_set)
    order: np.ndarray  # row numbers, each block's rows by doc_id (UTF-8 bytes)
    duplicate: int  # a row whose keys and doc_id repeat another row's, or -1

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
        return self.frame.select(*self.keys.columns, "doc_id").row(self.duplicate, named=True)


def group_rows(frame: pl.DataFrame, keys: list[str]) -> Blocks:
    """``frame`` (with ``keys`` and ``doc_id``) as blocks of equal keys.

    A ranker's output and a canonical version already come grouped, and then nothing moves;
    other input is sorted by the keys once (a string sort, the one expensive step this avoids
    in the common case).
    """
    grouped = _with_block_ids(frame, keys)
    block_keys = _block_keys(grouped, keys)
    if block_keys.is_duplicated().any():
        grouped = _with_block_ids(frame.sort(keys, maintain_order=True), keys)
        block_keys = _block_keys(grouped, keys)
    block = grouped["__block"].to_numpy()
    starts = np.r_[np.flatnonzero(np.r_[True, block[1:] != block[:-1]]) if len(block) else
                   np.zeros(0, np.int64), len(block)].astype(np.int64)
    grouped = grouped.drop("__block")
    docs = string_set(grouped["doc_id"])
    order, duplicate = kernel.key_order(starts, docs)
    return Blocks(grouped, block_keys, starts, docs, order, int(duplicate))


def _with_block_ids(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    # A block starts where any key changes.
    changed = pl.lit(False)
    for k in keys:
        changed = changed | (pl.col(k).rle_id().diff() != 0)
    return frame.with_columns(changed.fill_null(False).cum_sum().cast(pl.Int64).alias("__block"))


def _block_keys(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The keys of each block, in block order (a filter: cheaper than a gather)."""
    first = pl.col("__block") != pl.col("__block").shift(1, fill_value=-1)
    return frame.lazy().filter(first).select(keys).collect()


def sorted_by(frame: pl.DataFrame, keys: list[str]) -> bool:
    """Rows are in non-decreasing (byte-wise) order of the key tuple."""
    later = pl.lit(False)
    equal_so_far = pl.lit(True)
    for k in keys:
        previous = pl.col(k).shift(1)
        later = later | (equal_so_far & (pl.col(k) > previous))
        equal_so_far = equal_so_far & (pl.col(k) == previous)
    return bool(frame.select((later | equal_so_far).slice(1).all()).item())
