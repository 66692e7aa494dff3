"""Measure names in ir_measures' syntax: one canonical measure, printed as ir_measures prints
it; a bad name is refused with what was expected and the nearest name."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evaluation_pipeline.measures.declarations import DECLARATIONS
from evaluation_pipeline.measures.parse import MeasureError, parse_measure
from schemas.errors import EvaluationError

NAMES = ["nDCG@10", "nDCG(dcg='exp-log2')@10", "nDCG(judged_only=True)@10", "RR(rel=2)@10",
         "AP(rel=2)", "AP@100", "P(rel=2)@10", "R@100", "Success@10", "Judged@10", "Rprec",
         "Bpref", "ERR@20", "RBP", "RBP(p=0.5)", "RBP(rel=1)", "AP(judged_only=True)"]


@pytest.mark.parametrize("name", NAMES)
def test_a_name_prints_back_as_written(name):
    assert str(parse_measure(name)) == name


@pytest.mark.parametrize("name", [n for n in NAMES if not n.startswith(("ERR", "DCG"))])
def test_the_canonical_name_is_ir_measures_own(name):
    ir_measures = pytest.importorskip("ir_measures")
    assert str(ir_measures.parse_measure(name)) == str(parse_measure(name))


@pytest.mark.parametrize(("written", "canonical"), [
    ("nDCG(dcg=exp-log2)@10", "nDCG(dcg='exp-log2')@10"),
    ('nDCG(dcg="exp-log2")@10', "nDCG(dcg='exp-log2')@10"),
    ("RBP(p=0.8)", "RBP"),
    ("AP(rel=1)", "AP"),
    ("MRR@10", "RR@10"),
    ("RR(cutoff=10, rel=2)", "RR(rel=2)@10"),
    (" P ( rel = 2 ) @ 10 ", "P(rel=2)@10"),
    ("RBP(p=0)", "RBP(p=0.0)"),
    ("nDCG(judged_only=True,dcg=log2)@5", "nDCG(dcg='log2',judged_only=True)@5"),
])
def test_equal_measures_parse_equal(written, canonical):
    assert parse_measure(written) == parse_measure(canonical)
    assert str(parse_measure(written)) == canonical


@pytest.mark.parametrize(("name", "words"), [
    ("nDGC@10", ["unknown measure 'nDGC'", "did you mean nDCG"]),
    ("RR(rell=2)@10", ["no parameter 'rell'", "did you mean rel"]),
    ("Judged(rel=2)@10", ["no parameter 'rel'", "cutoff"]),
    ("P", ["needs a cutoff", "P@K"]),
    ("RBP(p=1.5)", ["p=1.5", "below 1.0"]),
    ("AP(rel=0)", ["rel=0", ">= 1"]),
    ("RR@0", ["cutoff=0"]),
    ("RR(rel=2", ["does not parse"]),
    ("RR(rel=2,rel=3)", ["given twice"]),
    ("RR(rel=2)@10@5", ["does not parse"]),
    ("nDCG(dcg=exp)@10", ["'log2', 'exp-log2'"]),
    ("", ["expected NAME"]),
])
def test_a_bad_name_is_refused_with_what_was_expected(name, words):
    with pytest.raises(MeasureError) as caught:
        parse_measure(name)
    assert isinstance(caught.value, EvaluationError)
    for word in words:
        assert word in str(caught.value)


def _parameter_values(info):
    if info.choices:
        return st.sampled_from(info.choices)
    if info.dtype is bool:
        return st.booleans()
    if info.dtype is int:
        return st.integers(min_value=int(info.minimum or 0), max_value=1000)
    return st.floats(min_value=0.0, max_value=0.999, allow_nan=False)


@st.composite
def measures(draw):
    declaration = draw(st.sampled_from(DECLARATIONS))
    params = {}
    for key, info in declaration.params.items():
        if info.required or draw(st.booleans()):
            params[key] = draw(_parameter_values(info))
    return declaration.name, params


@given(measures())
def test_every_declared_measure_round_trips(measure):
    """Any measure with any allowed parameters prints to a name that parses back to it."""
    name, params = measure
    cutoff = params.pop("cutoff", None)
    text = name + (f"({','.join(f'{k}={v!r}' for k, v in params.items())})" if params else "")
    text += f"@{cutoff}" if cutoff is not None else ""
    parsed = parse_measure(text)
    assert parse_measure(str(parsed)) == parsed
    for key, value in params.items():
        assert parsed[key] == value
