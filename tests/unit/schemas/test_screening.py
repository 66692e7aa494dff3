"""The one-pass screens against the pandera models they stand in for (schemas.screening).

A screen may send a clean frame to pandera (stricter is only slower), but must never accept a
frame the model refuses. For pools and judgments it must agree exactly, so that a clean input
costs no pandera at all.
"""

from __future__ import annotations

import math

import pandera.errors as pa_errors
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import schemas
from schemas.screening import screen
from tests.unit.schemas.rule_breakers import JUDGMENTS_FRAME, POOL

# The valid frames each rule is broken from (one declaration, shared with the rules' tests).
JUDGMENTS = JUDGMENTS_FRAME


def _accepts(model_name: str, frame: pl.DataFrame) -> bool:
    try:
        getattr(schemas, model_name).validate(frame, lazy=True)
    except (pa_errors.SchemaErrors, pa_errors.SchemaError):
        return False
    return True


def _set(frame: pl.DataFrame, column: str, row: int, value) -> pl.DataFrame:
    values = frame[column].to_list()
    values[row] = value
    try:
        series = pl.Series(column, values, dtype=frame.schema[column], strict=False)
    except (TypeError, pl.exceptions.PolarsError):
        series = pl.Series(column, values, strict=False)
    return frame.with_columns(series)


POOL_EDITS = [
    ("candidate_pool", [None, "", "p 1", "..", "p2", "x" * 201]),
    ("ranker", [None, "", "bm25"]),
    ("query_id", [None, "", "q2"]),
    ("doc_id", [None, "", "d2", "d1"]),
    ("score", [None, math.nan, math.inf, -math.inf, -0.0, 1e308]),
    ("rank", [None, -1]),
]
JUDGMENT_EDITS = [
    ("query_id", [None, "", "q1"]),
    ("doc_id", [None, "", "d2", "d1"]),
    ("grade", [None, -1, 0, 7]),
    ("grade_status", [None, "", "graded", "unknown", "Graded"]),
    ("judgment_version", [None, "", "v 1", ".", "v2"]),
]


def _edited(base: pl.DataFrame, edits, draw) -> pl.DataFrame:
    frame = base
    for _ in range(draw(st.integers(0, 3))):
        column, values = draw(st.sampled_from(edits))
        frame = _set(frame, column, draw(st.integers(0, frame.height - 1)),
                     draw(st.sampled_from(values)))
    shape = draw(st.sampled_from(["as is", "drop a column", "cast a column", "empty"]))
    if shape == "drop a column":
        frame = frame.drop(draw(st.sampled_from(frame.columns)))
    elif shape == "cast a column":
        column = draw(st.sampled_from(frame.columns))
        frame = frame.with_columns(pl.col(column).cast(pl.Categorical if frame.schema[column]
                                                       == pl.String else pl.Float32))
    elif shape == "empty":
        frame = frame.head(0)
    return frame


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_pool_screen_agrees_with_the_model(data):
    frame = _edited(POOL, POOL_EDITS, data.draw)
    assert screen("CandidatePool", frame) == _accepts("CandidatePool", frame), frame


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_judgments_screen_agrees_with_the_model(data):
    frame = _edited(JUDGMENTS, JUDGMENT_EDITS, data.draw)
    assert screen("Judgments", frame) == _accepts("Judgments", frame), frame


def test_screens_without_the_key_check_accept_repeated_keys():
    repeated = pl.concat([POOL, POOL.head(1)])
    assert not screen("CandidatePool", repeated)
    assert screen("CandidatePool", repeated, check_keys=False)
    assert not _accepts("CandidatePool", repeated)


@pytest.fixture(scope="module")
def per_query():
    from evaluation_pipeline.evaluation import evaluate
    from evaluation_pipeline.spec import EvaluationSpec

    rows, _ = evaluate(JUDGMENTS, POOL, EvaluationSpec(cutoffs=(1, 3)))
    return rows


RESULT_EDITS = [
    ("cutoff", [0, None]),
    ("dcg", [None, -1.0, math.nan]),
    ("ndcg", [None, 1.5, -0.1, math.nan, 1.0]),
    ("status", ["scored", "incomplete", "odd", None]),
    ("n_graded", [-1, None]),
    ("judged_at_k", [None, 2.0]),
    ("pool_sha256", ["abc", None]),
    ("spec_id", ["", None]),
    ("query_id", ["q1", None]),
]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_results_screen_never_accepts_what_the_model_refuses(per_query, data):
    frame = _edited(per_query, RESULT_EDITS, data.draw)
    if screen("PerQueryResults", frame):
        assert _accepts("PerQueryResults", frame), frame


def test_results_screen_accepts_real_output(per_query):
    assert screen("PerQueryResults", per_query)


RATED = JUDGMENTS.with_columns(rater=pl.Series(["h1", "h2", "h1", "llm"]),
                               rater_kind=pl.Series(["human", "human", "human", "llm"]))
RATED = pl.concat([RATED, RATED.head(1).with_columns(rater=pl.lit("llm"),
                                                     rater_kind=pl.lit("llm"))])
RATED_EDITS = [*JUDGMENT_EDITS, ("rater", [None, "", "h1", "h2", "llm"]),
               ("rater_kind", [None, "", "llm"])]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_rated_judgments_screen_agrees_with_the_model(data):
    frame = _edited(RATED, RATED_EDITS, data.draw)
    assert screen("RatedJudgments", frame) == _accepts("RatedJudgments", frame), frame
    if "rater" in frame.columns:  # the name a reader asks for picks the rated model
        assert screen("Judgments", frame) == screen("RatedJudgments", frame)


def test_a_document_rated_by_two_raters_is_no_repeat_but_one_rater_twice_is():
    assert screen("Judgments", RATED) and _accepts("RatedJudgments", RATED)
    twice = _set(RATED, "rater", 4, "h1")
    assert not screen("Judgments", twice) and not _accepts("RatedJudgments", twice)
