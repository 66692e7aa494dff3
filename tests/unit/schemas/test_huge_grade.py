"""A grade int64 cannot hold is refused as itself: the file, column ``grade``, the rule it
breaks (out of int64's range), the row and the value as written.

``99999999999999999999999`` in a judgments CSV was cast to null, then reported as "a graded
row needs a grade >= 0" with the grade shown as null; a uint64 or float column above int64
raised polars' InvalidOperationError. ``schemas.integers`` holds the rule; the readers of
``io/formats/cells.py``, the Python API and the streaming engine call it before any cast.
"""

from __future__ import annotations

import io
from pathlib import Path

import polars as pl
import pytest

from evaluation_pipeline import evaluate
from evaluation_pipeline.cli.main import main
from evaluation_pipeline.engines import score_files
from evaluation_pipeline.ingest.publish import publish_judgments
from evaluation_pipeline.io.readers import read_judgments
from evaluation_pipeline.spec import profile
from schemas.errors import InputError
from schemas.integers import INT64_MAX, out_of_int64, refuse_out_of_int64

HUGE = "99999999999999999999999"
HEADER = "query_id,doc_id,grade,grade_status,judgment_version\n"


def judgments_csv(folder: Path) -> Path:
    path = folder / "maint-v9.csv"
    path.write_text(HEADER + "q1,a,2,graded,maint-v9\n"
                    f"q1,b,{HUGE},graded,maint-v9\n" "q2,c,1,graded,maint-v9\n")
    return path


def run_parquet(folder: Path) -> Path:
    path = folder / "pool" / "bm25.parquet"
    path.parent.mkdir()
    pl.DataFrame({"candidate_pool": ["pool"] * 3, "ranker": ["bm25"] * 3,
                  "query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "c"],
                  "score": [2.0, 1.0, 3.0]}).write_parquet(path)
    return path


def assert_out_of_range(error: InputError, source: str, row: str, value: str) -> None:
    """The file, the column, the rule broken, the row and the value as written."""
    assert error.source == source
    [violation] = error.violations
    assert violation.column == "grade"
    assert "out of range" in violation.rule and "int64" in violation.rule
    assert f"{error.row_label} {violation.rows[0]}" == row
    assert violation.examples == (repr(value),)


def test_the_rule_finds_every_value_int64_cannot_hold():
    text = pl.Series([" 2", HUGE, f"-{HUGE}", str(INT64_MAX), str(INT64_MAX + 1), "2.5", None])
    assert out_of_int64(text).to_list() == [False, True, True, False, True, False, False]
    floats = pl.Series([1.0, float("inf"), -float("inf"), 2.0**63, -(2.0**63), float("nan")])
    assert out_of_int64(floats).to_list() == [False, True, True, True, False, False]
    unsigned = pl.Series([3, 2**64 - 1], dtype=pl.UInt64)
    assert out_of_int64(unsigned).to_list() == [False, True]


def test_the_refusal_names_the_file_column_rule_line_and_value():
    lines = pl.Series([2, 3, 4])
    with pytest.raises(InputError) as refused:
        refuse_out_of_int64(pl.Series(["2", HUGE, "1"]), "grade", "maint-v9.csv", lines)
    assert_out_of_range(refused.value, "maint-v9.csv", "line 3", HUGE)


def test_the_api_refuses_it_from_a_table_as_written():
    text = HEADER + "q1,a,2,graded,v\n" f"q1,b,{HUGE},graded,v\n"
    grades = pl.read_csv(io.BytesIO(text.encode()), infer_schema=False)
    with pytest.raises(InputError) as refused:
        evaluate(grades, {"q1": {"a": 1.0}})
    assert_out_of_range(refused.value, "judgments (polars DataFrame)", "row 2", HUGE)


def test_the_streaming_engine_refuses_a_uint64_grade_above_int64(tmp_path):
    judgments = tmp_path / "maint-v9.parquet"
    pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"],
                  "grade": pl.Series([2, 2**64 - 1], dtype=pl.UInt64),
                  "grade_status": ["graded"] * 2}).write_parquet(judgments)
    with pytest.raises(InputError) as refused:
        score_files(judgments, run_parquet(tmp_path), profile("default"),
                    tmp_path / "out.parquet", engine="streaming", progress=False)
    assert_out_of_range(refused.value, str(judgments), "row 2", str(2**64 - 1))


def test_the_csv_reader_refuses_it_naming_the_line_and_value(tmp_path):
    path = judgments_csv(tmp_path)
    with pytest.raises(InputError) as refused:
        read_judgments(path)
    assert_out_of_range(refused.value, str(path), "line 3", HUGE)


def test_ingest_refuses_it_naming_the_line_and_value(tmp_path):
    path = judgments_csv(tmp_path)
    with pytest.raises(InputError) as refused:
        publish_judgments(path, tmp_path / "published")
    assert_out_of_range(refused.value, str(path), "line 3", HUGE)
    assert not (tmp_path / "published").exists()


def test_the_score_command_refuses_it_and_writes_nothing(tmp_path, capsys):
    path = judgments_csv(tmp_path)
    out = tmp_path / "out"
    assert main(["score", "--judgments", str(path), "--run", str(run_parquet(tmp_path).parent),
                 "--out", str(out)]) == 2
    message = capsys.readouterr().err
    assert f"{path}: invalid input" in message and "column 'grade'" in message
    assert "out of range" in message and f"line 3 ('{HUGE}')" in message
    assert "needs a grade >= 0" not in message
    assert not out.exists()
