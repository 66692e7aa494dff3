"""Write the bad-input corpus to ``tests/support/bad_inputs/``: one small file per broken rule and
format.

    python tests/support/make_bad_inputs.py            # rewrite tests/support/bad_inputs/
    python tests/support/make_bad_inputs.py OUT_DIR    # write the corpus somewhere else

The output is a function of this script alone (no randomness, no clock), so the committed corpus
can be checked against a fresh run. Every file comes with what a reader must say about it: the
column the message names, words of the rule, and the rows or lines it points at. Files marked
``ok`` are positive cases that must be accepted. ``valid/`` holds the good judgments and run that
each bad file is paired with on the command line.

Overlong lines (tens of MB) are not committed; the tests build them in a temporary folder.
"""

from __future__ import annotations

import io
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "bad_inputs"

VERSION = "bad-v1"


@dataclass(frozen=True)
class Case:
    """One corpus file and what reading it must report."""

    path: str  # relative to the corpus folder
    kind: str  # "judgments" or "run"
    data: bytes = field(repr=False)
    column: str | None = None  # the column the message must name
    words: tuple[str, ...] = ()  # words of the rule that must appear in the message
    rows: tuple[str, ...] = ()  # "line 3", "row 2": where the message must point
    ok: bool = False  # a positive case: reading must succeed
    fmt: str | None = None  # --format to pass when the extension does not tell

    @property
    def id(self) -> str:
        return self.path


# -- the valid pair ---------------------------------------------------------------------------

JUDGMENT_COLUMNS = ["query_id", "doc_id", "grade", "grade_status", "judgment_version"]
JUDGMENTS = [
    # (query_id, doc_id, grade, grade_status, judgment_version); None is an empty cell
    ["q1", "d1", "3", "graded", VERSION],   # line 2 / row 1
    ["q1", "d2", "0", "graded", VERSION],   # line 3 / row 2
    ["q1", "d3", None, "unknown", VERSION],  # line 4 / row 3
    ["q2", "d4", "2", "graded", VERSION],   # line 5 / row 4
    ["q2", "d5", "1", "graded", VERSION],   # line 6 / row 5
]

RUN_COLUMNS = ["ranker", "query_id", "doc_id", "score", "rank"]
RUN = [
    ["bm25", "q1", "d1", "9.5", "1"],    # line 2 / row 1
    ["bm25", "q1", "d3", "7.25", "2"],   # line 3 / row 2
    ["bm25", "q1", "d2", "3.0", "3"],    # line 4 / row 3
    ["bm25", "q2", "d5", "4.0", "1"],    # line 5 / row 4
    ["bm25", "q2", "d4", "2.5", "2"],    # line 6 / row 5
]

QRELS = [  # qid iter docno rel; rel < 0 is "in pool, not judged"
    ["q1", "0", "d1", "3"],
    ["q1", "0", "d2", "0"],
    ["q1", "0", "d3", "-1"],
    ["q2", "0", "d4", "2"],
    ["q2", "0", "d5", "1"],
]
TREC_RUN = [  # qid Q0 docno rank score tag
    ["q1", "Q0", "d1", "1", "9.5", "bm25"],
    ["q1", "Q0", "d3", "2", "7.25", "bm25"],
    ["q1", "Q0", "d2", "3", "3.0", "bm25"],
    ["q2", "Q0", "d5", "1", "4.0", "bm25"],
    ["q2", "Q0", "d4", "2", "2.5", "bm25"],
]


# -- encoders ---------------------------------------------------------------------------------


def _csv_cell(value: str | None, sep: str) -> str:
    if value is None:
        return ""
    if any(ch in value for ch in (sep, '"', "\n", "\r")):
        return '"' + value.replace('"', '""') + '"'
    return value


def csv_bytes(columns, rows, sep: str = ",", encoding: str = "utf-8", bom: bool = False) -> bytes:
    lines = [sep.join(_csv_cell(c, sep) for c in columns)]
    lines += [sep.join(_csv_cell(v, sep) for v in row) for row in rows]
    text = "\n".join(lines) + "\n"
    return (b"\xef\xbb\xbf" if bom else b"") + text.encode(encoding)


def trec_bytes(rows, encoding: str = "utf-8", bom: bool = False) -> bytes:
    text = "".join(" ".join(row) + "\n" for row in rows)
    return (b"\xef\xbb\xbf" if bom else b"") + text.encode(encoding)


