"""The inputs of the streaming engine: the columns it reads of each, the names a file may leave
out, a run folder's files, and the external sort of an input that is not in key order."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from upath import UPath

from evaluation_pipeline.engines.defaults import DEFAULT_BATCH_ROWS
from evaluation_pipeline.engines.streaming.reading import (
    Fill,
    with_names,
)
from evaluation_pipeline.ingest.external_sort import (
    SortInput,
    groups_by_value,
    sort_parquet,
)
from evaluation_pipeline.io.budget import Budget
from evaluation_pipeline.io.datasets import is_data_file
from evaluation_pipeline.io.formats.cells import with_name_column
from evaluation_pipeline.io.locations import is_remote
from evaluation_pipeline.io.readers import detect_format, read_judgments
from evaluation_pipeline.metric.hashing import JUDGMENT_KEYS, POOL_KEYS
from evaluation_pipeline.spec import EvaluationSpec
from schemas import InputError
from schemas.columns import (
    JUDGMENT_COLUMNS,
    JUDGMENT_KEY,
    POOL_KEY,
    RANK,
    RATER,
    RUN_COLUMNS,
)
from schemas.errors import violation

# Each input's columns and the key prefix it is sorted by, which its batches never split.
COLUMNS = {"run": RUN_COLUMNS, "judgments": JUDGMENT_COLUMNS}
KEYS = {"run": POOL_KEYS, "judgments": JUDGMENT_KEYS}
SORT_KEYS = {"run": POOL_KEY, "judgments": JUDGMENT_KEY}


def input_columns(which: str, spec: EvaluationSpec, rated: bool = False) -> tuple[str, ...]:
    """The columns read of an input: a run's rank too when the spec orders ties by it, a
    version's rater when it has raters."""
    if which == "judgments":
        return (*COLUMNS[which], RATER) if rated else COLUMNS[which]
    return (*COLUMNS[which], RANK) if spec.needs_rank else COLUMNS[which]


def has_raters(path: Path | UPath) -> bool:
    """The judgments file has a rater column (its schema read, no rows)."""
    return rater_ids(path, distinct=False) is not None


def rater_ids(path: Path | UPath, distinct: bool = True) -> list[str] | None:
    """The judgments file's raters (one column read), or None without a rater column."""
    frame = scan(path) if is_remote(path) else pl.scan_parquet(path, glob=False)
    if RATER not in frame.collect_schema().names():
        return None
    return frame.select(pl.col(RATER).unique()).collect()[RATER].to_list() if distinct else []


@dataclass(frozen=True)
class Names:
    judgment_version: str
    candidate_pool: str
    ranker: str | None

    def fill(self, which: str) -> Fill:
        """The names an input's files may leave out: a run file's ranker is its stem."""
        if which == "judgments":
            return {"judgment_version": self.judgment_version}
        return {"candidate_pool": self.candidate_pool,
                "ranker": self.ranker if self.ranker else (lambda path: path.stem)}


def run_files(run_path: Path | UPath) -> list[Path | UPath]:
    if run_path.is_dir():
        files = sorted(p for p in run_path.iterdir() if p.suffix.lower() in (".parquet", ".pq")
                       and is_data_file(p.name))
        if not files:
            raise InputError(str(run_path), [violation(
                "(folder)", "the streaming engine needs at least one .parquet run file", [])])
        return files
    if run_path.suffix.lower() not in (".parquet", ".pq"):
        raise InputError(str(run_path), [violation(
            "(file)", "the streaming engine reads Parquet runs; use the local engine for "
            "CSV and TREC files", [])])
    return [run_path]


def parquet_judgments(path: Path | UPath, version: str | None, scratch: Path) -> Path | UPath:
    """The judgments as a Parquet file the engine streams: ``path`` itself when it is one;
    else (CSV, TREC qrels: a judgment version is small) read whole by the local engine's
    reader, with its checks and messages (``version``: the name asked for, if any), and
    written sorted by key into ``scratch``."""
    if detect_format(path, None) == "parquet":
        check_asked_name([path], "judgment_version", version, "judgment version")
        return path
    frame = read_judgments(path, version=version)
    target = scratch / "judgments.parquet"
    frame.sort(list(SORT_KEYS["judgments"])).write_parquet(target)
    return target


def asked_pool(run_path: Path | UPath, pool: str | None) -> str | None:
    """The pool name a run must carry, as the local engine's reader asks it: --pool, else a
    pool folder's name (a single run file without --pool names its own pool)."""
    return pool or (run_path.name if run_path.is_dir() else None)


