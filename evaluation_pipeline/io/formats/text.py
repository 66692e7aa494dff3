"""The text of a CSV or TREC file, read whole: bytes that are not UTF-8 are reported with the
line and the column they sit in, rather than as a decoder's offset."""

from __future__ import annotations

import csv
from pathlib import Path

from schemas import InputError
from schemas.errors import violation


def read_text(path: Path, fields: list[str] | None = None) -> str:
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
