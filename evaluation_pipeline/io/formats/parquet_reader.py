"""Parquet tables: typed columns, rows numbered by position (a Parquet file has no lines)."""

from __future__ import annotations

import io
from pathlib import Path

import polars as pl
from upath import UPath

from evaluation_pipeline.io.formats.cells import unreadable_as_input_error
from evaluation_pipeline.io.locations import is_remote
from schemas import InputError
from schemas.errors import violation


def read_parquet_table(path: Path | UPath, constant: tuple[str, ...] = (),
                       unread: dict | None = None) -> pl.DataFrame:
    """The file's rows. ``constant``: columns that usually hold one value (a pool's name, its
    one ranker); ``unread``: columns left out when stored with the given type; see
    ``_read_parquet``."""
    source = str(path)
    with unreadable_as_input_error(source, "not a readable Parquet file"):
        # On object storage the file is fetched once, through its filesystem and options (the
        # whole table is read anyway); polars then reads it from memory like a local file.
        data = path.read_bytes() if is_remote(path) else None
        frame = _read_parquet(path if data is None else (lambda: io.BytesIO(data)),
                              constant, unread or {})
    if frame.height == 0:
        raise InputError(source, [violation("(file)", "Parquet file has no rows", [])])
    return frame


def _read_parquet(path, constant: tuple[str, ...], unread: dict) -> pl.DataFrame:
    """A Parquet file's rows (``path``: a local file, or a function giving a fresh in-memory
    copy). A string column of ``constant`` that holds one value and no null
    comes back as a literal column, which polars keeps unmaterialized: finding that out is one
    aggregate pass, cheaper than building ten million copies of the name as strings. A column
    of ``unread`` stored with the type given there is left out."""
    def source():
        return path() if callable(path) else path

    scan = pl.scan_parquet(source(), glob=False)  # "[", "*", "?" are legal in names: no glob
    names = {c: t for c, t in scan.collect_schema().items() if unread.get(c) != t}
    strings = [c for c in constant if names.get(c) == pl.String]
    if not strings:
        return pl.read_parquet(source(), columns=list(names), glob=False)
    facts = scan.select(
        *(pl.col(c).first().alias(f"first {c}") for c in strings),
        *(((pl.col(c).null_count() == 0) & (pl.col(c) == pl.col(c).first()).all())
          .alias(f"one {c}") for c in strings),
    ).collect().row(0, named=True)
    literal = {c: facts[f"first {c}"] for c in strings if facts[f"one {c}"]}
    rest = [c for c in names if c not in literal]
    frame = pl.read_parquet(source(), columns=rest, glob=False)
    return frame.with_columns(
        pl.lit(v, dtype=pl.String).alias(c) for c, v in literal.items()).select(list(names))
