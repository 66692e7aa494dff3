"""Reading for the streaming engine: Parquet batches, read one step ahead on a thread, re-cut so
that no key group (a ranker's query, or a query's judgments) spans two batches."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
from upath import UPath

from evaluation_pipeline.engines.streaming.batch_checks import (
    check_boundary,
    check_sorted,
)
from evaluation_pipeline.io.locations import is_remote
from evaluation_pipeline.metric.kernels.blocks import block_starts
from schemas import InputError
from schemas.columns import RANK
from schemas.errors import violation
from schemas.ranks import RANK_REQUIRED

# The name columns a file may leave out, each a name or a function of the file's path.
Fill = dict[str, str | Callable[[Path], str]]


@dataclass(frozen=True)
class Batch:
    path: Path  # the file the rows come from
    offset: int  # the first row's position in that file, from 0
    frame: pl.DataFrame


@dataclass(frozen=True)
class Groups(Batch):
    """A batch of whole key groups."""

    starts: np.ndarray  # the start row of each key group, then the row count


def batches(paths: list[Path], columns: tuple[str, ...], fill: Fill, batch_rows: int
            ) -> Iterator[Batch]:
    """Each file's batches, absent name columns filled in; the next batch is read on a second
    thread while this one is scored."""
    return read_ahead(read_batches(paths, columns, fill, batch_rows))


def read_ahead(items: Iterator) -> Iterator:
    """``items``, produced one step ahead on a daemon thread (Parquet decoding releases the
    GIL). An exception in the producer is raised here, at the item where it happened."""
    slot: queue.Queue = queue.Queue(maxsize=1)
    stop = threading.Event()
    done = object()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        slot.put((None, item), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            slot.put((None, done))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            slot.put((exc, None))
        finally:
            # Stopped early: close the source, so that a stage it reads from stops as well.
            close = getattr(items, "close", None)
            if close is not None:
                close()

    producer = threading.Thread(target=produce, daemon=True, name="ndcg-read-ahead")
    producer.start()
    try:
        while True:
            error, item = slot.get()
            if error is not None:
                raise error
            if item is done:
                return
            yield item
    finally:
        # Stopped early (bad input, a fallback to sorting): let the producer finish the read
        # it is in, so that no thread is inside Arrow when the interpreter exits.
        stop.set()
        while producer.is_alive():
            try:
                slot.get(timeout=0.1)
            except queue.Empty:
                pass
        producer.join()


def read_batches(paths: list[Path | UPath], columns: tuple[str, ...], fill: Fill,
                 batch_rows: int) -> Iterator[Batch]:
    for path in paths:
        if is_remote(path):
            yield from _remote_batches(path, columns, fill, batch_rows)
            continue
        reader = _parquet_file(path, path)  # the schema and row count; polars reads
        present = _present(reader, path, columns, fill)
        # Each batch is a slice of a lazy scan: polars reads only the row groups (and pages)
        # the slice covers, straight into its own columns. Twice as fast here as pyarrow's
        # batch reader plus a conversion to polars, and it holds less.
        scan = pl.scan_parquet(path, glob=False).select(present)  # the name is not a pattern
        for offset in range(0, reader.metadata.num_rows, batch_rows):
            frame = with_names(scan.slice(offset, batch_rows).collect(), fill, path, present)
            yield Batch(path, offset, frame.select(columns))


def largest_grade(paths: list[Path | UPath], fill: Fill, batch_rows: int) -> int:
    """The largest grade of the version's graded rows (0 without one), read column by column
    ahead of the pass: a window of judgments holds only part of the version."""
    top = 0
    for batch in read_batches(paths, ("grade", "grade_status"), fill, batch_rows):
        graded = batch.frame.filter(pl.col("grade_status") == "graded")["grade"].max()
        top = max(top, int(graded)) if graded is not None else top
    return top


def _remote_batches(path: UPath, columns: tuple[str, ...], fill: Fill, batch_rows: int
                    ) -> Iterator[Batch]:
    """A file on object storage, in batches read by pyarrow over its fsspec file: ranged reads
    of the row groups each batch covers, never the whole file at once."""
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        raise InputError(str(path), [violation("(file)", "file not found", [])]) from None
    with handle:
        reader = _parquet_file(handle, path)
        present = _present(reader, path, columns, fill)
        offset = 0
        for record_batch in reader.iter_batches(batch_size=batch_rows, columns=present):
            frame = with_names(pl.from_arrow(record_batch), fill, path, present)
            yield Batch(path, offset, frame.select(columns))
            offset += record_batch.num_rows


def _parquet_file(source, path) -> pq.ParquetFile:
    """The file's metadata; a missing or unreadable file is bad input, and so is one without
    rows (as the local engine refuses it: an empty ranker file would leave the ranker out, an
    empty judgments file call every query not judged)."""
    try:
        reader = pq.ParquetFile(source)
    except FileNotFoundError:
        raise InputError(str(path), [violation("(file)", "file not found", [])]) from None
    except Exception as exc:  # noqa: BLE001 - any unreadable file is bad input
        raise InputError(str(path), [violation(
            "(file)", f"not a readable Parquet file: {str(exc)[:200]}", [])]) from None
    if reader.metadata.num_rows == 0:
        raise InputError(str(path), [violation("(file)", "Parquet file has no rows", [])])
    return reader


def _present(reader: pq.ParquetFile, path, columns: tuple[str, ...], fill: Fill) -> list[str]:
    """The columns the file holds; a required one that it lacks and no name fills is refused."""
    present = [c for c in columns if c in reader.schema_arrow.names]
    missing = [c for c in columns if c not in present and c not in fill]
    if missing:
        raise InputError(str(path), [violation(
            c, RANK_REQUIRED if c == RANK else "required column is missing", [])
            for c in missing])
    return present


def with_names(frame, fill: Fill, path: Path, present):
    """``frame`` (eager or lazy) with the name columns that its file leaves out."""
    for column, value in fill.items():
        if column not in present:
            name = value(path) if callable(value) else value
            frame = frame.with_columns(pl.lit(name, dtype=pl.String).alias(column))
    return frame


def whole_groups(batches: Iterator[Batch], keys: list[str], what: str, ordered: bool = True
                 ) -> Iterator[Groups]:
    """Re-cut batches so that no key group spans two; raise NotSorted if keys go down.
    ``ordered`` False: input known to be grouped by the keys, in any order of groups
    (``grouping.detect``), whose order is not checked."""
    carry: Batch | None = None
    for batch in batches:
        offset, frame = batch.offset, batch.frame
        if carry is not None and carry.path == batch.path:
            offset, frame = carry.offset, pl.concat([carry.frame, frame])
        elif carry is not None:  # a new file: the previous file's tail is one whole group
            if ordered:
                check_boundary(carry.frame, frame, keys, what)
            yield _one_group(carry)
        carry = None
        starts = block_starts(frame, keys)
        if ordered:
            check_sorted(frame, starts, keys, what)
        last = int(starts[-2]) if len(starts) > 1 else 0
        if last > 0:
            yield Groups(batch.path, offset, frame.slice(0, last), starts[:-1])
        # The tail (part of one group) is copied: a slice would keep the whole batch alive
        # until the next batch is scored.
        carry = Batch(batch.path, offset + last, _copy(frame.slice(last)))
    if carry is not None:
        yield _one_group(carry)


def _one_group(batch: Batch) -> Groups:
    return Groups(batch.path, batch.offset, batch.frame,
                  np.array([0, batch.frame.height], dtype=np.int64))


def _copy(frame: pl.DataFrame) -> pl.DataFrame:
    return pl.from_arrow(frame.to_arrow())
