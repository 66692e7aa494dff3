"""Sort Parquet files of any size into one Parquet file in key order, under a memory budget.

DuckDB's ``ORDER BY`` runs out of core: past its ``memory_limit`` it spills sorted runs to
``temp_directory`` and merges them. It was chosen by measurement (``benchmarks/external_sort.py``)
over polars' streaming engine (which sorted 30M rows in memory, 3.7 GB, with no spill) and
over sorted runs merged k ways in Python (within budget, but 2.3x to 2.4x DuckDB's wall
time). Strings compare byte-wise (DuckDB's default binary collation), the order of the
contract's canonical keys.

The budget is the whole process's: DuckDB gets a share of it, the rest is left for the
interpreter and for the caller's batches. A sort that cannot finish within it raises
:class:`MemoryBudgetError` naming the step, instead of being killed by the kernel.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from evaluation_pipeline.io.atomic import atomic_write
from evaluation_pipeline.io.budget import (
    # the budget's names, as the ingest's callers import them
    DEFAULT_MEMORY_LIMIT,
    Budget,
    MemoryBudgetError,
    SpillFolderFull,
    configured_folder,
    first_line,
    format_bytes,
    parse_memory_limit,
)

__all__ = ["DEFAULT_MEMORY_LIMIT", "Budget", "MemoryBudgetError", "SortInput",
           "SpillFolderFull", "format_bytes", "groups_by_value", "parse_memory_limit",
           "sort_parquet", "sorted_batches", "spilling"]

# DuckDB's share of the budget: a quarter, or what a large sort needs (sort_floor), at most
# half. The rest is for the process's other memory: the interpreter, a Dagster process between
# steps, and the hash pass that consumes a streamed sort. A small share costs little, since
# spilling is cheap here (benchmarks/README.md, "DuckDB's share of the budget").
DUCKDB_SHARE = 0.25
DUCKDB_MAX_SHARE = 0.5
_MIN_DUCKDB_BYTES = 8 * 1000**2
_SQL_TYPES = {pl.String: "VARCHAR", pl.Float64: "DOUBLE", pl.Int64: "BIGINT"}


@dataclass(frozen=True)
class SortInput:
    """One Parquet file to sort, and ``constants``: columns it lacks, each given one value for
    all its rows (a ranker named after its file, the pool's name)."""

    path: Path
    constants: Mapping[str, str | None] = field(default_factory=dict)  # None: null


def groups_by_value(inputs: Sequence[SortInput], values: Sequence[frozenset]
                    ) -> list[list[SortInput]] | None:
    """The inputs grouped by the one value each holds of a key's first column (``values``:
    each input's distinct values), groups in that value's order; None when an input holds
    none, several, or a null. Sorted one group after the other, the groups are the whole sort:
    sorts a third the size of one whole sort spill less and took two thirds of its time (30M rows, 3
    rankers, one file each). Inputs of the same value are sorted together, so that a key they repeat
    meets in one sorted part."""
    if any(len(held) != 1 or None in held for held in values):
        return None  # (a null is refused later, by the rules of the rows)
    groups: dict[str, list[SortInput]] = {}
    for sort_input, held in zip(inputs, values, strict=True):
        groups.setdefault(next(iter(held)), []).append(sort_input)
    # Python orders str by code point, which is UTF-8's byte order: the contract's.
    return [groups[value] for value in sorted(groups)]


def sort_parquet(
    inputs: Sequence[SortInput | str | Path],
    target: str | Path,
    keys: Sequence[str],
    *,
    columns: Sequence[str] | None = None,
    dtypes: Mapping[str, pl.DataType] | None = None,
    budget: Budget | None = None,
    step: str = "external sort",
) -> Path:
    """Write the rows of every input to ``target`` (one Parquet file, zstd) sorted by ``keys``.

    ``columns``: the output's columns in order (default: the first input's), each read by name
    or taken from the input's ``constants``; ``dtypes`` casts them (String, Float64, Int64).
    ``budget``: default ``Budget.of()``. The file appears atomically (a temporary name beside
    ``target``, then a rename)."""
    import duckdb

    target = Path(target)
    inputs = [i if isinstance(i, SortInput) else SortInput(Path(i)) for i in inputs]
    with spilling(budget or Budget.of(), step, sort_rows=_row_count(inputs)) as connection:
        if columns is None:
            described = connection.execute(
                f"DESCRIBE SELECT * FROM read_parquet({sql_text(inputs[0].path)})").fetchall()
            columns = [row[0] for row in described if row[0] not in inputs[0].constants]
            columns += list(inputs[0].constants)
        query = _sorted_query(inputs, keys, columns, dtypes)

        def write(tmp: Path) -> None:
            try:
                connection.execute(f"COPY ({query}) TO {sql_text(tmp)} "
                                   "(FORMAT parquet, COMPRESSION zstd)")
            except duckdb.IOException as exc:
                # The sorted copy's own file, not the spill (which names DuckDB's temporary
                # files): an OSError, which atomic_write reports naming the target.
                whole = str(exc)
                if tmp.name not in whole or "space" not in whole.lower():  # DuckDB: tmp_<name>
                    raise
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp)) from None

        return atomic_write(target, write)