def parquet_bytes(frame: pl.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.write_parquet(buffer, compression="uncompressed", statistics=False)
    return buffer.getvalue()


_JUDGMENT_TYPES = {"grade": pl.Int64}
_RUN_TYPES = {"score": pl.Float64, "rank": pl.Int64}


def _typed(columns, rows, types, overrides) -> pl.DataFrame:
    data = {c: [row[i] for row in rows] for i, c in enumerate(columns)}
    series = []
    for name, values in data.items():
        dtype = overrides.get(name, types.get(name, pl.String))
        if dtype == pl.Int64:
            values = [None if v is None else int(v) for v in values]
        elif dtype == pl.Float64:
            values = [None if v is None else float(v) for v in values]
        series.append(pl.Series(name, values, dtype=dtype))
    return pl.DataFrame(series)


def judgments_parquet(rows=None, columns=None, types=None) -> bytes:
    rows = JUDGMENTS if rows is None else rows
    return parquet_bytes(_typed(columns or JUDGMENT_COLUMNS, rows, _JUDGMENT_TYPES, types or {}))


def run_parquet(rows=None, columns=None, types=None) -> bytes:
    rows = RUN if rows is None else rows
    return parquet_bytes(_typed(columns or RUN_COLUMNS, rows, _RUN_TYPES, types or {}))


def edit(rows, index: int, column: str, value, columns) -> list[list]:
    """A copy of ``rows`` with one cell replaced (``index`` is 0-based)."""
    out = [list(r) for r in rows]
    out[index][columns.index(column)] = value
    return out


def drop_column(columns, rows, column):
    i = columns.index(column)
    kept = [[v for j, v in enumerate(r) if j != i] for r in rows]
    return [c for c in columns if c != column], kept


def add_column(columns, rows, column, values):
    return columns + [column], [list(r) + [v] for r, v in zip(rows, values)]


# -- the cases --------------------------------------------------------------------------------


def _line(index: int) -> str:
    """CSV line of 0-based data row ``index`` (the header is line 1)."""
    return f"line {index + 2}"


def _csv_lines(rows, index) -> tuple[str, ...]:
    """CSV lines where data rows ``index`` start: a cell holding a line break takes two lines."""
    breaks = [sum((v or "").count("\n") for v in row) for row in rows]
    return tuple(f"line {i + 2 + sum(breaks[:i])}" for i in index)


def _row(index: int) -> str:
    """Parquet row of 0-based data row ``index`` (rows count from 1)."""
    return f"row {index + 1}"


UNKNOWN_WORDS = ("never read as unknown",)

UNSAFE_NAMES = {  # name in the file -> words of the refusal
    "dotdot_slash": ("../x", ("'../x' is refused", "no path separators")),
    "slash": ("a/b", ("'a/b' is refused", "no path separators")),
    "dotdot": ("..", ("'..' is refused", "names a directory")),
    "newline": ("bad\nname", ("'bad\\nname' is refused", "control characters")),
    "too_long": ("n" * 201, ("201 characters is refused", "at most 200")),
}


def judgment_cases() -> list[Case]:
    J, C = JUDGMENTS, JUDGMENT_COLUMNS
    cases: list[Case] = []

    def both(name, rows, column, words, index, columns=C, parquet_rows=None, parquet_types=None,
             parquet_words=None, csv_words=None):
        """The same broken rule as CSV (line numbers) and Parquet (row numbers)."""
        cases.append(Case(f"judgments/{name}.csv", "judgments", csv_bytes(columns, rows),
                          column, tuple(csv_words or words),
                          _csv_lines(rows, index)))
        cases.append(Case(f"judgments/{name}.parquet", "judgments",
                          judgments_parquet(parquet_rows or rows, columns, parquet_types),
                          column, tuple(parquet_words or words), tuple(_row(i) for i in index)))

    both("negative_grade", edit(J, 1, "grade", "-2", C), "grade", (">= 0",) + UNKNOWN_WORDS, [1])
    # -1, NaN and a blank cell are all ways people write "unknown"; none of them is read so.
    both("minus_one_for_unknown",
         edit(edit(J, 2, "grade", "-1", C), 2, "grade_status", "graded", C),
         "grade", (">= 0",) + UNKNOWN_WORDS, [2])
    both("nan_for_unknown", edit(edit(J, 2, "grade", "NaN", C), 2, "grade_status", "graded", C),
         "grade", ("whole number", "'NaN'") + UNKNOWN_WORDS, [2],
         parquet_types={"grade": pl.Float64}, parquet_words=("whole number", "nan") + UNKNOWN_WORDS)
    both("blank_for_unknown", edit(J, 2, "grade_status", None, C), "grade_status",
         ("must not be empty", "'graded' or 'unknown'") + UNKNOWN_WORDS, [2])
    both("fractional_grade", edit(J, 0, "grade", "2.5", C), "grade", ("whole number", "2.5"), [0],
         parquet_types={"grade": pl.Float64})
    both("unknown_with_grade", edit(J, 1, "grade_status", "unknown", C), "grade",
         ("'unknown'", "must leave grade empty"), [1])
    both("graded_without_grade", edit(J, 3, "grade", None, C), "grade",
         ("graded row needs a grade",) + UNKNOWN_WORDS, [3])
    both("bad_grade_status", edit(J, 4, "grade_status", "judged", C), "grade_status",
         ("must be one of", "graded", "unknown", "'judged'"), [4])
    both("duplicate_query_doc", J + [["q1", "d2", "1", "graded", VERSION]],
         "query_id, doc_id", ("must be unique", "duplicate"), [1, 5])
    both("empty_query_id", edit(J, 3, "query_id", "", C), "query_id", ("empty",), [3])
    both("empty_doc_id", edit(J, 1, "doc_id", "", C), "doc_id", ("empty",), [1])
    both("two_versions", edit(J, 4, "judgment_version", "bad-v2", C), "judgment_version",
         ("one judgment version per file", "several values", "'bad-v1'", "'bad-v2'"), [4])
    for label, (name, words) in UNSAFE_NAMES.items():
        rows = [r[:4] + [name] for r in J]
        both(f"unsafe_version_{label}", rows, "judgment_version", words, range(len(J)))

    columns, rows = drop_column(C, J, "grade_status")
    both("missing_grade_status", rows, "grade_status", ("required column is missing",), [],
         columns=columns)
    columns, rows = drop_column(C, J, "doc_id")
    both("missing_doc_id", rows, "doc_id", ("required column is missing",), [], columns=columns)

    # Extra columns pass through: positive cases.
    columns, rows = add_column(C, J, "judge", ["j1", "j2", "j1", "j3", "j2"])
    columns, rows = add_column(columns, rows, "notes", ["", "checked twice", "", "", "x"])
    cases.append(Case("judgments/extra_columns.csv", "judgments", csv_bytes(columns, rows),
                      ok=True))
    cases.append(Case("judgments/extra_columns.parquet", "judgments",
                      judgments_parquet(rows, columns), ok=True))
    # A byte-order mark is what spreadsheet exports put first: accepted.
    cases.append(Case("judgments/utf8_bom.csv", "judgments", csv_bytes(C, J, bom=True), ok=True))
    cases.append(Case("judgments/utf8_bom.qrels", "judgments", trec_bytes(QRELS, bom=True),
                      ok=True))

    # Files that are not tables of the right shape.
    cases += [
        Case("judgments/empty.csv", "judgments", b"", "(file)", ("empty",)),
        Case("judgments/empty.parquet", "judgments", b"", "(file)", ("not a readable Parquet",)),
        Case("judgments/empty.qrels", "judgments", b"", "(file)", ("empty",)),
        Case("judgments/header_only.csv", "judgments", csv_bytes(C, []), "(file)",
             ("header but no rows",)),
        Case("judgments/header_only.parquet", "judgments", judgments_parquet([]), "(file)",
             ("Parquet file has no rows",)),
        Case("judgments/truncated.parquet", "judgments", judgments_parquet()[:300], "(file)",
             ("not a readable Parquet",)),
        Case("judgments/not_parquet.parquet", "judgments", csv_bytes(C, J), "(file)",
             ("not a readable Parquet",)),
        Case("judgments/semicolon.csv", "judgments", csv_bytes(C, J, sep=";"),
             "query_id, doc_id, grade, grade_status",
             ("required columns are missing", "separated by ';'", "delimiter must be a comma")),
        Case("judgments/ragged_row.csv", "judgments",
             csv_bytes(C, J).replace(b"q1,d2,", b"q1,d2 valve, 3 in,"),  # an unquoted comma
             "(line)", ("6 fields", "header has 5", "quote cells"), ("line 3",)),
        Case("judgments/latin1.csv", "judgments",
             csv_bytes(C, edit(J, 3, "doc_id", "Prüfbericht-7", C), encoding="latin-1"),
             "doc_id", ("not UTF-8", "byte 0xfc", "save the file as UTF-8"), (_line(3),)),
        Case("judgments/latin1.qrels", "judgments",
             trec_bytes(edit(QRELS, 1, "docno", "Prüfbericht-7", ["qid", "iter", "docno", "rel"]),
                        encoding="latin-1"),
             "doc_id", ("not UTF-8", "byte 0xfc", "save the file as UTF-8"), ("line 2",)),
        Case("judgments/too_few_fields.qrels", "judgments",
             trec_bytes(QRELS[:2] + [["q1", "0", "d3"]] + QRELS[3:]), "(line)",
             ("at least 4", "fields"), ("line 3",)),
        Case("judgments/fractional_rel.qrels", "judgments",
             trec_bytes(edit(QRELS, 3, "rel", "2.5", ["qid", "iter", "docno", "rel"])), "rel",
             ("integer", "2.5"), ("line 4",)),
        Case("judgments/text_rel.qrels", "judgments",
             trec_bytes(edit(QRELS, 4, "rel", "high", ["qid", "iter", "docno", "rel"])), "rel",
             ("integer", "high"), ("line 5",)),
        Case("judgments/duplicate_query_doc.qrels", "judgments",
             trec_bytes(QRELS + [["q2", "0", "d4", "1"]]), "query_id, doc_id",
             ("must be unique", "duplicate"), ("line 4", "line 6")),
    ]
    return cases


def run_cases() -> list[Case]:
    R, C = RUN, RUN_COLUMNS
    cases: list[Case] = []

    def both(name, rows, column, words, index, columns=C, parquet_types=None,
             parquet_words=None, csv=True, parquet=True):
        if csv:
            cases.append(Case(f"runs/{name}.csv", "run", csv_bytes(columns, rows), column,
                              tuple(words), _csv_lines(rows, index)))
        if parquet:
            cases.append(Case(f"runs/{name}.parquet", "run",
                              run_parquet(rows, columns, parquet_types), column,
                              tuple(parquet_words or words), tuple(_row(i) for i in index)))

    both("nan_score", edit(R, 1, "score", "NaN", C), "score", ("finite",), [1])
    both("infinite_score", edit(R, 3, "score", "inf", C), "score", ("finite",), [3])
    both("text_score", edit(R, 2, "score", "high", C), "score", ("must be a number", "high"), [2],
         parquet=False)
    # A Parquet score column of strings is a type error of the whole column.
    text_column = _typed(C, R, _RUN_TYPES, {"score": pl.String})
    cases.append(Case("runs/text_score.parquet", "run", parquet_bytes(text_column), "score",
                      ("stored as String", "float64")))
    both("duplicate_ranker_query_doc", R + [["bm25", "q2", "d5", "0.5", "3"]],
         "ranker, query_id, doc_id", ("must be unique", "duplicate"), [3, 5])
    both("empty_query_id", edit(R, 4, "query_id", "", C), "query_id", ("empty",), [4])
    both("empty_doc_id", edit(R, 0, "doc_id", "", C), "doc_id", ("empty",), [0])
    both("empty_ranker", edit(R, 2, "ranker", "", C), "ranker", ("empty",), [2])
    both("fractional_rank", edit(R, 1, "rank", "2.5", C), "rank", ("whole number", "2.5"), [1],
         parquet_types={"rank": pl.Float64})
    columns, rows = add_column(C, R, "candidate_pool", ["pool-a"] * 4 + ["pool-b"])
    both("two_pools", rows, "candidate_pool", ("one candidate pool per file", "several values"),
         [4], columns=columns)
    for label, (name, words) in UNSAFE_NAMES.items():
        columns, rows = add_column(C, R, "candidate_pool", [name] * len(R))
        both(f"unsafe_pool_{label}", rows, "candidate_pool", words, range(len(R)),
             columns=columns)

    columns, rows = drop_column(C, R, "score")
    both("missing_score", rows, "score", ("required column is missing",), [], columns=columns)
    columns, rows = drop_column(C, R, "doc_id")
    both("missing_doc_id", rows, "doc_id", ("required column is missing",), [], columns=columns)

    columns, rows = add_column(C, R, "features", ["a", "b", "", "c", "d"])
    cases.append(Case("runs/extra_column.csv", "run", csv_bytes(columns, rows), ok=True))
    cases.append(Case("runs/extra_column.parquet", "run", run_parquet(rows, columns), ok=True))
    cases.append(Case("runs/utf8_bom.csv", "run", csv_bytes(C, R, bom=True), ok=True))
    cases.append(Case("runs/utf8_bom.run", "run", trec_bytes(TREC_RUN, bom=True), ok=True))

    T = ["qid", "Q0", "docno", "rank", "score", "tag"]
    cases += [
        Case("runs/empty.csv", "run", b"", "(file)", ("empty",)),
        Case("runs/empty.parquet", "run", b"", "(file)", ("not a readable Parquet",)),
        Case("runs/empty.run", "run", b"", "(file)", ("empty",)),
        Case("runs/header_only.csv", "run", csv_bytes(C, []), "(file)", ("header but no rows",)),
        Case("runs/header_only.parquet", "run", run_parquet([]), "(file)",
             ("Parquet file has no rows",)),
        Case("runs/truncated.parquet", "run", run_parquet()[:300], "(file)",
             ("not a readable Parquet",)),
        Case("runs/semicolon.csv", "run", csv_bytes(C, R, sep=";"), "query_id, doc_id, score",
             ("required columns are missing", "separated by ';'", "delimiter must be a comma")),
        Case("runs/latin1.csv", "run",
             csv_bytes(C, edit(R, 2, "doc_id", "Prüfbericht-7", C), encoding="latin-1"),
             "doc_id", ("not UTF-8", "byte 0xfc", "save the file as UTF-8"), (_line(2),)),
        Case("runs/too_few_fields.run", "run",
             trec_bytes(TREC_RUN[:1] + [["q1", "Q0", "d3", "2", "7.25"]] + TREC_RUN[2:]), "(line)",
             ("at least 6", "fields"), ("line 2",)),
        Case("runs/nan_score.run", "run", trec_bytes(edit(TREC_RUN, 2, "score", "nan", T)),
             "score", ("finite",), ("line 3",)),
        Case("runs/text_score.run", "run", trec_bytes(edit(TREC_RUN, 4, "score", "high", T)),
             "score", ("must be a number", "high"), ("line 5",)),
        Case("runs/duplicate_ranker_query_doc.run", "run",
             trec_bytes(TREC_RUN + [["q1", "Q0", "d1", "4", "0.5", "bm25"]]),
             "ranker, query_id, doc_id", ("must be unique", "duplicate"), ("line 1", "line 6")),
    ]
    return cases


def valid_files() -> dict[str, bytes]:
    return {
        "valid/judgments.csv": csv_bytes(JUDGMENT_COLUMNS, JUDGMENTS),
        "valid/judgments.parquet": judgments_parquet(),
        "valid/judgments.qrels": trec_bytes(QRELS),
        "valid/run.csv": csv_bytes(RUN_COLUMNS, RUN),
        "valid/run.parquet": run_parquet(),
        "valid/run.run": trec_bytes(TREC_RUN),
    }


def all_cases() -> list[Case]:
    cases = judgment_cases() + run_cases()
    paths = [c.path for c in cases]
    assert len(paths) == len(set(paths)), "two cases share a file name"
    return cases


def corpus_files() -> dict[str, bytes]:
    """Every file of the corpus, by path relative to the corpus folder."""
    files = valid_files()
    files.update({c.path: c.data for c in all_cases()})
    return files


def write_corpus(out: Path = CORPUS) -> dict[str, bytes]:
    files = corpus_files()
    for sub in ("judgments", "runs", "valid"):
        shutil.rmtree(out / sub, ignore_errors=True)
    for rel, data in sorted(files.items()):
        target = out / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return files


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else CORPUS
    files = write_corpus(out)
    total = sum(len(b) for b in files.values())
    print(f"wrote {len(files)} files ({total:,} bytes) to {out}")
