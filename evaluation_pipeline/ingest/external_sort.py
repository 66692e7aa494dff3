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
import re
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from evaluation_pipeline import settings
from evaluation_pipeline.io import leftovers
from evaluation_pipeline.io.atomic import WriteFailed, atomic_write, is_full_disk, spill_scratch
from schemas.errors import EvaluationError

DEFAULT_MEMORY_LIMIT = 2 * 1000**3  # "2GB"
# DuckDB's share of the budget: a quarter, or what a large sort needs (sort_floor), at most
# half. The rest is for the process's other memory: the interpreter, a Dagster process between
# steps, and the hash pass that consumes a streamed sort. A small share costs little, since
# spilling is cheap here (benchmarks/README.md, "DuckDB's share of the budget").
DUCKDB_SHARE = 0.25
DUCKDB_MAX_SHARE = 0.5
_MIN_DUCKDB_BYTES = 8 * 1000**2
_MIN_LIMIT = 16 * 1000**2

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3,
          "gb": 1000**3, "t": 1000**4, "tb": 1000**4, "kib": 1024, "mib": 1024**2,
          "gib": 1024**3, "tib": 1024**4}
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-z]*)\s*$", re.I)
_SQL_TYPES = {pl.String: "VARCHAR", pl.Float64: "DOUBLE", pl.Int64: "BIGINT"}


class MemoryBudgetError(EvaluationError):
    """A step that cannot finish within the memory budget (or its spill folder)."""

    def __init__(self, step: str, limit: int, detail: str) -> None:
        self.step, self.limit = step, limit
        super().__init__(
            f"{step}: cannot finish within the memory budget of {format_bytes(limit)} "
            f"({detail}). Raise it with --memory-limit or {settings.MEMORY_LIMIT.name} (e.g. 4GB), or "
            f"point {settings.SPILL_DIR.name} at a folder with more free disk.")


class SpillFolderFull(MemoryBudgetError):
    """A sort that spilled until its spill folder's disk (or its cap) was full."""

    def __init__(self, step: str, limit: int, folder: Path, detail: str) -> None:
        self.step, self.limit, self.folder = step, limit, folder
        try:
            free = f"{format_bytes(shutil.disk_usage(folder).free)} free now"
        except OSError:
            free = "its free space unknown"
        EvaluationError.__init__(
            self, f"{step}: the spill folder {str(folder)!r} is full ({free}; {detail}). Point "
            f"--spill-dir or {settings.SPILL_DIR.name} (the memory resource's spill_dir) at a "
            "folder with more free disk, free some there, or raise --memory-limit or "
            f"{settings.MEMORY_LIMIT.name} so that less spills.")


def parse_memory_limit(text: str | int | None) -> int:
    """Bytes of a budget written by a person: ``"2GB"``, ``"512MB"``, ``"1.5G"``, ``"4GiB"``,
    ``"1000000"``. KB, MB, GB, TB (and K, M, G, T) are powers of 1000; KiB, MiB, GiB, TiB of
    1024. ``None`` or ``""``: ``NDCG_EVAL_MEMORY_LIMIT``, else 2 GB."""
    named = "memory limit"
    if text is None or (isinstance(text, str) and not text.strip()):
        if settings.MEMORY_LIMIT.get():
            named = settings.MEMORY_LIMIT.name
        text = settings.MEMORY_LIMIT.get() or DEFAULT_MEMORY_LIMIT
    if isinstance(text, int):
        value = text
    else:
        match = _SIZE.match(text)
        unit = match.group(2).lower() if match else None
        if unit not in _UNITS:
            raise EvaluationError(f"{named} {text!r} is not a size: write e.g. 2GB, "
                                  "512MB, 1.5GB or 4GiB")
        value = int(float(match.group(1)) * _UNITS[unit])
    if value < _MIN_LIMIT:
        raise EvaluationError(f"{named} {text!r} is below {format_bytes(_MIN_LIMIT)}: "
                              "too small for any step")
    return value


