"""Every refusal of the Python API is an ``EvaluationError`` naming the argument, and the API
refuses what the CLI refuses: a cutoff goes through the spec's one check of cutoffs (as
--cutoff does), a grade through the contract's checks of the judgments (as a file's does).
No polars or Python exception escapes: ``cutoffs=[2.5]`` scored NDCG@2, a grade of ``inf``
raised polars' InvalidOperationError, ``2**70`` an OverflowError, ``cutoffs=5`` a TypeError.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluation_pipeline import evaluate, explain, reconcile
from evaluation_pipeline.api import agreement, resolve_spec
from evaluation_pipeline.api.arguments import ApiOptionError
from evaluation_pipeline.cli.main import main
from evaluation_pipeline.spec import MAX_CUTOFF, SpecError, profile
from schemas.errors import EvaluationError, InputError
from schemas.integers import INT64_MAX, INT64_MIN

QRELS = {"q1": {"a": 2, "b": 0}, "q2": {"c": 1}}
RUN = {"q1": {"a": 1.0, "b": 0.5}, "q2": {"c": 2.0}}


@pytest.fixture(scope="module")
def result():
    return evaluate(QRELS, RUN)


def refused(call) -> EvaluationError:
    """The error ``call`` raises: an EvaluationError, never another exception."""
    with pytest.raises(Exception) as raised:
        call()
    assert isinstance(raised.value, EvaluationError), repr(raised.value)
    return raised.value


def names(error: EvaluationError, argument: str) -> bool:
    """The message names the argument (``memory limit`` and ``memory_limit`` alike)."""
    return argument in str(error).replace(" ", "_")


# -- cutoffs: the spec's own check, as --cutoff ------------------------------------------------

@pytest.mark.parametrize("cutoffs", [[2.5], 2.5, 5.0, [0], 0, [-3], [True], True, ["5"], "5",
                                     [], [MAX_CUTOFF + 1], [5, None], {"k": 5}],
                         ids=repr)
def test_every_cutoff_the_cli_refuses_is_refused_by_the_spec_check(cutoffs):
    error = refused(lambda: evaluate(QRELS, RUN, cutoffs=cutoffs))
    assert isinstance(error, SpecError) and names(error, "cutoffs")


@pytest.mark.parametrize("cutoff", [2.5, 0, -1, True, "5", [5]], ids=repr)
def test_explain_refuses_a_cutoff_the_cli_refuses(cutoff):
    error = refused(lambda: explain(QRELS, RUN, query="q1", ranker="run", cutoff=cutoff))
    assert isinstance(error, SpecError) and names(error, "cutoff")


@pytest.mark.parametrize("call", [
    lambda cutoffs: reconcile(QRELS, RUN, "default", "trec_eval", cutoffs=cutoffs),
    lambda cutoffs: agreement(QRELS, RUN, cutoffs=cutoffs),
], ids=["reconcile", "agreement"])
def test_the_other_functions_refuse_cutoffs_alike(call):
    for cutoffs in ([2.5], 0, [True]):
        error = refused(lambda cutoffs=cutoffs: call(cutoffs))
        assert isinstance(error, SpecError) and names(error, "cutoffs"), cutoffs


def test_a_cutoff_the_cli_refuses_is_refused_by_the_cli_with_the_same_error(capsys, tmp_path):
    """--cutoff 0 and cutoffs=[0]: the one check, one message."""
    args = ["score", "--judgments", "j.csv", "--run", "r.csv", "--out", str(tmp_path / "o"),
            "--cutoff", "0"]
    assert main(args) == 2
    error = refused(lambda: evaluate(QRELS, RUN, cutoffs=[0]))
    assert str(error) in capsys.readouterr().err


def test_one_integer_cutoff_and_numpy_integers_are_the_cutoffs_they_say():
    assert evaluate(QRELS, RUN, cutoffs=3).spec.cutoffs == (3,)
    assert evaluate(QRELS, RUN, cutoffs=np.array([3, 1])).spec.cutoffs == (1, 3)
    assert explain(QRELS, RUN, query="q1", ranker="run", cutoff=np.int64(2)).cutoff == 2


def _is_cutoff(value) -> bool:
    return (isinstance(value, int | np.integer) and not isinstance(value, bool)
            and 1 <= value <= MAX_CUTOFF)


CUTOFF_VALUES = st.one_of(st.integers(-5, MAX_CUTOFF + 5), st.floats(), st.booleans(),
                          st.text(max_size=3), st.none())


@settings(max_examples=300, deadline=None)
@given(st.one_of(CUTOFF_VALUES, st.lists(CUTOFF_VALUES, max_size=4)))
def test_cutoffs_are_taken_as_given_or_refused_naming_cutoffs(cutoffs):
    if cutoffs is None:  # the spec's own
        assert resolve_spec(None, cutoffs) == profile("default")
        return
    values = cutoffs if isinstance(cutoffs, list) else [cutoffs]
    if values and all(map(_is_cutoff, values)):
        assert resolve_spec(None, cutoffs).cutoffs == tuple(sorted(set(values)))
    else:
        error = refused(lambda: resolve_spec(None, cutoffs))
        assert isinstance(error, SpecError) and names(error, "cutoffs")


# -- grades: the contract's checks of a judgments file -----------------------------------------

@pytest.mark.parametrize("grade", [math.inf, -math.inf, 2**70, 2**63, -(2**70), 1e30],
                         ids=repr)
def test_a_grade_beyond_int64_is_refused_naming_column_rule_row_and_value(grade):
    qrels = {"q1": {"a": 2, "b": grade}, "q2": {"c": 1}}
    error = refused(lambda: evaluate(qrels, RUN))
    assert isinstance(error, InputError) and error.source == "judgments (dict)"
    [violation] = error.violations
    assert violation.column == "grade" and "int64" in violation.rule
    assert violation.rows == (2,) and violation.examples == (repr(str(grade)),)


@pytest.mark.parametrize("grade", [math.nan, 2.5, -0.5, True, "high", None], ids=repr)
def test_other_bad_grades_are_refused_naming_the_grade_columns(grade):
    qrels = {"q1": {"a": 2, "b": grade}, "q2": {"c": 1}}
    error = refused(lambda: evaluate(qrels, RUN))
    assert isinstance(error, InputError)
    assert {v.column for v in error.violations} <= {"grade", "grade_status"}
    assert all(v.rows == (2,) for v in error.violations)


@pytest.mark.parametrize("frame", [
    pl.DataFrame({"grade": [2.0, math.inf]}),
    pl.DataFrame({"grade": pl.Series([2, 2**64 - 1], dtype=pl.UInt64)}),
    pl.DataFrame({"grade": ["2", "99999999999999999999999"]}),
], ids=["float-inf", "uint64", "text"])
def test_a_frame_grade_beyond_int64_is_refused_naming_its_row(frame):
    judgments = frame.with_columns(query_id=pl.lit("q1"), doc_id=pl.Series(["a", "b"]),
                                   grade_status=pl.lit("graded"))
    error = refused(lambda: evaluate(judgments, RUN))
    assert isinstance(error, InputError) and error.source == "judgments (polars DataFrame)"
    [violation] = error.violations
    assert (violation.column, violation.rows) == ("grade", (2,))
    assert "int64" in violation.rule


GRADES = st.one_of(st.integers(-(2**80), 2**80), st.floats(), st.booleans(),
                   st.text(max_size=4), st.none())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(GRADES)
def test_any_grade_is_scored_or_refused_as_an_evaluation_error(grade):
    qrels = {"q1": {"a": 2, "b": grade}, "q2": {"c": 1}}
    try:
        evaluate(qrels, RUN, engine="local")
    except EvaluationError as error:
        if isinstance(grade, int) and not isinstance(grade, bool) and not (
                INT64_MIN <= grade <= INT64_MAX):
            assert error.violations[0].column == "grade"  # refused as out of range
            assert error.violations[0].examples == (repr(str(grade)),)
    # Anything else (OverflowError, polars' errors, a TypeError) fails the test.


@pytest.mark.parametrize("grade", [2**21, 2**30, 2**62])
def test_a_huge_grade_under_linear_gain_is_refused_as_an_evaluation_error(grade):
    """The bounds list every grade 0..the largest: under linear gain 2**30 of them was a
    MemoryError, 2**62 numpy's ValueError (exponential gain refuses a grade above 1023)."""
    refused(lambda: evaluate({"q1": {"a": 2, "b": grade}}, RUN, spec="trec_eval"))


