"""The landed files of a judgment version or a candidate pool, checked file by file in
bounded memory (pass 1 of ``ingest.publish``): what differs between the two kinds, the
row rules screened in batches (a contract-typed Parquet file's, a CSV file's converted as its
reader converts them), and the refusals worded by the in-memory readers."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import closing, nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from evaluation_pipeline.ingest.external_sort import (
    SortInput,
)
from evaluation_pipeline.io.atomic import naming
from evaluation_pipeline.io.datasets import is_data_file
from evaluation_pipeline.io.readers import (
    csv_parts,
    detect_format,
    judgments_table,
    read_judgments,
    read_run,
    run_table,
)
from evaluation_pipeline.metric.kernels.blocks import sorted_by
from evaluation_pipeline.metric.kernels.threads import helper
from schemas import columns as cols
from schemas import screening
from schemas.errors import InputError, violation

# Rows read back per batch. At ~150 bytes a row this is some 40 MB, a few copies of which
# (Arrow batch, frame, blocks, writer) with the interpreter's ~300 MB fit in the half of a
# budget of 1 GB or more that DuckDB does not get.
BATCH_ROWS = 250_000


@dataclass(frozen=True)
class Kind:
    """What differs between a pool and a judgment version."""

    model: str
    name_column: str
    what: str
    key: tuple[str, ...]  # the canonical sort key; all but the last make a block
    columns: tuple[str, ...]
    dtypes: dict
    digest: str
    read: Callable[..., pl.DataFrame]  # the existing reader: (path, fmt, name, check_keys)
    optional: tuple[str, ...]  # columns a file may lack: the name column, a pool's ranker
    table: Callable[..., pl.DataFrame]  # its reader's conversions of a CSV part


POOL = Kind(
    "CandidatePool", "candidate_pool", "candidate pool", cols.POOL_KEY, cols.RUN_COLUMNS,
    cols.RUN_DTYPES, "pool",
    lambda path, fmt, name, check_keys: read_run(path, fmt, pool=name, check_keys=check_keys),
    ("candidate_pool", "ranker"), run_table,
)
JUDGMENTS = Kind(
    "Judgments", "judgment_version", "judgment version", cols.JUDGMENT_KEY,
    cols.JUDGMENT_COLUMNS, cols.JUDGMENT_DTYPES, "judgments",
    lambda path, fmt, name, check_keys: read_judgments(path, fmt, version=name,
                                                       check_keys=check_keys),
    ("judgment_version",), judgments_table,
)


def run_files(source) -> tuple[list[Path], str]:
    """A pool folder's run files as ``read_pool`` lists them, or the files given."""
    if isinstance(source, (str, Path)) and Path(source).is_dir():
        folder = Path(source)
        files = sorted(p for p in folder.iterdir() if p.is_file()
                       and is_data_file(p.name) and is_run_file(p))
        if not files:
            raise InputError(str(folder), [violation("(folder)", "a pool folder needs at least "
                                                     "one run file (.parquet, .csv, .run)", [])])
        return files, str(folder)
    files = [Path(p) for p in ([source] if isinstance(source, (str, Path)) else source)]
    return files, ", ".join(map(str, files))


def is_run_file(path: Path) -> bool:
    try:
        detect_format(path, None)
    except InputError:
        return False
    return True


# -- the landed bytes, pinned -----------------------------------------------------------------


class LandingChanged(RuntimeError):
    """A landed file replaced or rewritten while it was ingested: the rows screened may not be
    the rows sorted, so nothing is published. Not the input's fault: the next attempt reads
    the file as it is then (and refuses it if it breaks a rule)."""


def identity(path: Path) -> tuple[int, int, int, int]:
    """What changes when a file is replaced (a new inode) or rewritten (size, mtime)."""
    stat = path.stat()
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


def check_unchanged(pins: dict[Path, tuple[int, int, int, int]], what: str) -> None:
    """Refuse to publish when a landed file read twice (screened, then sorted from the
    landing by DuckDB) is not the file it was when screened."""
    for path, pinned in pins.items():
        try:
            now = identity(path)
        except FileNotFoundError:
            now = None
        if now != pinned:
            raise LandingChanged(
                f"{what}: the landed file {str(path)!r} was replaced or rewritten while it was "
                "being ingested; nothing was published (the next attempt reads it again)")


