"""A reconciliation walks conventions over the same grades: two specs that combine raters
differently are refused, naming the command that compares raters."""

from __future__ import annotations

import pytest

from evaluation_pipeline.analysis.reconcile import ReconcileError, plan
from evaluation_pipeline.spec import EvaluationSpec


def test_reconcile_refuses_two_rules_for_raters():
    with pytest.raises(ReconcileError, match="combine raters differently"):
        plan(EvaluationSpec(raters="max"), EvaluationSpec(raters="min"), cutoffs=[5])
    with pytest.raises(ReconcileError, match="ndcg-eval agreement"):
        plan(EvaluationSpec(), EvaluationSpec(raters="rater:h1"))
    assert plan(EvaluationSpec(raters="max"), EvaluationSpec(raters="max", gain="linear")
                ).fields == ("gain",)
