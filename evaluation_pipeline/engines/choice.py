"""The ``auto`` engine choice: in memory when that fits the memory budget and is faster,
streaming otherwise.

The in-memory engine reads any format whole and is the faster one while its inputs are small
enough; the streaming engine reads Parquet only, in batches, its peak flat in the input's size.
``auto`` scores Parquet inputs (files, or a pool folder of Parquet run files) in memory when

- the in-memory engine's estimated peak (``in_memory_peak``) is within the memory budget
  (``ingest.external_sort.Budget``: ``--memory-limit``, ``NDCG_EVAL_MEMORY_LIMIT``, else 2 GB), and
- both inputs together hold at most ``IN_MEMORY_MAX_ROWS`` rows, past which streaming is as
  fast (the in-memory engine's allocations then cost it what the streaming stages cost);

and streams them otherwise. CSV and TREC files, and locations on object storage (whose footers
the choice does not read), are scored in memory, and so are tables already held in memory
(the Python API's frames): the in-memory engine reads them in place.

The estimate reads only the Parquet footers: per file, its row count times the width of the
columns the in-memory readers load (8 bytes a number; a string's 16-byte view plus its length,
the mean of the lengths of its row groups' min and max statistics, or its plain-encoded size a
row where that is more), times a measured factor, plus the interpreter's and libraries' own
memory. The factor and the base were fitted to the peaks of both engines on
``benchmarks/generate.py`` files from 3M to 100M run rows (``benchmarks/README.md``, "The engine
choice"), so that the estimate stays some 20% above the peak; past ``IN_MEMORY_MAX_ROWS`` the
streaming engine is as fast.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from evaluation_pipeline.io.budget import Budget
from evaluation_pipeline.io.datasets import is_data_file
from evaluation_pipeline.io.locations import is_remote
from evaluation_pipeline.io.table_inputs import Input, is_table
from schemas.columns import JUDGMENT_COLUMNS, RANK, RUN_COLUMNS

AUTO = "auto"
# Both inputs' rows past which the in-memory engine is no faster (table above: level in CPU
# at 20M run rows with 3.1M judgment rows, behind at 30M).
IN_MEMORY_MAX_ROWS = 20_000_000
IN_MEMORY_BASE_BYTES = 350 * 1000**2  # the interpreter, polars, pyarrow and numba, loaded
IN_MEMORY_FACTOR = 1.0  # peak bytes per byte of estimated column width (measured 0.84)
_VIEW_BYTES = 16  # polars' string view (short strings inline, longer ones beside it)
_FIXED_BYTES = 8
_STRING_BYTES = 32  # a string column's length where the footer has no statistics
_PARQUET = (".parquet", ".pq")
# The columns the in-memory readers load of each input (the run's rank where present).
READ_COLUMNS = {"judgments": JUDGMENT_COLUMNS, "run": (*RUN_COLUMNS, RANK)}


def choose_engine(judgments_path: Input, run_path: Input, *,
                  judgments_format: str | None = None, run_format: str | None = None,
                  budget: Budget | None = None) -> str:
    """``streaming`` or ``local`` for these inputs under ``budget`` (default ``Budget.of()``;
    see the module docstring). A table in memory is read where it is, by ``local``."""
    if is_table(judgments_path) or is_table(run_path):
        return "local"
    if any(fmt not in (None, "parquet") for fmt in (judgments_format, run_format)):
        return "local"
    inputs = {"judgments": _parquet_files(judgments_path), "run": _parquet_files(run_path)}
    if not all(inputs.values()) or any(None in files for files in inputs.values()):
        return "local"
    try:
        footers = {which: [pq.read_metadata(path) for path in files]
                   for which, files in inputs.items()}
    except (OSError, ValueError):
        return "local"  # not readable as Parquet: the in-memory reader says what is wrong
    rows = sum(footer.num_rows for files in footers.values() for footer in files)
    limit = (budget or Budget.of()).memory_limit
    return ("local" if rows <= IN_MEMORY_MAX_ROWS and in_memory_peak(footers) <= limit
            else "streaming")


def in_memory_peak(footers: dict[str, list[pq.FileMetaData]]) -> int:
    """Estimated peak bytes of the in-memory engine on these inputs' files (``judgments``,
    ``run``: their Parquet footers)."""
    return held_peak([(footer, READ_COLUMNS[which], footer.num_rows)
                      for which, files in footers.items() for footer in files])


def held_peak(parts: list[tuple[pq.FileMetaData, tuple[str, ...], int]]) -> int:
    """Estimated peak bytes of a process that holds, of each file (its footer), ``rows`` rows
    of the given columns: the in-memory engine's model, also the increment's
    (``engines.incremental``)."""
    width_bytes = sum(rows * _row_width(footer, columns) for footer, columns, rows in parts)
    return IN_MEMORY_BASE_BYTES + int(IN_MEMORY_FACTOR * width_bytes)


def _row_width(footer: pq.FileMetaData, read: tuple[str, ...]) -> float:
    """Bytes a row of these columns takes in memory. A name column the file leaves out (the
    reader fills it in) takes a view."""
    schema = footer.schema.to_arrow_schema()
    width = 0.0
    for name in read:
        if name not in schema.names:
            width += _VIEW_BYTES if name != RANK else 0
        elif pa.types.is_string(schema.field(name).type) or pa.types.is_large_string(
                schema.field(name).type):
            width += _VIEW_BYTES + _string_length(footer, schema.get_field_index(name))
        else:
            width += _FIXED_BYTES
    return width


def _string_length(footer: pq.FileMetaData, column: int) -> float:
    """The mean length of a string column's values: the mean of its row groups' min and max
    lengths, or more where the column's bytes say so (statistics may be cut short, at 64 bytes
    by polars; a plain-encoded string takes 4 bytes of length besides its own)."""
    lengths, rows, plain = [], 0, 0
    for group in range(footer.num_row_groups):
        chunk = footer.row_group(group).column(column)
        stats = chunk.statistics
        if stats is None or not stats.has_min_max:
            return _STRING_BYTES
        lengths += [len(str(stats.min).encode()), len(str(stats.max).encode())]
        rows += footer.row_group(group).num_rows
        plain += chunk.total_uncompressed_size
    if not lengths:
        return _STRING_BYTES
    return max(sum(lengths) / len(lengths), (plain - 4 * rows) / max(rows, 1))


def _parquet_files(location: str | Path) -> list[Path | None]:
    """The Parquet files of an input, with ``None`` for any file that is not Parquet (or for a
    location that is not a local file or folder: a URL, a missing path)."""
    if (isinstance(location, str) and "://" in location) or is_remote(location):
        return [None]
    path = Path(location)
    if path.is_dir():
        # As the pool readers list a folder: hidden files and markers (_READY) are not runs.
        entries = [p for p in sorted(path.iterdir())
                   if p.is_file() and is_data_file(p.name)]
        return [p if p.suffix.lower() in _PARQUET else None for p in entries]
    return [path if path.is_file() and path.suffix.lower() in _PARQUET else None]
