"""Readers for judgment versions, candidate pools and queries: Parquet, CSV and TREC files.

Every reader returns a frame validated by its pandera model, with the contract's column names
and types, or raises :class:`schemas.InputError` naming the file, column, rule and rows.
Text formats are read as strings first so that a bad value is reported as itself ("2.5",
"NaN", "high") rather than as a failed cast.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import polars as pl

from schemas import InputError, validate
from schemas.errors import MAX_EXAMPLES, UNKNOWN_HINT, violation
from schemas.names import UnsafeNameError, check_safe_name, is_safe_name

FORMATS = ("parquet", "csv", "trec")
_EXTENSIONS = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".csv": "csv",
    ".qrels": "trec",
    ".run": "trec",
    ".trec": "trec",
    ".txt": "trec",
}
_INTEGER = r"^[+-]?[0-9]+$"


def detect_format(path: Path, fmt: str | None) -> str:
    if fmt is not None:
        if fmt not in FORMATS:
            raise InputError(str(path), [violation("(file)", f"format {fmt!r} is not one of "
                                                   f"{', '.join(FORMATS)}", [])])
        return fmt
    found = _EXTENSIONS.get(path.suffix.lower())
    if found is None:
        raise InputError(
            str(path),
            [violation("(file)", f"cannot tell the format from the extension {path.suffix!r}; "
                       f"name it .parquet, .csv, .qrels or .run, or pass --format", [])],
        )
    return found


# -- public readers ---------------------------------------------------------------------------


def read_judgments(path: str | Path, fmt: str | None = None, version: str | None = None,
                   check_keys: bool = True) -> pl.DataFrame:
    """A judgment version. Without a ``judgment_version`` column the name is ``version`` or the
    file's stem. TREC qrels map ``rel < 0`` ("in pool, not judged") to ``grade_status=unknown``.

    ``check_keys=False`` leaves the uniqueness of (query_id, doc_id) to the caller, as for
    ``read_run``."""
    path = Path(path)
    fmt = detect_format(path, fmt)
    if fmt == "trec":
        frame, lines = _read_trec(path, ["query_id", "iteration", "doc_id", "rel"])
        rel = _integer_column(frame, "rel", str(path), lines, "TREC rel must be an integer")
        frame = frame.with_columns(
            pl.when(rel >= 0).then(rel).otherwise(None).alias("grade"),
            pl.when(rel >= 0).then(pl.lit("graded")).otherwise(pl.lit("unknown")).alias("grade_status"),
        ).drop("iteration", "rel")
    else:
        frame, lines = _read_table(path, fmt, constant=("judgment_version",))
        _require(frame, ["query_id", "doc_id", "grade", "grade_status"], path, lines,
                 hint=f"every row states grade_status; {UNKNOWN_HINT}")
        grade = _integer_column(frame, "grade", str(path), lines,
                                f"grade must be a whole number; {UNKNOWN_HINT}")
        frame = frame.with_columns(grade.alias("grade"),
                                   pl.col("grade_status").cast(pl.String).str.strip_chars())
    frame = _with_name_column(frame, "judgment_version", version, path, lines, "judgment version",
                              default=path.stem)
    frame = _string_ids(frame, ["query_id", "doc_id"])
    return validate("Judgments", frame, str(path), line_numbers=lines, check_keys=check_keys)


def read_run(
    path: str | Path,
    fmt: str | None = None,
    pool: str | None = None,
    ranker: str | None = None,
    check_keys: bool = True,
    display: bool = True,
) -> pl.DataFrame:
    """One ranker's (or several rankers') candidates with scores.

    ``check_keys=False`` leaves the uniqueness of (ranker, query_id, doc_id) to the caller
    (scoring finds repeats as it orders each query's documents, then reads again with it on).
    ``display=False`` leaves out the display-only ``rank`` of a Parquet file when it is stored
    as int64, where no value can break its rule (scoring never reads it).

    TREC runs map ``qid Q0 docno rank score tag`` (extra trailing fields ignored), tag to
    ``ranker``. Without a ``ranker`` column the name is ``ranker`` or the file's stem; without a
    ``candidate_pool`` column it is ``pool`` or the name of the file's folder.
    """
    path = Path(path)
    fmt = detect_format(path, fmt)
    if fmt == "trec":
        frame, lines = _read_trec(path, ["query_id", "q0", "doc_id", "rank", "score", "ranker"])
        frame = frame.drop("q0")
        if ranker is not None:
            frame = frame.with_columns(pl.lit(ranker).alias("ranker"))
    else:
        frame, lines = _read_table(path, fmt, constant=("candidate_pool", "ranker"),
                                   unread={} if display else {"rank": pl.Int64})
        _require(frame, ["query_id", "doc_id", "score"], path, lines)
        if "ranker" not in frame.columns:
            frame = frame.with_columns(pl.lit(ranker or path.stem).alias("ranker"))
    score = _float_column(frame, "score", str(path), lines, text_allowed=fmt != "parquet")
    frame = frame.with_columns(score.alias("score"))
    if "rank" in frame.columns:
        frame = frame.with_columns(
            _integer_column(frame, "rank", str(path), lines, "rank must be a whole number")
            .alias("rank")
        )
    frame = _with_name_column(frame, "candidate_pool", pool, path, lines, "candidate pool",
                              default=path.parent.name)
    frame = _string_ids(frame, ["ranker", "query_id", "doc_id"])
    return validate("CandidatePool", frame, str(path), line_numbers=lines, check_keys=check_keys)


def read_pool(folder: str | Path, pool: str | None = None, fmt: str | None = None,
              check_keys: bool = True) -> pl.DataFrame:
    """A candidate pool folder: one run file per ranker (``*.parquet``, ``*.csv``, ``*.run``)."""
    folder = Path(folder)
    files = sorted(
        p for p in folder.iterdir()
        if p.is_file() and not p.name.startswith(("_", ".")) and p.suffix.lower() in _EXTENSIONS
    )
    if not files:
        raise InputError(str(folder), [violation("(folder)", "a pool folder needs at least one "
                                                 "run file (.parquet, .csv, .run)", [])])
    name = pool or folder.name
    runs = [read_run(p, fmt=fmt, pool=name, check_keys=check_keys) for p in files]
    columns = ["candidate_pool", "ranker", "query_id", "doc_id", "score"]
    frame = pl.concat([r.select(columns) for r in runs], how="vertical")
    # Each file was validated alone; a ranker split over two files could still repeat a row.
    return validate("CandidatePool", frame, str(folder), check_keys=check_keys)


def read_candidates(
    path: str | Path, fmt: str | None = None, pool: str | None = None, ranker: str | None = None,
    check_keys: bool = True, display: bool = True,
) -> pl.DataFrame:
    """A run file, or a pool folder with one run file per ranker (``read_run``)."""
    path = Path(path)
    if path.is_dir():
        return read_pool(path, pool=pool, fmt=fmt, check_keys=check_keys)
    return read_run(path, fmt, pool=pool, ranker=ranker, check_keys=check_keys, display=display)


def read_queries(path: str | Path, fmt: str | None = None) -> pl.DataFrame:
    """Query weights (traffic) and string slice columns; ``weight`` defaults to 1 when absent."""
    path = Path(path)
    fmt = detect_format(path, fmt)
    if fmt == "trec":
        raise InputError(str(path), [violation("(file)", "queries come as Parquet or CSV", [])])
    frame, lines = _read_table(path, fmt)
    if "weight" in frame.columns:
        weight = _float_column(frame, "weight", str(path), lines, text_allowed=fmt != "parquet")
    else:
        weight = pl.Series("weight", [1.0] * frame.height)
    frame = _string_ids(frame.with_columns(weight.alias("weight")), ["query_id"])
    return validate("Queries", frame, str(path), line_numbers=lines)


# -- file formats -----------------------------------------------------------------------------


def _read_table(path: Path, fmt: str, constant: tuple[str, ...] = (), unread: dict | None = None,
                ) -> tuple[pl.DataFrame, pl.Series | None]:
    """The file's rows, and for text files the line each starts on. Parquet only:
    ``constant``, columns that usually hold one value (a pool's name, its one ranker), and
    ``unread``, columns left out when stored with the given type; see ``_read_parquet``."""
    source = str(path)
    text = None
    try:
        if fmt == "parquet":
            frame = _read_parquet(path, constant, unread or {})
            if frame.height == 0:
                raise InputError(source, [violation("(file)", "Parquet file has no rows", [])])
            return frame, None
        text = _check_utf8(path)
        frame = pl.read_csv(path, infer_schema=False, encoding="utf8", raise_if_empty=True,
                            glob=False)
    except FileNotFoundError:
        raise InputError(source, [violation("(file)", "file not found", [])]) from None
    except pl.exceptions.NoDataError:
        raise InputError(source, [violation("(file)", "file is empty", [])]) from None
    except (pl.exceptions.PolarsError, OSError) as exc:
        ragged = _ragged_record(text) if text is not None else None
        if ragged is not None:
            line, found, expected, shown = ragged
            raise InputError(source, [violation(
                "(line)", f"a row has {found} fields where the header has {expected}; quote "
                "cells that hold a comma", [line], [shown])], row_label="line") from None
        what = "not a readable Parquet file" if fmt == "parquet" else "not a readable CSV file"
        raise InputError(source, [violation("(file)", f"{what}: {_first_line(exc)}", [])]) from None
    frame = frame.rename({c: c.strip().lstrip("\ufeff") for c in frame.columns})
    if frame.height == 0:
        raise InputError(source, [violation("(file)", "file has a header but no rows", [])])
    return frame, _csv_line_numbers(text, frame.height)


def _read_parquet(path: Path, constant: tuple[str, ...], unread: dict) -> pl.DataFrame:
    """A Parquet file's rows. A string column of ``constant`` that holds one value and no null
    comes back as a literal column, which polars keeps unmaterialized: finding that out is one
    aggregate pass, cheaper than building ten million copies of the name as strings. A column
    of ``unread`` stored with the type given there is left out."""
    scan = pl.scan_parquet(path, glob=False)  # "[", "*", "?" are legal in names: no glob
    names = {c: t for c, t in scan.collect_schema().items() if unread.get(c) != t}
    strings = [c for c in constant if names.get(c) == pl.String]
    if not strings:
        return pl.read_parquet(path, columns=list(names), glob=False)
    facts = scan.select(
        *(pl.col(c).first().alias(f"first {c}") for c in strings),
        *(((pl.col(c).null_count() == 0) & (pl.col(c) == pl.col(c).first()).all())
          .alias(f"one {c}") for c in strings),
    ).collect().row(0, named=True)
    literal = {c: facts[f"first {c}"] for c in strings if facts[f"one {c}"]}
    rest = [c for c in names if c not in literal]
    frame = pl.read_parquet(path, columns=rest, glob=False)
    return frame.with_columns(
        pl.lit(v, dtype=pl.String).alias(c) for c, v in literal.items()).select(list(names))


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


def _read_trec(path: Path, fields: list[str]) -> tuple[pl.DataFrame, pl.Series]:
    """Whitespace-separated fields; ``#`` comment lines and blank lines are skipped."""
    text = _check_utf8(path, fields)
    lines = pl.Series("text", [text]).str.split("\n").explode().str.strip_chars_end("\r")
    frame = pl.DataFrame({"text": lines, "line": pl.int_range(1, len(lines) + 1, eager=True)})
    frame = frame.filter(
        pl.col("text").str.strip_chars().str.len_bytes() > 0,
        ~pl.col("text").str.strip_chars_start().str.starts_with("#"),
    )
    if frame.height == 0:
        raise InputError(str(path), [violation("(file)", "file has no data lines", [])])
    pattern = r"^\s*" + r"\s+".join([r"(\S+)"] * len(fields))
    parsed = frame.select(
        pl.col("text").str.extract_groups(pattern).struct.rename_fields(fields).alias("f"),
        "line",
        "text",
    ).unnest("f")
    short = parsed.filter(pl.col(fields[0]).is_null())
    if short.height:
        raise InputError(
            str(path),
            [violation("(line)", f"a TREC line needs at least {len(fields)} whitespace-separated "
                       f"fields ({' '.join(fields)})", short["line"].to_list(),
                       [t[:60] for t in short["text"].head(5).to_list()])],
            row_label="line",
        )
    return parsed.drop("text", "line"), parsed["line"]


def _check_utf8(path: Path, fields: list[str] | None = None) -> str:
    """The file's text. Bytes that are not UTF-8 are reported with their line and column: the
    CSV header names the columns, or ``fields`` the whitespace-separated fields of a TREC line."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(str(path), [violation("(file)", "file not found", [])]) from None
    except IsADirectoryError:
        raise InputError(str(path), [violation("(file)", "is a folder, not a file", [])]) from None
    if not data.strip():
        raise InputError(str(path), [violation("(file)", "file is empty", [])])
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1
        end = data.find(b"\n", exc.start)
        end = len(data) if end < 0 else end
        line = data.count(b"\n", 0, exc.start) + 1
        column = _column_at(data, start, exc.start, fields, line)
        shown = data[start:min(end, start + 120)].decode("utf-8", errors="replace").rstrip("\r")
        raise InputError(
            str(path),
            [violation(column, f"not UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start}; "
                       "save the file as UTF-8 (e.g. it looks like latin-1 or cp1252)",
                       [line], [shown])],
            row_label="line",
        ) from None


def _column_at(data: bytes, line_start: int, offset: int, fields: list[str] | None,
               line: int) -> str:
    """Name of the column holding byte ``offset``; "(line)" when it cannot be told."""
    before = data[line_start:offset].decode("utf-8", errors="replace")
    if fields is not None:  # TREC: whitespace-separated
        index = len(before.split()) - (0 if not before or before[-1].isspace() else 1)
        return fields[index] if 0 <= index < len(fields) else "(line)"
    if line == 1:
        return "(header)"
    header_end = data.find(b"\n")
    header = data[:header_end].decode("utf-8", errors="replace").lstrip("\ufeff").rstrip("\r")
    names = next(csv.reader([header]), [])
    index = max(len(next(csv.reader([before]), [])) - 1, 0)
    return names[index].strip() if index < len(names) else "(line)"


# -- columns ----------------------------------------------------------------------------------


def _require(frame, columns, path, lines, hint: str = "") -> None:
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


def _row_numbers(lines: pl.Series | None, mask: pl.Series) -> list[int]:
    index = mask.arg_true()
    return (lines.gather(index) if lines is not None else index + 1).to_list()


def _integer_column(frame, column, source, lines, rule) -> pl.Series:
    values = frame[column]
    if values.dtype.is_integer():
        return values.cast(pl.Int64)
    if values.dtype.is_float():
        bad = values.is_nan() | (values.is_not_null() & (values != values.floor()))
        if bad.any():
            raise _cell_error(source, column, rule, lines, bad, values)
        return values.cast(pl.Int64)
    if values.dtype == pl.String:
        text = values.str.strip_chars()
        text = pl.when(text.str.len_bytes() == 0).then(None).otherwise(text)
        text = pl.select(text).to_series()
        bad = text.is_not_null() & ~text.str.contains(_INTEGER)
        if bad.any():
            raise _cell_error(source, column, rule, lines, bad, values)
        return text.cast(pl.Int64, strict=False).rename(column)
    raise InputError(source, [violation(column, f"{rule} (column has type {values.dtype})", [])])


def _float_column(frame, column, source, lines, *, text_allowed: bool) -> pl.Series:
    values = frame[column]
    if values.dtype.is_float() or values.dtype.is_integer():
        return values.cast(pl.Float64)
    if values.dtype == pl.String and text_allowed:
        parsed = values.str.strip_chars().cast(pl.Float64, strict=False)
        bad = parsed.is_null() & values.is_not_null()
        if bad.any():
            raise _cell_error(source, column, f"{column} must be a number", lines, bad, values)
        return parsed.rename(column)
    raise InputError(
        source,
        [violation(column, f"{column} is stored as {values.dtype}; store it as float64", [])],
    )


def _cell_error(source, column, rule, lines, bad: pl.Series, values: pl.Series) -> InputError:
    rows = _row_numbers(lines, bad)
    examples = [str(v) for v in values.filter(bad).head(5).to_list()]
    return InputError(source, [violation(column, rule, rows, examples)],
                      row_label="line" if lines is not None else "row")


def _with_name_column(frame, column, name, path, lines, what, default=None):
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
            unsafe.append(violation(column, str(exc), _row_numbers(lines, rows),
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
            _row_numbers(lines, rows), values.filter(rows).head(MAX_EXAMPLES).to_list())],
            row_label=label)
    if name is not None and present.len() and present[0] != name:
        rows = (values != name).fill_null(False)
        raise InputError(source, [violation(
            column, f"the file names a different {what} than the {name!r} asked for",
            _row_numbers(lines, rows), values.filter(rows).head(MAX_EXAMPLES).to_list())],
            row_label=label)
    return frame.with_columns(values.alias(column))


def _string_ids(frame: pl.DataFrame, columns: list[str]) -> pl.DataFrame:
    present = [c for c in columns if c in frame.columns]
    return frame.with_columns(pl.col(c).cast(pl.String) for c in present)


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
