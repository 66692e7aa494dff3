"""The spec's ``resamples``: a report, a comparison and the tiers use them unless the caller
gives its own, and a spec whose resamples are too few for its family is refused before any
file is written."""

import pytest

from evaluation_pipeline import evaluate
from evaluation_pipeline.report import ReportConfig
from evaluation_pipeline.spec import EvaluationSpec
from evaluation_pipeline.stats.family import TooFewResamples

JUDGMENTS = "examples/data/landing/judgments/maint-v2.csv"
POOL = "examples/data/landing/pools/pool-2026-11-28"


def test_the_specs_resamples_are_the_reports_unless_given():
    result = evaluate(JUDGMENTS, POOL, spec=EvaluationSpec(resamples=300))
    statistics = result.report().record["statistics"]
    assert (statistics["n_bootstrap"], statistics["test_resamples"]) == (300, 300)
    assert {p["test_resamples"] for p in result.compare()["pairs"]} == {300}
    assert result.report(n_bootstrap=500).record["statistics"]["n_bootstrap"] == 500
    # Unset, the default; and the field is in spec_id only when set.
    assert ReportConfig().under(EvaluationSpec()).n_bootstrap == 2000
    assert "resamples" not in EvaluationSpec().to_dict()
    assert EvaluationSpec(resamples=300).spec_id != EvaluationSpec().spec_id


def test_resamples_too_few_for_the_family_are_refused_before_anything_is_written(tmp_path):
    result = evaluate(JUDGMENTS, POOL, spec=EvaluationSpec(resamples=100))
    # 3 ranker pairs x 2 cutoffs: 6 / 101 is not below 0.05.
    with pytest.raises(TooFewResamples, match="use at least 120 resamples"):
        result.report().write(tmp_path / "report")
    assert not (tmp_path / "report").exists()
    with pytest.raises(TooFewResamples):
        result.tiers()
