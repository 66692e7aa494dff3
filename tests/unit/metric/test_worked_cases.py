"""Contract section 6: the worked cases, exact to 1e-12."""

from __future__ import annotations

import math

import polars as pl
import pytest

from evaluation_pipeline.metric.ndcg import score
from evaluation_pipeline.spec import EvaluationSpec
from tests.support.frames import one_query

TOL = 1e-12
LINEAR = EvaluationSpec(gain="linear", cutoffs=(3,))
EXPONENTIAL = EvaluationSpec(gain="exponential", cutoffs=(3,))


def ndcg_of(grades, spec, scores=None):
    candidates, judgments = one_query(grades, scores)
    rows = score(candidates, judgments, spec)
    return rows


def single(grades, spec, scores=None):
    rows = ndcg_of(grades, spec, scores)
    assert rows.height == 1
    return rows.row(0, named=True)


def test_case_a_linear():
    expected = (1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3))
    assert expected == pytest.approx(0.7967075809905066, abs=TOL)
    assert single([1, 3, 0], LINEAR)["ndcg"] == pytest.approx(0.7967075809905066, abs=TOL)


def test_case_a_exponential():
    assert single([1, 3, 0], EXPONENTIAL)["ndcg"] == pytest.approx(0.7098097413968655, abs=TOL)


def test_case_b():
    assert single([0, 3, 1], LINEAR)["ndcg"] == pytest.approx(0.6590018048024133, abs=TOL)
    assert single([0, 3, 1], EXPONENTIAL)["ndcg"] == pytest.approx(0.6442869262030828, abs=TOL)


def test_case_c_cutoffs_one_and_two_in_one_pass():
    rows = ndcg_of([1, 3, 0], EvaluationSpec(gain="linear", cutoffs=(1, 2)))
    by_k = dict(zip(rows["cutoff"], rows["ndcg"]))
    assert by_k[1] == pytest.approx(1 / 3, abs=TOL)
    assert by_k[2] == pytest.approx(0.7967075809905066, abs=TOL)


def test_case_d_scaling_and_shifting():
    assert single([2, 6, 0], LINEAR)["ndcg"] == pytest.approx(0.7967075809905066, abs=TOL)
    assert single([2, 4, 1], LINEAR)["ndcg"] == pytest.approx(0.871891966136623, abs=TOL)


def test_case_e_tie_average():
    spec = EvaluationSpec(gain="linear", cutoffs=(1,), ties="average")
    assert single([3, 1], spec, scores=[0.5, 0.5])["ndcg"] == pytest.approx(2 / 3, abs=TOL)


def test_case_f_no_positive_is_null_and_counted_apart():
    row = single([0, 0, 0], LINEAR)
    assert row["ndcg"] is None
    assert row["status"] == "no_positive"


def test_case_f_prime_unknown_leaves_query_incomplete():
    row = single([3, "u", 0], LINEAR.replace(unknown="incomplete"))
    assert row["ndcg"] is None
    assert row["status"] == "incomplete"
    assert (row["n_graded"], row["n_unknown"], row["n_candidates"]) == (2, 1, 3)


def test_case_g_two_queries_and_macro_mean():
    pump_c, pump_j = one_query([1, 3, 0, 2], query_id="pump-47")
    valve_c, valve_j = one_query([2, 0, 1], query_id="valve-62")
    rows = score(
        pl.concat([pump_c, valve_c]), pl.concat([pump_j, valve_j]), EXPONENTIAL
    )
    by_query = dict(zip(rows["query_id"], rows["ndcg"]))
    assert by_query["pump-47"] == pytest.approx(0.5766666455144387, abs=TOL)
    assert by_query["valve-62"] == pytest.approx(0.9639404333166532, abs=TOL)
    assert rows["ndcg"].mean() == pytest.approx(0.770303539415546, abs=TOL)
