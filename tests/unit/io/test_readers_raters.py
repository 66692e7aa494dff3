"""Judgment files with raters: the optional ``rater`` and ``rater_kind`` columns, in CSV and
Parquet, keyed (query_id, doc_id, rater)."""

from __future__ import annotations

import polars as pl
import pytest

from evaluation_pipeline.io.readers import read_judgments
from schemas.errors import InputError
from schemas.rules.judgment_rules import JUDGMENTS, RATED_JUDGMENTS
from tests.support.refusals import violation

RATED = """query_id,doc_id,grade,grade_status,rater,rater_kind
q1,d1,2,graded,alice,human
q1,d1,3,graded,bob,human
q1,d1,,unknown,judge-1,llm
q1,d2,0,graded,alice,human
"""


def write(tmp_path, text, name="rated.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_csv_and_parquet_keep_every_rating(tmp_path):
    frame = read_judgments(write(tmp_path, RATED))
    assert frame.height == 4
    assert frame["rater"].to_list() == ["alice", "bob", "judge-1", "alice"]
    assert frame["rater_kind"].to_list() == ["human", "human", "llm", "human"]
    frame.write_parquet(tmp_path / "rated.parquet")
    assert read_judgments(tmp_path / "rated.parquet").equals(frame)


def test_the_same_document_twice_under_one_rater_is_refused(tmp_path):
    text = RATED + "q1,d1,1,graded,bob,human\n"
    with pytest.raises(InputError) as raised:
        read_judgments(write(tmp_path, text))
    violation(raised, "query_id, doc_id, rater", RATED_JUDGMENTS.key, rows=[3, 6],
              row_label="line")


def test_a_rating_without_its_rater_is_refused(tmp_path):
    with pytest.raises(InputError) as raised:
        read_judgments(write(tmp_path, RATED.replace("bob,human", ",human")))
    violation(raised, "rater", RATED_JUDGMENTS.rule("rater_not_null"), rows=[3],
              row_label="line")
    frame = read_judgments(write(tmp_path, RATED)).with_columns(
        pl.when(pl.col("rater") == "bob").then(pl.lit("")).otherwise("rater").alias("rater"))
    frame.write_parquet(tmp_path / "empty.parquet")
    with pytest.raises(InputError) as raised:
        read_judgments(tmp_path / "empty.parquet")
    violation(raised, "rater", RATED_JUDGMENTS.rule("rater_non_empty"), rows=[2], values=[""],
              row_label="row")


def test_without_a_rater_column_a_document_is_graded_once(tmp_path):
    text = "query_id,doc_id,grade,grade_status\nq1,d1,2,graded\nq1,d1,3,graded\n"
    with pytest.raises(InputError) as raised:
        read_judgments(write(tmp_path, text, "plain.csv"))
    violation(raised, "query_id, doc_id", JUDGMENTS.key, rows=[2, 3], row_label="line")


def test_a_rater_has_one_kind(tmp_path):
    text = RATED.replace("q1,d2,0,graded,alice,human", "q1,d2,0,graded,alice,llm")
    with pytest.raises(InputError) as raised:
        read_judgments(write(tmp_path, text))
    violation(raised, "rater_kind", RATED_JUDGMENTS.rule("one_kind_per_rater"), rows=[2, 5],
              row_label="line")