def test_a_big_score_in_a_run_dict_is_the_float_it_is():
    scored = evaluate(QRELS, {"q1": {"a": 2**70, "b": 0.5}, "q2": {"c": 2.0}})
    assert scored.per_query["status"].to_list().count("scored") == 4


# -- every other argument: its type, then the check the CLI's value goes through ---------------

CALLS = {
    "judgments": lambda r: evaluate(None, RUN),
    "run": lambda r: evaluate(QRELS, None),
    "spec": lambda r: evaluate(QRELS, RUN, spec=42),
    "queries": lambda r: evaluate(QRELS, RUN, queries=42),
    "engine": lambda r: evaluate(QRELS, RUN, engine="fast"),
    "judgment_version": lambda r: evaluate(QRELS, RUN, judgment_version=42),
    "pool": lambda r: evaluate(QRELS, RUN, pool=["p"]),
    "ranker": lambda r: evaluate(QRELS, RUN, ranker=42),
    "memory_limit": lambda r: evaluate(QRELS, RUN, memory_limit=2.5),
    "memory_limit ": lambda r: evaluate(QRELS, RUN, memory_limit=True),
    "memory_limit  ": lambda r: evaluate(QRELS, RUN, memory_limit="lots"),
    "query": lambda r: explain(QRELS, RUN, query=None, ranker="run"),
    "ranker ": lambda r: explain(QRELS, RUN, query="q1", ranker=None),
    "ranker  ": lambda r: explain(QRELS, RUN, query="q1", ranker=1),
    "spec ": lambda r: explain(QRELS, RUN, query="q1", ranker="run", spec=3.0),
    "order": lambda r: reconcile(QRELS, RUN, "default", "trec_eval", order=5),
    "order ": lambda r: reconcile(QRELS, RUN, "default", "trec_eval", order=["nope"]),
    "shapley": lambda r: reconcile(QRELS, RUN, "default", "trec_eval", shapley="no"),
    "sensitivity": lambda r: reconcile(QRELS, RUN, "default", sensitivity=1),
    "spec  ": lambda r: reconcile(QRELS, RUN, 42, "trec_eval"),
    "ranker   ": lambda r: agreement(QRELS, RUN, ranker=7),
    "ci_level": lambda r: r.report(ci_level="0.9"),
    "ci_level ": lambda r: r.report(ci_level=2),
    "n_bootstrap": lambda r: r.report(n_bootstrap=2.5),
    "n_bootstrap ": lambda r: r.report(n_bootstrap=True),
    "n_bootstrap  ": lambda r: r.compare(n_bootstrap=0),
    "seed": lambda r: r.report(seed="x"),
    "seed ": lambda r: r.compare(seed=1.5),
    "n_regressions": lambda r: r.report(n_regressions=2.5),
    "slices": lambda r: r.report(slices=5),
    "baseline": lambda r: r.report(baseline=5),
    "baseline ": lambda r: r.compare(baseline="nobody"),
    "other": lambda r: r.compare(42),
    "queries ": lambda r: r.report(queries=42),
}


@pytest.mark.parametrize("argument", CALLS)
def test_every_wrong_argument_is_an_evaluation_error_naming_it(argument, result):
    error = refused(lambda: CALLS[argument](result))
    named = argument.strip()
    if isinstance(error, InputError):  # an input, or a name the reader checks
        assert named.split("_")[-1] in error.source or any(
            named.split("_")[-1] in v.column for v in error.violations), str(error)
    else:
        assert names(error, named), str(error)


def test_a_wrong_type_never_reaches_the_code_behind_it():
    """The types argparse gives the CLI are the API's to check: ApiOptionError."""
    for argument in ("ranker", "memory_limit", "query", "shapley", "order", "n_bootstrap",
                     "seed", "slices", "other"):
        error = refused(lambda argument=argument: CALLS[argument](evaluate(QRELS, RUN)))
        assert isinstance(error, ApiOptionError), argument