# -- pass 1: row rules, file by file ----------------------------------------------------------


@dataclass(frozen=True)
class Prepared:
    """A checked file: its sort input, the name it establishes, the columns it contributes,
    and (pools) the rankers it holds."""

    input: SortInput
    name: str
    columns: list[str]
    rankers: frozenset[str] = frozenset()
    in_key_order: bool = False  # its rows, as screened, are sorted by the kind's key


def prepare(kind: Kind, path: Path, fmt: str | None, name: str | None, spilled: Path
             ) -> Prepared:
    """Screened in batches when its columns already have the contract's types, or when it is a
    CSV file (converted a part at a time and spilled as Parquet); otherwise, or when a batch
    needs it, read whole by its reader (the in-memory path, one file at a time) and spilled as
    Parquet."""
    found = detect_format(path, fmt)
    if found == "csv":
        return streamed_csv(kind, path, name, spilled) or converted(kind, path, fmt, name,
                                                                    spilled)
    schema = parquet_schema(path) if found == "parquet" else None
    if schema is not None and contract_typed(kind, schema):
        constants = missing_columns(kind, path, schema, name)
        name = constants.get(kind.name_column, name)
        screened = screen_batches(kind, path, fmt, name, constants,
                                  [c for c in cols.RATER_COLUMNS if c in schema])
        if screened is not None:
            columns = [*schema, *(c for c in constants if c not in schema)]
            name, rankers, in_order = screened
            return Prepared(SortInput(path, constants), name,
                             published_columns(kind, columns), rankers, in_order)
    return converted(kind, path, fmt, name, spilled)


def missing_columns(kind: Kind, path: Path, schema: dict, name: str | None) -> dict:
    """The optional columns a contract-typed file lacks, each with the value the readers give
    it: a run file without a ranker column is its file's stem, a version without its name
    column is the asked name, else the file's stem."""
    defaults = {"ranker": path.stem, kind.name_column: name or path.stem}
    return {c: defaults[c] for c in kind.optional if c not in schema}


def converted(kind: Kind, path: Path, fmt: str | None, name: str | None, spilled: Path
               ) -> Prepared:
    """The file read whole by its reader (the in-memory path, one file at a time) and spilled
    as Parquet at ``spilled``."""
    frame = kind.read(path, fmt, name, False)
    name = frame.select(pl.col(kind.name_column).first()).item()
    frame = frame.select(published_columns(kind, frame.columns))
    frame.write_parquet(spilled)
    return Prepared(SortInput(spilled), name, frame.columns, rankers_of(kind, frame))


def streamed_csv(kind: Kind, path: Path, name: str | None, spilled: Path) -> Prepared | None:
    """A CSV file read a part at a time (``readers.csv_parts``), each part converted as its
    reader converts the whole file, screened by the model's rules, and spilled as Parquet at
    ``spilled``: the memory of a part, where the reader holds the file's text, its cells and
    their conversions at once (4.4 GB for a 1.15 GB file). None when a part needs the reader:
    a rule broken (whose message the reader words, reading the file whole), or a file the
    parts do not take (one it cannot parse, one without rows)."""
    tally = _Tally(kind, name)
    try:
        with ParquetAppender(spilled, thread="csv-spill") as out:
            for frame in _converted_parts(kind, path, name):
                if not tally.admits(frame):
                    return None
                out.append(frame.select(tally.columns))
    except _NeedsReader:
        return None
    if not tally.rows:
        return None
    return Prepared(SortInput(spilled), tally.name, tally.columns, frozenset(tally.rankers))


class _NeedsReader(Exception):
    """A part whose fault the reader must word: a cell it refuses, a file polars cannot parse
    (ragged rows, not UTF-8), a file gone."""