def check_asked_name(paths: list[Path | UPath], column: str, asked: str | None,
                     what: str) -> None:
    """Each file that carries ``column`` holds ``asked`` in it, or the file is refused by the
    local engine's own check (``io.formats.cells.with_name_column``): the same error, file,
    column, rule and rows, before a row is scored. The stream checks only that its batches
    agree with each other, so a folder ``otherpool`` whose file says ``bigpool`` was scored
    and labelled ``bigpool``. A file's footer settles the usual case without reading a row;
    otherwise its one column is read a slice at a time, in bounded memory."""
    if asked is None:
        return
    for path in paths:
        if _footer_settles(path, column, asked):
            continue
        for offset, frame in _column_slices(path, column):
            rows = pl.int_range(offset + 1, offset + frame.height + 1, eager=True,
                                dtype=pl.Int64)
            try:
                with_name_column(frame, column, asked, path, rows, what)
            except InputError as exc:
                # Rows of a Parquet file, numbered in the whole file as the local engine
                # numbers them: rows, not the lines of a text file.
                raise dataclasses.replace(exc, row_label="row") from None


def _footer_settles(path: Path | UPath, column: str, asked: str) -> bool:
    """True when the footer shows there is nothing to read: no such column (the file takes the
    name asked), every row group's statistics showing ``asked`` alone and no null, or a footer
    that cannot be read (the stream refuses that file itself, as unreadable)."""
    try:
        if is_remote(path):
            with path.open("rb") as handle:
                metadata = pq.read_metadata(handle)
        else:
            metadata = pq.read_metadata(path)
    except Exception:  # noqa: BLE001 - the stream's reader names what is wrong with the file
        return True
    names = [metadata.schema.column(i).path for i in range(metadata.num_columns)]
    if column not in names:
        return True
    index = names.index(column)
    for group in range(metadata.num_row_groups):
        stats = metadata.row_group(group).column(index).statistics
        if (stats is None or not stats.has_min_max or not stats.has_null_count
                or stats.null_count or stats.min != asked or stats.max != asked):
            return False
    return True


def _column_slices(path: Path | UPath, column: str) -> Iterator[tuple[int, pl.DataFrame]]:
    """(first row from 0, the rows' ``column``) of the file, a batch of rows at a time."""
    source = path.open("rb") if is_remote(path) else str(path)
    try:
        offset = 0
        for batch in pq.ParquetFile(source).iter_batches(batch_size=DEFAULT_BATCH_ROWS,
                                                          columns=[column]):
            yield offset, pl.from_arrow(batch)
            offset += batch.num_rows
    finally:
        if not isinstance(source, str):
            source.close()


def external_sort(which: str, paths: list[Path | UPath], names: Names, scratch: Path,
                   columns: tuple[str, ...], budget: Budget) -> list[Path]:
    """Sort an input by its whole key into local Parquet files that, read one after the other,
    are in key order, out of core.

    Local files go through DuckDB, spilling to the budget's folder; the whole key, not only the
    prefix a batch keeps together, because DuckDB's sort is not stable and the full key makes
    the order a function of the rows alone. A run whose every file holds one ranker is sorted
    ranker by ranker, as ingest sorts a pool. Files on object storage, which DuckDB does not
    read here, go through polars' streaming sort over pyarrow datasets."""
    if any(is_remote(path) for path in paths):
        target = scratch / f"{which}.sorted.parquet"
        frames = []
        for path in paths:
            frame = scan(path)
            present = frame.collect_schema().names()
            frames.append(with_names(frame, names.fill(which), path, present).select(columns))
        pl.concat(frames).sort(list(SORT_KEYS[which]), maintain_order=True).sink_parquet(
            target, engine="streaming")
        return [target]
    inputs = []
    for path in paths:
        present = pl.scan_parquet(path, glob=False).collect_schema().names()
        fill = names.fill(which)
        inputs.append(SortInput(path, {c: v(path) if callable(v) else v
                                       for c, v in fill.items() if c not in present}))
    groups = groups_by_value(inputs, [rankers_of(i) for i in inputs]) if which == "run" else None
    step = f"sorting the {which} input for the streaming engine"
    return [sort_parquet(group, scratch / f"{which}-{number}.sorted.parquet", SORT_KEYS[which],
                         columns=columns, budget=budget, step=step)
            for number, group in enumerate(groups or [inputs])]


def rankers_of(run: SortInput) -> frozenset:
    """The rankers a run file holds: its name for a file without a ranker column, else the
    distinct values of that column (one column read)."""
    if "ranker" in run.constants:
        return frozenset([run.constants["ranker"]])
    found = pl.scan_parquet(run.path, glob=False).select(pl.col("ranker").unique()).collect()
    return frozenset(found["ranker"].to_list())


def scan(path: Path | UPath) -> pl.LazyFrame:
    """A lazy scan of a file on object storage through pyarrow's dataset over its fsspec
    filesystem (read in batches, not whole)."""
    return pl.scan_pyarrow_dataset(ds.dataset(path.path, filesystem=path.fs, format="parquet"))
