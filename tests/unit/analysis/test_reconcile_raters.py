"""A reconciliation walks conventions over the same grades: two specs that combine raters
differently are refused, naming the command that compares raters."""

from __future__ import annotations

import pytest

from evaluation_pipeline.analysis.reconcile import ReconcileError, plan
from evaluation_pipeline.spec import EvaluationSpec
from tests.support.refusals import assert_names


def test_reconcile_refuses_two_rules_for_raters():
    with pytest.raises(ReconcileError) as refused:
        plan(EvaluationSpec(raters="max"), EvaluationSpec(raters="min"), cutoffs=[5])
    assert_names(refused, "max", "min", "ndcg-eval agreement")  # each rule, and the command
    with pytest.raises(ReconcileError) as refused:
        plan(EvaluationSpec(), EvaluationSpec(raters="rater:h1"))
    assert_names(refused, "rater:h1", "ndcg-eval agreement")
    assert plan(EvaluationSpec(raters="max"), EvaluationSpec(raters="max", gain="linear")
                ).fields == ("gain",)