def _converted_parts(kind: Kind, path: Path, name: str | None) -> Iterator[pl.DataFrame]:
    """The file's parts, each converted by the kind's reader (``Kind.table``)."""
    with closing(csv_parts(path)) as parts:
        while True:
            try:
                frame = next(parts, None)
                converted = None if frame is None else kind.table(frame, path, name)
            except (InputError, pl.exceptions.PolarsError, OSError) as exc:
                raise _NeedsReader from exc
            if converted is None:
                return
            yield converted


@dataclass
class _Tally:
    """What the parts of a file screened so far establish: the name they hold (the asked one,
    else the first part's), the published columns, the rankers, each rater's kind and the
    rows. The file-wide rules of the reader's model beyond a row's own (one name per file,
    one kind per rater) are kept across parts here."""

    kind: Kind
    name: str | None
    columns: list[str] | None = None
    rankers: set[str] = field(default_factory=set)
    rater_kinds: dict[str, str] = field(default_factory=dict)
    rows: int = 0

    def admits(self, frame: pl.DataFrame) -> bool:
        kind = self.kind
        if kind.name_column not in frame.columns or not frame.height:
            return False
        if self.name is None:
            self.name = frame.select(pl.col(kind.name_column).first()).item()
        columns = published_columns(kind, frame.columns)
        if self.columns is None:
            self.columns = columns
        if not (columns == self.columns
                and screening.screen(kind.model, frame, check_keys=False)
                and holds(frame, (pl.col(kind.name_column) == self.name).all())
                and self._one_kind_per_rater(frame)):
            return False
        self.rankers |= rankers_of(kind, frame)
        self.rows += frame.height
        return True

    def _one_kind_per_rater(self, frame: pl.DataFrame) -> bool:
        if cols.RATER_KIND not in frame.columns or cols.RATER not in frame.columns:
            return True
        pairs = frame.select(cols.RATER, cols.RATER_KIND).unique().iter_rows()
        return all(self.rater_kinds.setdefault(rater, kind) == kind for rater, kind in pairs)


