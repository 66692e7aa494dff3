"""Checks on the stream: each batch against its table's rules (``schemas.rules``: the types a
cast keeps, the screen, the model's message), its name against the batches before it, and the
key order the merge relies on (within a batch and across batches)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from evaluation_pipeline.metric.hashing import StreamingDigest, pool_blocks
from evaluation_pipeline.metric.kernels.blocks import Blocks, sorted_by
from schemas import InputError, validate
from schemas.errors import violation
from schemas.integers import may_leave_int64, refuse_out_of_int64
from schemas.ranks import check_ranks
from schemas.rules.pool_rules import CANDIDATE_POOL
from schemas.rules.rule import Table
from schemas.screening import TABLES, rated_model, screen_table


class NotSorted(Exception):
    """An input is not sorted by its key prefix: the stream cannot merge it."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


def check_sorted(frame: pl.DataFrame, starts: np.ndarray, keys: list[str], what: str) -> None:
    """The groups starting at ``starts`` go up: one comparison per group, not per row."""
    if not sorted_by(frame.select(keys).gather(starts[:-1]), keys):
        raise NotSorted(what)


def check_boundary(before: pl.DataFrame, after: pl.DataFrame, keys: list[str], what: str):
    """The first key of ``after`` (a new file) comes after the last one of ``before``."""
    if after.height and before.height:
        if tuple(before[k][-1] for k in keys) >= tuple(after[k][0] for k in keys):
            raise NotSorted(what)


def cast(frame: pl.DataFrame, dtypes: dict) -> pl.DataFrame:
    """``frame`` with the columns of ``dtypes`` cast to their types (the contract's)."""
    return frame.with_columns(pl.col(c).cast(t) for c, t in dtypes.items())


@dataclass(frozen=True)
class RunBatch:
    frame: pl.DataFrame  # checked, and cast to the contract's types
    blocks: Blocks  # its (ranker, query_id) blocks, for the kernel and the pool digest


def check_run(frame: pl.DataFrame, path: Path, offset: int, names: dict,
              starts: np.ndarray, ranks: bool = False) -> RunBatch:
    """The batch checked and cast, with its blocks. ``ranks``: the batch holds the rank column
    the spec orders ties by, checked too (``schemas.ranks``)."""
    frame = _typed(frame, CANDIDATE_POOL, path, offset)  # with rank when the batch holds it
    if ranks:  # whole queries per batch: a repeat within a query is within the batch
        check_ranks(frame, str(path), _file_rows(offset, frame.height), row_label="row")
    # The table's rules; key uniqueness comes from the blocks.
    ok = screen_table(CANDIDATE_POOL, frame, check_keys=False)
    blocks = pool_blocks(frame, starts) if ok else None
    ok = ok and blocks.duplicate < 0  # the blocks' doc_id order puts repeats side by side
    if not ok:
        _explain(CANDIDATE_POOL, frame, path, offset)
    _same_name(frame, CANDIDATE_POOL, names, path)
    return RunBatch(frame, blocks)


def check_judgments(frame: pl.DataFrame, path: Path, offset: int, names: dict,
                    digest: StreamingDigest) -> pl.DataFrame:
    """The batch checked, cast, and fed to the judgments digest."""
    table = TABLES[rated_model("Judgments", frame)]  # a version with raters: their rules too
    frame = _typed(frame, table, path, offset)
    ok = screen_table(table, frame, check_keys=False)  # key uniqueness: the digest's blocks
    ok = ok and digest.update(frame).duplicate < 0
    if not ok:
        _explain(table, frame, path, offset)
    _same_name(frame, table, names, path)
    return frame


def _typed(frame: pl.DataFrame, table: Table, path: Path, offset: int) -> pl.DataFrame:
    """The batch with ``table``'s columns cast to their types. A number column must hold
    numbers a cast keeps (an integer one, integers or nothing but nulls when it may be null);
    an integer beyond int64 is refused as written."""
    columns = [c for c in table.columns if c.name in frame.columns]
    for column in columns:
        stored = frame[column.name].dtype
        if not column.dtype.is_numeric():
            continue
        whole = column.dtype.is_integer()
        kept = stored.is_numeric() and (stored.is_integer() or not whole)
        if not kept and not (column.nullable
                             and frame[column.name].null_count() == frame.height):
            raise InputError(str(path), [violation(
                column.name, f"{column.name} is stored as {stored}; store it as "
                f"{str(column.dtype).lower()}", [])])
        if whole:
            _refuse_out_of_int64(frame, column.name, path, offset)
    return cast(frame, {c.name: c.dtype for c in columns})


def _refuse_out_of_int64(frame: pl.DataFrame, column: str, path: Path, offset: int) -> None:
    """A uint64 value above int64 is refused as written (``schemas.integers``): the cast to
    the contract's int64 would fail with polars' own error. An int64 column is not read."""
    if may_leave_int64(frame[column].dtype):
        refuse_out_of_int64(frame[column], column, str(path), _file_rows(offset, frame.height),
                            row_label="row")


def _same_name(frame: pl.DataFrame, table: Table, names: dict, path: Path) -> None:
    """The batch's name is the one of every batch before it, of every file. That the batch
    holds one safe name is the table's rule, which its screen has checked."""
    rule = table.one_name
    name = frame[rule.column][0]
    first = names.setdefault(rule.column, name)
    if name != first:
        raise InputError(str(path), [violation(
            rule.column, f"one {rule.what} per input: found {first!r} and {name!r}", [])])


def _explain(table: Table, frame: pl.DataFrame, path: Path, offset: int):
    """Let the pandera model name the failing rows (numbered in the whole file)."""
    validate(table.name, frame, str(path), line_numbers=_file_rows(offset, frame.height),
             row_label="row")
    raise InputError(str(path), [violation("(batch)", "failed a streamed check that the "
                                           f"{table.name} model accepts", [])])


def _file_rows(offset: int, height: int) -> pl.Series:
    """The batch's rows numbered in the whole file, from 1 (a Parquet file has no lines)."""
    return pl.int_range(offset + 1, offset + height + 1, eager=True, dtype=pl.Int64)
