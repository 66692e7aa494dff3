"""Readers for judgment versions, candidate pools and queries: Parquet, CSV and TREC files.

Every reader returns a frame validated by its pandera model, with the contract's column names
and types, or raises :class:`schemas.InputError` naming the file, column, rule and rows. This
module picks the format and finishes what every format shares; each format is parsed by its own
module (``parquet_reader``, ``csv_reader``, ``trec_reader``), and the cells are checked by
``cells``. Text formats are read as strings first so that a bad value is reported as itself
("2.5", "NaN", "high") rather than as a failed cast. A path is a local one or a URL on object
storage (``io.locations``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import polars as pl

from evaluation_pipeline.io.datasets import is_data_file
from evaluation_pipeline.io.formats.cells import (
    float_column,
    integer_column,
    require,
    string_ids,
    with_name_column,
)
from evaluation_pipeline.io.formats.csv_reader import read_csv_table
from evaluation_pipeline.io.formats.parquet_reader import read_parquet_table
from evaluation_pipeline.io.formats.trec_reader import read_qrels, read_trec_run
from evaluation_pipeline.io.locations import location
from schemas import InputError, validate
from schemas.columns import (
    JUDGMENT_COLUMNS,
    JUDGMENT_KEY,
    JUDGMENT_NAME_COLUMNS,
    POOL_KEY,
    RANK,
    RATER_COLUMNS,
    RUN_COLUMNS,
    RUN_NAME_COLUMNS,
)
from schemas.errors import UNKNOWN_HINT, violation
from schemas.ranks import check_ranks

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
# The columns a table file must hold: the ones naming it may be left to the flags or its path.
_JUDGMENT_REQUIRED = [c for c in JUDGMENT_COLUMNS if c not in JUDGMENT_NAME_COLUMNS]
_RUN_REQUIRED = [c for c in RUN_COLUMNS if c not in RUN_NAME_COLUMNS]


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


def read_judgments(path: str | Path, fmt: str | None = None, version: str | None = None,
                   check_keys: bool = True) -> pl.DataFrame:
    """A judgment version. Without a ``judgment_version`` column the name is ``version`` or the
    file's stem. TREC qrels map ``rel < 0`` ("in pool, not judged") to ``grade_status=unknown``.
    A ``rater`` column (and ``rater_kind``) makes the key (query_id, doc_id, rater).

    ``check_keys=False`` leaves the uniqueness of (query_id, doc_id) to the caller, as for
    ``read_run``."""
    path = location(path)
    fmt = detect_format(path, fmt)
    if fmt == "trec":
        frame, lines = read_qrels(path)
    else:
        frame, lines = _read_table(path, fmt, constant=JUDGMENT_NAME_COLUMNS)
        frame = _judgment_cells(frame, path, lines)
    frame = _named_judgments(frame, path, lines, version)
    return validate("Judgments", frame, str(path), line_numbers=lines, check_keys=check_keys)


def judgments_table(frame: pl.DataFrame, path: Path, version: str | None) -> pl.DataFrame:
    """Rows of a judgments table (a CSV file's cells as strings) as ``read_judgments`` converts
    them, without the model's check: for a file read a part at a time, whose every part is
    converted alike. Raises InputError as the reader does (rows numbered within the part)."""
    return _named_judgments(_judgment_cells(frame, path, None), path, None, version)


def _judgment_cells(frame: pl.DataFrame, path: Path, lines: pl.Series | None) -> pl.DataFrame:
    require(frame, _JUDGMENT_REQUIRED, path, lines,
            hint=f"every row states grade_status; {UNKNOWN_HINT}")
    grade = integer_column(frame, "grade", str(path), lines,
                           f"grade must be a whole number; {UNKNOWN_HINT}")
    return frame.with_columns(grade.alias("grade"),
                              pl.col("grade_status").cast(pl.String).str.strip_chars())


def _named_judgments(frame: pl.DataFrame, path: Path, lines: pl.Series | None,
                     version: str | None) -> pl.DataFrame:
    frame = with_name_column(frame, "judgment_version", version, path, lines, "judgment version",
                             default=path.stem)
    return string_ids(frame, (*JUDGMENT_KEY, *RATER_COLUMNS))


def read_run(
    path: str | Path,
    fmt: str | None = None,
    pool: str | None = None,
    ranker: str | None = None,
    check_keys: bool = True,
    display: bool = True,
    ranks: bool = False,
) -> pl.DataFrame:
    """One ranker's (or several rankers') candidates with scores.

    ``check_keys=False`` leaves the uniqueness of (ranker, query_id, doc_id) to the caller
    (scoring finds repeats as it orders each query's documents, then reads again with it on).
    ``display=False`` leaves out the display-only ``rank`` of a Parquet file when it is stored
    as int64, where no value can break its rule (scoring never reads it). ``ranks=True``: the
    spec orders ties by the rank (``ties: rank``), which each row must then hold, unique within
    its (ranker, query) (``schemas.ranks``).

    TREC runs map ``qid Q0 docno rank score tag`` (extra trailing fields ignored), tag to
    ``ranker``. Without a ``ranker`` column the name is ``ranker`` or the file's stem; without a
    ``candidate_pool`` column it is ``pool`` or the name of the file's folder.
    """
    path = location(path)
    fmt = detect_format(path, fmt)
    if fmt == "trec":
        frame, lines = read_trec_run(path, ranker)
    else:
        frame, lines = _read_table(path, fmt, constant=RUN_NAME_COLUMNS,
                                   unread={} if display or ranks else {RANK: pl.Int64})
        frame = _run_columns(frame, path, lines, ranker)
    frame = _run_cells(frame, path, fmt, lines, pool)
    if ranks:
        check_ranks(frame, str(path), lines)
    return validate("CandidatePool", frame, str(path), line_numbers=lines, check_keys=check_keys)


def run_table(frame: pl.DataFrame, path: Path, pool: str | None, ranker: str | None = None,
              fmt: str = "csv") -> pl.DataFrame:
    """Rows of a run table as ``read_run`` converts a file's (``fmt``: a CSV file's cells as
    strings, or a Parquet file's typed columns), without the model's check: as
    ``judgments_table``. Without a ranker column the rows are ``ranker``'s, else the stem's."""
    return _run_cells(_run_columns(frame, path, None, ranker), path, fmt, None, pool)


def _run_columns(frame: pl.DataFrame, path: Path, lines: pl.Series | None,
                 ranker: str | None) -> pl.DataFrame:
    require(frame, _RUN_REQUIRED, path, lines)
    if "ranker" not in frame.columns:
        frame = frame.with_columns(pl.lit(ranker or path.stem).alias("ranker"))
    return frame


def _run_cells(frame: pl.DataFrame, path: Path, fmt: str, lines: pl.Series | None,
               pool: str | None) -> pl.DataFrame:
    score = float_column(frame, "score", str(path), lines, text_allowed=fmt != "parquet")
    frame = frame.with_columns(score.alias("score"))
    if RANK in frame.columns:
        frame = frame.with_columns(
            integer_column(frame, RANK, str(path), lines, "rank must be a whole number")
            .alias(RANK)
        )
    frame = with_name_column(frame, "candidate_pool", pool, path, lines, "candidate pool",
                             default=path.parent.name)
    return string_ids(frame, POOL_KEY)


def read_pool(folder: str | Path, pool: str | None = None, fmt: str | None = None,
              check_keys: bool = True, ranks: bool = False) -> pl.DataFrame:
    """A candidate pool folder: one run file per ranker (``*.parquet``, ``*.csv``, ``*.run``).
    ``ranks``: as for ``read_run``; the rank column is kept only then."""
    folder = location(folder)
    files = sorted(
        p for p in folder.iterdir()
        if p.is_file() and is_data_file(p.name) and p.suffix.lower() in _EXTENSIONS
    )
    if not files:
        raise InputError(str(folder), [violation("(folder)", "a pool folder needs at least one "
                                                 "run file (.parquet, .csv, .run)", [])])
    name = pool or folder.name
    runs = [read_run(p, fmt=fmt, pool=name, check_keys=check_keys, ranks=ranks) for p in files]
    kept = [*RUN_COLUMNS, RANK] if ranks else RUN_COLUMNS
    frame = pl.concat([r.select(kept) for r in runs], how="vertical")
    if ranks and len(runs) > 1:  # a ranker split over two files could repeat a rank
        check_ranks(frame, str(folder))
    # Each file was validated alone; a ranker split over two files could still repeat a row.
    return validate("CandidatePool", frame, str(folder), check_keys=check_keys)


def read_candidates(
    path: str | Path, fmt: str | None = None, pool: str | None = None, ranker: str | None = None,
    check_keys: bool = True, display: bool = True, ranks: bool = False,
) -> pl.DataFrame:
    """A run file, or a pool folder with one run file per ranker (``read_run``)."""
    path = location(path)
    if path.is_dir():
        return read_pool(path, pool=pool, fmt=fmt, check_keys=check_keys, ranks=ranks)
    return read_run(path, fmt, pool=pool, ranker=ranker, check_keys=check_keys, display=display,
                    ranks=ranks)


def read_queries(path: str | Path, fmt: str | None = None) -> pl.DataFrame:
    """Query weights (traffic) and string slice columns; ``weight`` defaults to 1 when absent."""
    path = location(path)
    fmt = detect_format(path, fmt)
    if fmt == "trec":
        raise InputError(str(path), [violation("(file)", "queries come as Parquet or CSV", [])])
    frame, lines = _read_table(path, fmt)
    if "weight" in frame.columns:
        weight = float_column(frame, "weight", str(path), lines, text_allowed=fmt != "parquet")
    else:
        weight = pl.Series("weight", [1.0] * frame.height)
    frame = string_ids(frame.with_columns(weight.alias("weight")), ["query_id"])
    return validate("Queries", frame, str(path), line_numbers=lines)


def read_table_file(path: Path, formats: str) -> tuple[pl.DataFrame, pl.Series | None]:
    """The rows of a Parquet or CSV file, the format told by its extension, and for CSV the
    line each row starts on; any other extension is refused, ``formats`` saying what the file
    may be (e.g. "documents come as .csv or .parquet")."""
    fmt = _EXTENSIONS.get(path.suffix.lower())
    if fmt not in ("parquet", "csv"):
        raise InputError(str(path), [violation(
            "(file)", f"cannot tell the format from the extension {path.suffix!r}; {formats}",
            [])])
    return _read_table(path, fmt)


def _read_table(path: Path, fmt: str, constant: tuple[str, ...] = (), unread: dict | None = None,
                ) -> tuple[pl.DataFrame, pl.Series | None]:
    """The file's rows, and for text files the line each starts on. Parquet only:
    ``constant`` and ``unread``, see ``parquet_reader.read_parquet_table``."""
    if fmt == "parquet":
        return read_parquet_table(path, constant, unread), None
    return read_csv_table(path)


# -- a CSV file a part at a time --------------------------------------------------------------

# Bytes of a CSV file parsed at once by ``csv_parts``: some 75k rows of judgments. Parsing a
# 22M-row file in parts of 4 MB held 66 MB over the interpreter and polars, in parts of 16 MB
# 177 MB; polars' own streaming scan of it held 382 MB (2 threads, parsing only).
CSV_PART_BYTES = 4 * 1000**2


def csv_parts(path: Path, part_bytes: int | None = None) -> Iterator[pl.DataFrame]:
    """A local CSV file's rows as ``read_csv_table`` parses them (every cell a string, the
    header's names trimmed), in frames of whole records read some ``part_bytes`` at a time:
    the header is parsed again with each part. A part ends at a line break outside quotes (an
    even number of quote characters before it: a quote inside a quoted cell is written twice),
    so a quoted cell that holds a line break stays in one part. Raises polars' or the
    system's error for a file it cannot parse; the reader words those (``read_csv_table``)."""
    size = part_bytes or CSV_PART_BYTES
    header, rest = None, b""
    with open(path, "rb") as handle:
        while True:
            block = handle.read(size)
            data = rest + block
            # At the end of the file the rest is its last record, line break or not.
            ends = _record_ends(data) if block else np.array([len(data)])
            if header is None and len(ends):
                header, data, ends = data[:ends[0]], data[ends[0]:], ends[1:] - ends[0]
            cut = int(ends[-1]) if len(ends) else 0
            if cut:
                yield _csv_part(header + data[:cut])
            rest = data[cut:]
            if not block:
                return


def _record_ends(data: bytes) -> np.ndarray:
    """The offsets just past each line break of ``data`` that ends a record: outside quotes,
    ``data`` starting at a record's start."""
    if b'"' not in data:
        return np.flatnonzero(np.frombuffer(data, np.uint8) == 10) + 1
    raw = np.frombuffer(data, np.uint8)
    breaks = np.flatnonzero(raw == 10)
    quotes_before = np.searchsorted(np.flatnonzero(raw == 34), breaks)
    return breaks[quotes_before % 2 == 0] + 1


def _csv_part(text: bytes) -> pl.DataFrame:
    frame = pl.read_csv(text, infer_schema=False, encoding="utf8", raise_if_empty=True)
    return frame.rename({c: c.strip().lstrip("\ufeff") for c in frame.columns})