def format_bytes(size: int) -> str:
    for unit, scale in (("GB", 1000**3), ("MB", 1000**2)):
        if size >= scale:
            return f"{size / scale:.3g}{unit}"
    return f"{size}B"


@dataclass(frozen=True)
class Budget:
    """The memory a step may use (bytes, for the whole process), the folder it may spill to,
    and at most how many bytes it may spill (``None``: the folder's free disk)."""

    memory_limit: int
    spill_dir: Path
    max_spill: int | None = None

    @classmethod
    def of(cls, memory_limit: int | str | None = None, spill_dir: str | Path | None = None,
           max_spill: int | None = None) -> Budget:
        """From options as given (``--memory-limit``, a resource field), each falling back to
        ``NDCG_EVAL_MEMORY_LIMIT`` (else 2 GB) and ``NDCG_EVAL_SPILL_DIR`` (else the system's
        temporary folder)."""
        folder = Path(spill_dir or settings.SPILL_DIR.get() or tempfile.gettempdir())
        return cls(parse_memory_limit(memory_limit), folder, max_spill)

    def check_spill_dir(self) -> None:
        """Refuse a spill folder that is a file, or that cannot be created or written, before
        any step runs (it is created only when a step spills)."""
        existing = self.spill_dir
        while not existing.exists() and existing.parent != existing:
            existing = existing.parent
        if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
            raise EvaluationError(
                f"spill folder {str(self.spill_dir)!r} cannot be written: "
                f"{str(existing)!r} is not a writable folder (--spill-dir, {settings.SPILL_DIR.name})")

    @contextmanager
    def scratch(self, prefix: str) -> Iterator[str]:
        """A temporary folder under the spill folder (created if missing), removed on exit;
        held while in use, so that the next run removes it if this one is killed
        (io.leftovers)."""
        with (leftovers.scratch_folder(prefix, self.spill_dir) as folder,
              spill_scratch(folder, self._full)):
            yield str(folder)

    def _full(self, error: OSError, place: str) -> SpillFolderFull:
        """A file bound for ``place`` that the spill folder's full disk stopped: the spill
        folder's error (``io.atomic.named_in``), not a write of ``place``'s."""
        return SpillFolderFull(f"staging {place}", self.memory_limit,
                               configured_folder(self.spill_dir), _reason(error))

    @contextmanager
    def spill_writes(self, step: str, keep: Path | None = None) -> Iterator[None]:
        """The block's files written under the spill folder fail for its full disk as
        :class:`SpillFolderFull` naming it, not as a write of the file they are for (polars'
        bare ``ComputeError``, or the published file's name). ``keep``: a file whose failure
        stays a ``WriteFailed`` of its own, for its caller to name."""
        try:
            yield
        except (OSError, pl.exceptions.PolarsError, pa.ArrowException) as exc:
            spilled = (not isinstance(exc, WriteFailed)
                       or (_inside(Path(exc.filename), self.spill_dir)
                           and Path(exc.filename) != keep))
            if not (spilled and is_full_disk(exc)):
                raise
            raise SpillFolderFull(step, self.memory_limit, configured_folder(self.spill_dir),
                                  _reason(exc)) from None


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
    none, several, or a null. Sorted one group after the other, the groups are the whole sort: sorts a
    third the size of one whole sort spill less and took two thirds of its time (30M rows, 3
    rankers, one file each). Inputs of the same value are sorted together, so that a key they
    repeat meets in one sorted part."""
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
            text = _first_line(exc)
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


def configured_folder(folder: Path) -> Path:
    """``folder``, or the spill folder it is a scratch folder of (a sort's budget spills in
    the ingest's scratch folder)."""
    while folder.name.startswith(leftovers.SCRATCH_PREFIXES) and folder.parent != folder:
        folder = folder.parent
    return folder


def _reason(error: BaseException) -> str:
    """Why a write failed, without the scratch file's name a ``WriteFailed`` carries."""
    return (error.strerror if isinstance(error, OSError) and error.strerror
            else _first_line(error))


def _inside(path: Path, folder: Path) -> bool:
    return os.path.realpath(path).startswith(os.path.realpath(folder) + os.sep)


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


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0][:300]
