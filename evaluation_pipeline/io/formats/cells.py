"""What every reader does to a frame once its format is parsed: required columns, cells parsed
as numbers, the version or pool name given to every row, and errors that name the rows.

A row is numbered by its file line when the format has lines (``lines``: the line each row
starts on), else by its position from 1 (Parquet).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import polars as pl

from schemas import InputError
from schemas.errors import MAX_EXAMPLES, violation
from schemas.integers import refuse_out_of_int64
from schemas.names import UnsafeNameError, check_safe_name, is_safe_name

_INTEGER = r"^[+-]?[0-9]+$"


def require(frame, columns, path, lines, hint: str = "") -> None:
    missing = [c for c in columns if c not in frame.columns]
    if not missing:
        return
    header = frame.columns[0] if len(frame.columns) == 1 else ""
    separator = next((sep for sep in ";\t|" if sep in header), None)
    if separator is not None:  # one violation: the fix is the delimiter, not the columns
        raise InputError(str(path), [violation(
            ", ".join(missing),
            f"required columns are missing: the header is one column {header[:80]!r}; "
            f"the file looks separated by {separator!r}: the delimiter must be a comma", [])])
    found = ", ".join(c if len(c) <= 40 else c[:37] + "..." for c in frame.columns[:8])
    found += " ..." if len(frame.columns) > 8 else ""
    raise InputError(
        str(path),
        [violation(c, f"required column is missing (found: {found})"
                   + (f"; {hint}" if hint else ""), []) for c in missing],
    )


def row_numbers(lines: pl.Series | None, mask: pl.Series) -> list[int]:
    index = mask.arg_true()
    return (lines.gather(index) if lines is not None else index + 1).to_list()


def integer_column(frame, column, source, lines, rule) -> pl.Series:
    values = frame[column]
    # Before any cast: a value int64 cannot hold would become null, or raise polars' error.
    refuse_out_of_int64(values, column, source, lines)
    if values.dtype.is_integer():
        return values.cast(pl.Int64)
    if values.dtype.is_float():
        bad = values.is_nan() | (values.is_not_null() & (values != values.floor()))
        if bad.any():
            raise cell_error(source, column, rule, lines, bad, values)
        return values.cast(pl.Int64)
    if values.dtype == pl.String:
        text = values.str.strip_chars()
        text = pl.when(text.str.len_bytes() == 0).then(None).otherwise(text)
        text = pl.select(text).to_series()
        bad = text.is_not_null() & ~text.str.contains(_INTEGER)
        if bad.any():
            raise cell_error(source, column, rule, lines, bad, values)
        return text.cast(pl.Int64, strict=False).rename(column)
    raise InputError(source, [violation(column, f"{rule} (column has type {values.dtype})", [])])


def float_column(frame, column, source, lines, *, text_allowed: bool) -> pl.Series:
    values = frame[column]
    if values.dtype.is_float() or values.dtype.is_integer():
        return values.cast(pl.Float64)
    if values.dtype == pl.String and text_allowed:
        parsed = values.str.strip_chars().cast(pl.Float64, strict=False)
        bad = parsed.is_null() & values.is_not_null()
        if bad.any():
            raise cell_error(source, column, f"{column} must be a number", lines, bad, values)
        return parsed.rename(column)
    raise InputError(
        source,
        [violation(column, f"{column} is stored as {values.dtype}; store it as float64", [])],
    )


def cell_error(source, column, rule, lines, bad: pl.Series, values: pl.Series) -> InputError:
    rows = row_numbers(lines, bad)
    examples = [str(v) for v in values.filter(bad).head(5).to_list()]
    return InputError(source, [violation(column, rule, rows, examples)],
                      row_label="line" if lines is not None else "row")


def with_name_column(frame, column, name, path, lines, what, default=None):
    """Give every row the version or pool name. A file without the column takes ``name``, else
    ``default``; a file with it must hold one safe name, equal to ``name`` when one is asked."""
    source = str(path)
    label = "line" if lines is not None else "row"
    if column not in frame.columns:
        name = name or default
        try:
            check_safe_name(name, what)
        except UnsafeNameError as exc:
            raise InputError(source, [violation(column, str(exc), [])]) from None
        return frame.with_columns(pl.lit(name, dtype=pl.String).alias(column))
    text = pl.col(column).cast(pl.String)
    first, one = frame.lazy().select(
        text.first().alias("first"),
        ((text.null_count() == 0) & (text == text.first()).all()).alias("one"),
    ).collect().row(0)
    if one and (name is None or first == name) and is_safe_name(first):
        # The usual case, checked by expressions: a literal column from the reader stays one.
        return frame.with_columns(text.alias(column))
    values = frame[column].cast(pl.String)
    distinct = values.drop_nulls().unique(maintain_order=True).head(100).to_list()
    unsafe = []
    for value in distinct:
        try:
            check_safe_name(value, what)
        except UnsafeNameError as exc:
            rows = (values == value).fill_null(False)
            unsafe.append(violation(column, str(exc), row_numbers(lines, rows),
                                    values.filter(rows).head(MAX_EXAMPLES).to_list()))
        if len(unsafe) == MAX_EXAMPLES:
            break
    if unsafe:
        raise InputError(source, unsafe, row_label=label)
    present = values.drop_nulls()
    if len(distinct) > 1:
        first = present[0]
        rows = (values != first).fill_null(False)
        raise InputError(source, [violation(
            column, f"one {what} per file: {column} has several values (the first is {first!r})",
            row_numbers(lines, rows), values.filter(rows).head(MAX_EXAMPLES).to_list())],
            row_label=label)
    if name is not None and present.len() and present[0] != name:
        rows = (values != name).fill_null(False)
        raise InputError(source, [violation(
            column, f"the file names a different {what} than the {name!r} asked for",
            row_numbers(lines, rows), values.filter(rows).head(MAX_EXAMPLES).to_list())],
            row_label=label)
    return frame.with_columns(values.alias(column))


def string_ids(frame: pl.DataFrame, columns) -> pl.DataFrame:
    present = [c for c in columns if c in frame.columns]
    return frame.with_columns(pl.col(c).cast(pl.String) for c in present)


@contextmanager
def unreadable_as_input_error(source: str, what: str,
                              explain: Callable[[], InputError | None] = lambda: None
                              ) -> Iterator[None]:
    """Errors of the file reader inside become InputErrors: a missing or empty file, else
    ``explain()`` when it finds the cause, else "``what``: " and the reader's first line."""
    try:
        yield
    except FileNotFoundError:
        raise InputError(source, [violation("(file)", "file not found", [])]) from None
    except pl.exceptions.NoDataError:
        raise InputError(source, [violation("(file)", "file is empty", [])]) from None
    except (pl.exceptions.PolarsError, OSError) as exc:
        cause = explain()
        if cause is not None:
            raise cause from None
        raise InputError(source, [violation("(file)", f"{what}: {first_line(exc)}", [])]) from None


def first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
