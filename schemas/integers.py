"""The contract's integer columns (``grade``, ``rank``) are int64: a value written beyond its
range is refused as itself, before a cast can turn it into something else.

A cast to int64 fails on such a value (a float or unsigned column: polars raises) or, reading
text, makes it null, which the judgments model then reports as a missing grade. This check
runs before either cast and names the rule that is broken: the value does not fit int64.
"""

from __future__ import annotations

import polars as pl

from schemas.errors import InputError, violation

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
_WHOLE_TEXT = r"^[+-]?[0-9]+$"


def out_of_range_rule(column: str) -> str:
    return (f"{column} is out of range: the contract stores {column} as int64, "
            f"from {INT64_MIN} to {INT64_MAX}")


def out_of_int64(values: pl.Series) -> pl.Series:
    """True where a cell holds a number int64 cannot hold: digits beyond its range, an
    infinite or too large float, an unsigned or wider integer above it. Cells that are no
    number at all (NaN, "2.5", "high") are left to the whole-number rule of their reader."""
    dtype = values.dtype
    if dtype == pl.String:
        text = values.str.strip_chars()
        # polars parses every whole number int64 holds; digits it cannot parse do not fit.
        return (text.str.contains(_WHOLE_TEXT) & text.cast(pl.Int64, strict=False).is_null()
                ).fill_null(False)
    if dtype.is_float():
        # 2^63 is the first float above INT64_MAX; -2^63 itself is INT64_MIN.
        return (~values.is_nan() & ((values >= 2.0**63) | (values < -(2.0**63)))
                ).fill_null(False)
    if dtype in _WIDER:
        wide = values.cast(pl.Int128) if dtype != pl.UInt128 else values
        return ((wide > INT64_MAX) | (wide < INT64_MIN)).fill_null(False)
    return pl.repeat(False, len(values), dtype=pl.Boolean, eager=True).rename(values.name)


# Integer types with values beyond int64; every other one fits in it.
_WIDER = (pl.UInt64, pl.Int128, pl.UInt128)


def may_leave_int64(dtype: pl.DataType) -> bool:
    """Whether a column of ``dtype`` can hold a number int64 cannot: an int64 column (the
    usual one) is not read again."""
    return dtype == pl.String or dtype.is_float() or dtype in _WIDER


def refuse_out_of_int64(values: pl.Series, column: str, source: str,
                        lines: pl.Series | None = None, row_label: str | None = None) -> None:
    """Raise :class:`InputError` naming ``source``, ``column``, the rule and the rows (file
    lines when ``lines`` maps rows to them, else rows from 1) with the values as written.
    ``row_label``: what ``lines`` number, when not a text file's lines (a Parquet file's rows
    in a batch)."""
    if not may_leave_int64(values.dtype):
        return
    bad = out_of_int64(values)
    if not bad.any():
        return
    index = bad.arg_true()
    rows = (lines.gather(index) if lines is not None else index + 1).to_list()
    shown = [str(value) for value in values.filter(bad).head(5).to_list()]
    raise InputError(source, [violation(column, out_of_range_rule(column), rows, shown)],
                     row_label=row_label or ("line" if lines is not None else "row"))
