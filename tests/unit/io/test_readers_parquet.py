"""Parquet reading shortcuts give the same frames, and the same refusals, as reading everything.

A name column with one value comes back as a literal, and scoring leaves out an int64 rank.
Neither may change what is accepted or what the rows hold.
"""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from evaluation_pipeline.io.readers import read_candidates, read_judgments
from schemas import InputError
from schemas.rules.pool_rules import CANDIDATE_POOL
from tests.support.refusals import assert_names, violation


def _run(**columns) -> pl.DataFrame:
    base = {"candidate_pool": ["p1"] * 4, "ranker": ["bm25"] * 4,
            "query_id": ["q1", "q1", "q2", "q2"], "doc_id": ["d1", "d2", "d1", "d3"],
            "score": [2.0, 1.0, 3.0, 0.5], "rank": [1, 2, 1, 2]}
    return pl.DataFrame(base | columns)


@pytest.mark.parametrize("columns", [
    {},  # one pool, one ranker: both literals
    {"ranker": ["bm25", "bm25", "dense", "dense"]},  # two rankers: read as strings
    {"candidate_pool": ["p1"] * 4, "ranker": ["a" * 40] * 4},  # a name stored out of line
])
def test_one_valued_columns_read_as_literals_equal_the_stored_rows(tmp_path, columns):
    stored = _run(**columns)
    path = tmp_path / "run.parquet"
    stored.write_parquet(path)
    read = read_candidates(path, check_keys=False)
    assert_frame_equal(read, stored)
    assert_frame_equal(read_candidates(path, display=False), stored.drop("rank"))


@pytest.mark.parametrize("bad, column, rule, rows", [
    ({"candidate_pool": ["p1", None, "p1", "p1"]}, "candidate_pool", "candidate_pool_not_null",
     [2]),  # null among one name
    ({"candidate_pool": ["p1", "p1", "p2", "p2"]}, "candidate_pool", "one_candidate_pool",
     [3, 4]),
    # A one-valued name is read as a literal and refused by schemas.names, in its own words.
    ({"candidate_pool": ["../x"] * 4}, "candidate_pool", None, [1, 2, 3, 4]),
    ({"ranker": ["bm25", "", "bm25", "bm25"]}, "ranker", "ranker_non_empty", [2]),
    ({"ranker": [None] * 4}, "ranker", "ranker_not_null", [1, 2, 3, 4]),
])
def test_name_columns_are_checked_whole(tmp_path, bad, column, rule, rows):
    path = tmp_path / "run.parquet"
    _run(**bad).write_parquet(path)
    with pytest.raises(InputError) as caught:
        read_candidates(path, display=False)
    shown = bad[column][rows[0] - 1]
    violation(caught, column, rule and CANDIDATE_POOL.rule(rule), rows=rows, source=path,
              values=[shown] if shown is not None else [])


def test_a_rank_that_can_break_its_rule_is_read_and_checked_even_for_scoring(tmp_path):
    path = tmp_path / "run.parquet"
    _run(rank=[1.0, 2.5, 1.0, 2.0]).write_parquet(path)
    with pytest.raises(InputError) as caught:
        read_candidates(path, display=False)
    violation(caught, "rank", rows=[2], values=[2.5], source=path)


def test_judgment_version_literal_and_a_different_asked_name(tmp_path):
    stored = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "grade": [1, None],
                           "grade_status": ["graded", "unknown"], "judgment_version": ["v7", "v7"]})
    path = tmp_path / "v7.parquet"
    stored.write_parquet(path)
    assert_frame_equal(read_judgments(path), stored)
    with pytest.raises(InputError) as caught:
        read_judgments(path, version="v8")
    broken = violation(caught, "judgment_version", rows=[1, 2], values=["v7"], source=path)
    assert_names(broken.rule, "'v8'")  # the version asked for, beside the file's