@contextmanager
def sorted_batches(
    inputs: Sequence[SortInput],
    keys: Sequence[str],
    *,
    columns: Sequence[str],
    dtypes: Mapping[str, pl.DataType] | None = None,
    budget: Budget | None = None,
    step: str = "external sort",
    batch_rows: int = 250_000,
) -> Iterator[Iterator[pl.DataFrame]]:
    """The rows of every input sorted by ``keys``, as frames of ``batch_rows`` rows streamed
    from DuckDB's out-of-core sort while the caller consumes them: no sorted copy is written
    and read back (DuckDB's Parquet writer was a third of a sort to a file). Options as
    ``sort_parquet``; the budget's errors are raised as the batches are read."""
    inputs = list(inputs)
    with spilling(budget or Budget.of(), step, sort_rows=_row_count(inputs)) as connection:
        # Strings as Arrow string views, which polars takes without a copy.
        connection.execute("SET produce_arrow_string_view = true")
        reader = connection.sql(_sorted_query(inputs, keys, columns, dtypes)).to_arrow_reader(
            batch_rows)
        yield _exact_batches((pl.from_arrow(batch) for batch in reader), batch_rows)


def file_batches(source: SortInput, columns: Sequence[str], dtypes: Mapping[str, pl.DataType],
                 batch_rows: int) -> Iterator[pl.DataFrame]:
    """The rows of one file already in key order, as ``sorted_batches`` gives a sort of it:
    ``columns`` in order, constants filled in, cast to ``dtypes``, in frames of exactly
    ``batch_rows`` rows (the last: the rest)."""
    scan = pl.scan_parquet(source.path, glob=False)
    present = scan.collect_schema().names()
    picked = [(pl.lit(source.constants.get(c), dtype=dtypes.get(c, pl.String))
               if c in source.constants or c not in present else pl.col(c))
              .cast(dtypes[c]).alias(c) if c in dtypes else pl.col(c) for c in columns]
    return _exact_batches(scan.select(picked).collect_batches(chunk_size=batch_rows),
                          batch_rows)


def _row_count(inputs: Sequence[SortInput]) -> int:
    """The rows to sort, from the files' footers (a large sort's floor: ``sort_floor``)."""
    return sum(pq.read_metadata(i.path).num_rows for i in inputs)


def _sorted_query(inputs: Sequence[SortInput], keys: Sequence[str], columns: Sequence[str],
                  dtypes: Mapping[str, pl.DataType] | None) -> str:
    """The SQL of every input's rows, with ``columns`` cast to ``dtypes``, ordered by ``keys``."""
    rows = " UNION ALL ".join(_select(i, columns, dtypes or {}) for i in inputs)
    return f"SELECT * FROM ({rows}) ORDER BY {', '.join(_name(k) for k in keys)}"


def _exact_batches(frames: Iterator[pl.DataFrame], rows: int) -> Iterator[pl.DataFrame]:
    """``frames`` cut and joined into frames of exactly ``rows`` rows (the last: the rest).
    DuckDB hands out some 123k rows at a time whatever it is asked for; the batches, and so the
    row groups of what is written from them, are those of a file read ``rows`` at a time."""
    pending: list[pl.DataFrame] = []
    held = 0
    for frame in frames:
        pending.append(frame)
        held += frame.height
        while held >= rows:
            joined = pl.concat(pending, rechunk=False)
            yield joined.slice(0, rows)
            pending, held = [joined.slice(rows)], held - rows
    if held:
        yield pl.concat(pending, rechunk=False)


