"""CSV tables: every cell read as a string (a bad value is reported as itself, "2.5" or "high",
not as a failed cast), rows numbered by the file line they start on."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import polars as pl

from evaluation_pipeline.io.formats.cells import unreadable_as_input_error
from evaluation_pipeline.io.formats.text import read_text
from evaluation_pipeline.io.locations import is_remote
from schemas import InputError
from schemas.errors import violation


def read_csv_table(path: Path) -> tuple[pl.DataFrame, pl.Series]:
    """The file's rows, and the line each starts on."""
    source = str(path)
    text = None

    def ragged() -> InputError | None:  # the usual cause of a row polars cannot split
        found = _ragged_record(text) if text is not None else None
        if found is None:
            return None
        line, fields, expected, shown = found
        return InputError(source, [violation(
            "(line)", f"a row has {fields} fields where the header has {expected}; quote "
            "cells that hold a comma", [line], [shown])], row_label="line")

    with unreadable_as_input_error(source, "not a readable CSV file", ragged):
        text = read_text(path)
        # On object storage the text already fetched is parsed, rather than fetched again.
        readable = io.BytesIO(text.encode("utf-8")) if is_remote(path) else path
        frame = pl.read_csv(readable, infer_schema=False, encoding="utf8", raise_if_empty=True,
                            glob=False)
    frame = frame.rename({c: c.strip().lstrip("\ufeff") for c in frame.columns})
    if frame.height == 0:
        raise InputError(source, [violation("(file)", "file has a header but no rows", [])])
    return frame, _csv_line_numbers(text, frame.height)


def _csv_line_numbers(text: str, height: int) -> pl.Series:
    """The file line each data row starts on. With one record per line, data row i (0-based)
    sits on line i + 2 (the header is line 1); a quoted cell holding a line break moves every
    later row down, so then the records are walked to find where each starts."""
    physical = text.count("\n") + (0 if text.endswith("\n") else 1)
    simple = pl.Series("line", range(2, height + 2), dtype=pl.Int64)
    if physical == height + 1 or '"' not in text:
        return simple
    reader = csv.reader(io.StringIO(text, newline=""))
    starts, previous = [], 0
    for _ in reader:
        starts.append(previous + 1)
        previous = reader.line_num
    starts = starts[1:]  # the header
    if len(starts) != height:  # the two parsers disagree: keep the simple numbering
        return simple
    return pl.Series("line", starts, dtype=pl.Int64)


def _ragged_record(text: str) -> tuple[int, int, int, str] | None:
    """The first record with more fields than the header: (line, fields, header fields, text)."""
    reader = csv.reader(io.StringIO(text, newline=""))
    header, previous = None, 0
    for record in reader:
        if header is None:
            header = record
        elif len(record) > len(header):
            return previous + 1, len(record), len(header), ",".join(record)
        previous = reader.line_num
    return None
