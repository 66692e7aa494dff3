"""The spec's `raters` rules, each held to a plain pandas recomputation of its definition
(contract section 1, Several raters), on random versions with missing and unknown ratings."""

from __future__ import annotations

import math
from collections import Counter

import polars as pl
import pytest

from evaluation_pipeline.metric.raters import RatersError, combine_ratings
from evaluation_pipeline.spec import PROFILES, EvaluationSpec, SpecError, spec_from_mapping
from tests.support.raters import rated_version
from tests.support.refusals import assert_names


def mean_rounded(grades, rounding):
    exact = sum(grades) / len(grades)
    return {"half_up": math.floor(exact + 0.5), "half_down": math.ceil(exact - 0.5),
            "floor": math.floor(exact), "ceil": math.ceil(exact)}[rounding]


def majority(grades, tie):
    counts = Counter(grades)
    top = max(counts.values())
    tied = [g for g, c in counts.items() if c == top]
    return max(tied) if tie == "higher" else min(tied)


POOLED = {
    "mean:half_up": lambda g: mean_rounded(g, "half_up"),
    "mean:half_down": lambda g: mean_rounded(g, "half_down"),
    "mean:floor": lambda g: mean_rounded(g, "floor"),
    "mean:ceil": lambda g: mean_rounded(g, "ceil"),
    "median": lambda g: sorted(g)[(len(g) - 1) // 2],
    "median:higher": lambda g: sorted(g)[len(g) // 2],
    "majority:lower": lambda g: majority(g, "lower"),
    "majority:higher": lambda g: majority(g, "higher"),
    "max": max,
    "min": min,
}


def recomputed(version: pl.DataFrame, rule: str) -> dict:
    """(query_id, doc_id) -> grade or "unknown", by the rule's words, one document at a time."""
    ratings = version.to_pandas()
    name, _, rest = rule.partition(":")
    out = {}
    for (query, doc), rows in ratings.groupby(["query_id", "doc_id"]):
        if name == "rater":
            rows = rows[rows["rater"] == rest]
        elif name == "prefer":
            order = rest.split(",")
            rows = rows[rows["rater"].isin(order)]
            rows = rows.assign(at=rows["rater"].map(order.index)).sort_values("at")
        if rows.empty:
            continue  # no counted rating: unjudged
        graded = rows[rows["grade_status"] == "graded"]
        if graded.empty:
            out[(query, doc)] = "unknown"
        elif name in ("rater", "prefer"):
            out[(query, doc)] = int(graded["grade"].iloc[0])
        else:
            out[(query, doc)] = POOLED[rule]([int(g) for g in graded["grade"]])
    return out


def as_dict(combined: pl.DataFrame) -> dict:
    return {(q, d): ("unknown" if s == "unknown" else g)
            for q, d, g, s in combined.select("query_id", "doc_id", "grade", "grade_status")
            .iter_rows()}


RULES = [*POOLED, "rater:h1", "rater:llm", "prefer:h1,h2,llm", "prefer:llm,h1", "prefer:h2"]


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_each_rule_is_its_definition(rule, seed):
    version = rated_version(seed, raters=("h1", "h2", "h3", "llm"), max_grade=4)
    combined = combine_ratings(version, EvaluationSpec(raters=rule))
    assert as_dict(combined) == recomputed(version, rule)
    assert combined.columns == ["query_id", "doc_id", "grade", "grade_status",
                                "judgment_version"]
    assert combined.select("query_id", "doc_id").equals(
        combined.select("query_id", "doc_id").sort("query_id", "doc_id"))
    assert not combined.select("query_id", "doc_id").is_duplicated().any()


def test_unknown_is_skipped_and_all_unknown_stays_unknown():
    version = pl.DataFrame(
        [("q", "a", "h1", None, "unknown"), ("q", "a", "h2", 1, "graded"),
         ("q", "b", "h1", None, "unknown"), ("q", "b", "h2", None, "unknown"),
         ("q", "c", "h2", 3, "graded")],
        schema=["query_id", "doc_id", "rater", "grade", "grade_status"], orient="row")
    for rule in ("min", "mean:floor", "prefer:h1,h2"):
        combined = as_dict(combine_ratings(version, EvaluationSpec(raters=rule)))
        assert combined == {("q", "a"): 1, ("q", "b"): "unknown", ("q", "c"): 3}
    # One rater alone: h1's unknowns stay unknown, and c, which h1 did not rate, is unjudged.
    assert as_dict(combine_ratings(version, EvaluationSpec(raters="rater:h1"))) == {
        ("q", "a"): "unknown", ("q", "b"): "unknown"}


def test_a_version_with_raters_needs_a_rule_and_a_named_rule_needs_raters():
    version = rated_version(4)
    with pytest.raises(RatersError) as refused:
        combine_ratings(version, EvaluationSpec())
    assert_names(refused, "judgments", "'raters'")  # what is refused, the field that would do
    plain = version.filter(pl.col("rater") == "h1").drop("rater", "rater_kind")
    assert combine_ratings(plain, EvaluationSpec(raters="max")).equals(plain)
    with pytest.raises(RatersError) as refused:
        combine_ratings(plain, EvaluationSpec(raters="rater:h1"))
    assert_names(refused, "judgments", "'raters'", "'rater:h1'")  # the field and its rule


def test_the_rule_is_in_spec_id_only_when_set():
    assert EvaluationSpec().spec_id == "cf68d57384f1ab70"  # as every earlier result names it
    assert "raters" not in EvaluationSpec().to_dict()
    assert all("raters" not in spec.to_dict() for spec in PROFILES.values())
    ids = {EvaluationSpec(raters=rule).spec_id for rule in RULES}
    assert len(ids) == len(RULES) and EvaluationSpec().spec_id not in ids
    assert spec_from_mapping({"raters": "prefer: h1, llm"}).raters == "prefer:h1,llm"


@pytest.mark.parametrize("bad", ["mean", "majority", "median:lower", "rater:", "rater:a,b",
                                 "prefer:a,,b", "prefer:a,a", "average", 3])
def test_a_rule_outside_the_choices_is_refused(bad):
    with pytest.raises(SpecError) as refused:
        EvaluationSpec(raters=bad)
    assert_names(refused, "'raters'", repr(bad))