class ParquetAppender:
    """Frames appended to one zstd Parquet file, encoded on a helper thread (``thread``) while
    the caller makes the next batch (Parquet encoding releases the GIL: a third of the hash
    pass, a third of a CSV file's check). At most one frame waits, so memory stays at a couple
    of batches."""

    def __init__(self, path: Path, named: bool = False, thread: str = "parquet-append"
                 ) -> None:
        """``named``: its failures name ``path`` (a file not the target of the write it is
        made in, whose ``atomic_write`` would name its own target)."""
        self._path, self._writer, self._pending, self._named = path, None, None, named
        self._thread, self._schema = thread, None

    def __enter__(self) -> ParquetAppender:
        return self

    def append(self, frame: pl.DataFrame) -> None:
        self._wait()
        self._pending = helper(self._thread).submit(self._write, frame.to_arrow())

    def _write(self, table) -> None:
        if self._writer is None:
            self._schema = table.schema
            self._writer = pq.ParquetWriter(self._path, table.schema, compression="zstd")
        # A name column a reader gave as a literal may come out as another string type.
        self._writer.write_table(table if table.schema.equals(self._schema)
                                 else table.cast(self._schema))

    def _wait(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            with self._naming():
                pending.result()

    def _naming(self):
        return naming(self._path) if self._named else nullcontext()

    def __exit__(self, *exc) -> None:
        try:
            self._wait()
        finally:
            if self._writer is not None:
                with self._naming():
                    self._writer.close()


def rankers_of(kind: Kind, frame: pl.DataFrame) -> frozenset[str]:
    return frozenset(frame["ranker"].unique().to_list()) if kind is POOL else frozenset()


def published_columns(kind: Kind, columns: list[str]) -> list[str]:
    """Pools publish the contract's columns (``read_pool`` selects them); judgment versions
    keep the reader's order, which puts a missing ``judgment_version`` last, and any extras."""
    return list(kind.columns) if kind is POOL else columns


def parquet_schema(path: Path) -> dict | None:
    try:
        schema = pl.scan_parquet(path, glob=False).collect_schema()
        empty = pq.ParquetFile(path).metadata.num_rows == 0
    except (pl.exceptions.PolarsError, OSError):
        return None  # the reader says what is wrong with it
    return None if empty else dict(schema)


def contract_typed(kind: Kind, schema: dict) -> bool:
    """Every contract column present with its contract type (the name column and a pool's
    ranker may be absent), and a display ``rank``, if any, stored as int64."""
    if any(schema.get(c, None if c in kind.optional else False) not in (t, None)
           for c, t in kind.dtypes.items()):
        return False
    if kind is JUDGMENTS and any(schema.get(c, pl.String) != pl.String
                                 for c in cols.RATER_COLUMNS):
        return False
    return schema.get(cols.RANK, pl.Int64) == pl.Int64


def screen_batches(kind: Kind, path: Path, fmt, name: str | None, constants: dict,
                   raters: list[str] = ()) -> tuple[str, frozenset[str], bool] | None:
    """Screen the file a batch at a time: (its name, the rankers it holds, whether its rows are
    in key order), or None when a batch needs the reader's own conversion (a judgment's
    grade_status with padding); a refused batch raises the reader's message for the whole
    file. ``raters``: a version's rater columns."""
    needed = [c for c in kind.dtypes if c not in constants] + list(raters)
    expected = name
    rankers: set[str] = set()
    in_order, last = True, None
    key = list(kind.key)
    for frame in batches(path, needed):
        frame = frame.with_columns(
            pl.lit(v, dtype=pl.String).alias(c) for c, v in constants.items())
        if kind is JUDGMENTS and not holds(frame, (pl.col("grade_status") == pl.col(
                "grade_status").str.strip_chars()).all()):
            return None
        if expected is None:
            expected = frame.select(pl.col(kind.name_column).first()).item()
        if not (screening.screen(kind.model, frame, check_keys=False)
                and holds(frame, (pl.col(kind.name_column) == expected).all())):
            refuse(kind, path, fmt, name)
        rankers |= rankers_of(kind, frame)
        if in_order and frame.height:  # one comparison per row with the row before
            first = tuple(frame.select(key).row(0))
            in_order = (last is None or last < first) and sorted_by(frame.select(key), key)
            last = tuple(frame.select(key).row(-1))
    return expected, frozenset(rankers), in_order


def batches(path: Path, columns: list[str] | None = None) -> Iterator[pl.DataFrame]:
    """A Parquet file's rows in order, some BATCH_ROWS at a time. Polars decodes strings
    straight into its own arrays: a third of the CPU of Arrow batches converted (30M rows)."""
    scan = pl.scan_parquet(path, glob=False)
    return (scan if columns is None else scan.select(columns)).collect_batches(
        chunk_size=BATCH_ROWS)


def holds(frame: pl.DataFrame, rule: pl.Expr) -> bool:
    return bool(frame.select(rule).item())


def refuse(kind: Kind, path: Path, fmt, name: str | None) -> None:
    """Raise the in-memory path's own message for ``path`` (read whole: refusals only)."""
    kind.read(path, fmt, name, True)
    raise InputError(str(path), [violation(kind.name_column, f"one {kind.what} per file: the "
                                           f"file names another {kind.what} than {name!r}", [])])


# -- pass 3: keys, content hash, publishing ---------------------------------------------------


def whole_blocks(frames: Iterable[pl.DataFrame], block_key: list[str]
                  ) -> Iterator[pl.DataFrame]:
    """Rows in key order, in batches that never cut a block: a batch's last block waits for
    the next batch (a (ranker, query_id) block may span many)."""
    carry = None
    for frame in frames:
        frame = frame if carry is None else pl.concat([carry, frame])
        tail = last_block_start(frame, block_key)
        carry = frame.slice(tail)
        if tail:
            yield frame.slice(0, tail)
    if carry is not None and carry.height:
        yield carry


def last_block_start(frame: pl.DataFrame, block_key: list[str]) -> int:
    """The first row of the frame's last block, by binary search on the sorted key columns:
    the last block's first column is a run at the end, within which the next column is
    sorted, and so on. (On rows out of key order the cut may fall inside a block; the block's
    rest then comes after a later block, which ``verify_published`` refuses as out of order.)"""
    start = 0
    for column in block_key:
        values = frame[column].slice(start)
        start += int(values.search_sorted(values[-1], side="left"))
    return start