@contextmanager
def spilling(budget: Budget, step: str, sort_rows: int | None = None):
    """A DuckDB connection held to its share of the budget, spilling under its folder; its
    out-of-memory and out-of-disk errors become :class:`MemoryBudgetError` naming ``step``.
    ``sort_rows``: the rows the connection will sort, if it sorts (see ``duckdb_share``)."""
    import duckdb

    limit = budget.memory_limit
    with budget.scratch("ndcg-eval-spill-") as tmp:
        config = {
            "memory_limit": f"{duckdb_share(limit, sort_rows)}B",
            "temp_directory": tmp,
            # Rows leave in ORDER BY order anyway; without this DuckDB would also keep the
            # input order of ties, which costs memory and which no key here has.
            "preserve_insertion_order": False,
        }
        if budget.max_spill is not None:
            config["max_temp_directory_size"] = f"{budget.max_spill}B"
        connection = duckdb.connect(config=config)
        try:
            yield connection
        except (duckdb.OutOfMemoryException, duckdb.IOException, pa.ArrowException) as exc:
            # A streamed result's errors come through Arrow's reader, as Arrow's errors.
            text = first_line(exc)
            oom = isinstance(exc, duckdb.OutOfMemoryException) or text.startswith(_OUT_OF_MEMORY)
            # DuckDB says "failed to offload" when it may not (or cannot) write its spill.
            if oom and (_OFFLOAD not in text or budget.max_spill == 0):
                raise MemoryBudgetError(step, limit, text) from None
            if not oom and "space" not in str(exc).lower():  # (the first line may be cut)
                raise
            raise SpillFolderFull(step, limit, _users_folder(Path(tmp)), text) from None
        finally:
            connection.close()


_OUT_OF_MEMORY = "Out of Memory Error"  # how DuckDB's message of one starts
_OFFLOAD = "failed to offload"


def _users_folder(scratch: Path) -> Path:
    """The spill folder as configured, above this project's scratch folders in it."""
    return configured_folder(scratch.parent)


def duckdb_share(limit: int, sort_rows: int | None = None) -> int:
    """Bytes DuckDB may hold of a budget of ``limit`` for the whole process: ``DUCKDB_SHARE``
    of it, or what a sort of ``sort_rows`` rows needs at the least if that is more
    (``sort_floor``), within ``DUCKDB_MAX_SHARE``. A budget below what the process already
    holds cannot bound it; DuckDB then gets the largest share, which bounds its own work (the
    tests' budgets of a few dozen MB)."""
    most = int(limit * DUCKDB_MAX_SHARE)
    used = _resident_bytes()
    if used is not None and used >= limit:
        return max(most, _MIN_DUCKDB_BYTES)
    floor = sort_floor(sort_rows) if sort_rows else 0
    return max(min(most, max(int(limit * DUCKDB_SHARE), floor)), _MIN_DUCKDB_BYTES)


def sort_floor(rows: int) -> int:
    """The least memory DuckDB needs to sort ``rows`` rows of a pool or judgments, spilling or
    not, with a margin of two: its merge holds a 256 KiB block per sorted run, and the runs are
    as many as the rows over the memory, so the need grows as the square root of the rows.
    Measured (2 threads, ids of 10 to 25 bytes): 150k rows failed at 24 MB and sorted at 32 MB,
    10M rows failed at 60 MB and sorted at 100 MB, 333M rows failed at 483 MB."""
    return int(_SORT_FLOOR_BASE + 2 * _SORT_FLOOR_PER_ROOT * rows ** 0.5)


_SORT_FLOOR_BASE = 32 * 1000**2
_SORT_FLOOR_PER_ROOT = 25_000  # bytes per square root of a row: 80 MB at 10M rows


def _resident_bytes() -> int | None:
    """This process's resident memory, where the system says it (Linux's /proc)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _select(source: SortInput, columns: Sequence[str], dtypes: Mapping) -> str:
    parts = []
    for column in columns:
        value = (sql_text(source.constants[column]) if column in source.constants
                 else _name(column))
        dtype = dtypes.get(column)
        parts.append(f"CAST({value} AS {_SQL_TYPES[dtype]}) AS {_name(column)}" if dtype
                     else f"{value} AS {_name(column)}")
    return f"SELECT {', '.join(parts)} FROM read_parquet({sql_text(source.path)})"


def _name(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'


def sql_text(value: object) -> str:
    if value is None:
        return "NULL"
    return "'" + str(value).replace("'", "''") + "'"
