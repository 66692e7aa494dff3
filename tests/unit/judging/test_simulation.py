"""The loop simulated on a fully judged data set with holes punched in it (``simulation``),
judged by the test server at several accuracies: the bounds narrow as the budget grows, and
the gate promotes a judge that agrees with people on 90% of the documents and refuses one that
agrees on 50%. (The increment that re-scores only the changed queries, with the bytes of a
full scoring, is tests/unit/orchestration/test_judging_asset.py's.)"""

from __future__ import annotations

import polars as pl
import pytest

from evaluation_pipeline.analysis.worklist import worklist
from evaluation_pipeline.judging.cache import AnswerCache
from evaluation_pipeline.judging.calibration import calibration_pairs
from evaluation_pipeline.judging.client import JudgeClient
from evaluation_pipeline.judging.gate import Thresholds, gate
from evaluation_pipeline.judging.output import judgment_frame
from evaluation_pipeline.judging.pairs import LINE, with_texts
from evaluation_pipeline.judging.prompt import load_template
from evaluation_pipeline.judging.run import judge_pairs
from evaluation_pipeline.metric.ndcg import score
from evaluation_pipeline.metric.raters import combine_ratings
from evaluation_pipeline.spec import EvaluationSpec
from tests.support.judge_server import JudgeServer
from tests.unit.judging.simulation import simulate

SPEC = EvaluationSpec()
THRESHOLDS = Thresholds(min_kappa=0.6, min_tau=0.8, min_overlap=30)  # the settings' defaults
CALIBRATION = 80


@pytest.fixture(scope="module")
def sim():
    return simulate()


@pytest.fixture(scope="module")
def holes(sim) -> pl.DataFrame:
    version = sim.people.drop("rater", "rater_kind")
    return worklist(version, sim.candidates, SPEC, sim.queries).select("query_id", "doc_id")


def judged(sim, holes: pl.DataFrame, tmp_path, *, accuracy: float, budget: int,
           wrong: str = "near", calibration: int = CALIBRATION) -> pl.DataFrame:
    """People's ratings and the judge's of the worklist's first ``budget`` holes and of
    ``calibration`` documents people graded: one version with raters."""
    first = holes.head(budget).with_columns(pl.lit(0, pl.Int64).alias(LINE))
    calibrated = calibration_pairs(sim.people, first, sim.queries, sim.documents, calibration)
    pairs = with_texts(pl.concat([first, calibrated.select(first.columns)]), sim.queries,
                       sim.documents, "worklist", "queries", "documents")
    template = load_template(None)
    with JudgeServer(sim.grades, accuracy=accuracy, wrong=wrong, seed=3) as server:
        client, cache = JudgeClient(server.base_url, "sim-judge"), AnswerCache(tmp_path)
        try:
            outcome = judge_pairs(pairs, template, client, cache, concurrency=8)
        finally:
            client.close()
            cache.close()
    judge = judgment_frame(outcome.judged, version="sim", rater="sim-judge", model="sim-judge",
                           template=template, temperature=0.0)
    return pl.concat([sim.people, judge], how="diagonal_relaxed").with_columns(
        judgment_version=pl.lit("sim"))


def mean_width(sim, version: pl.DataFrame) -> float:
    """The mean width of the bounds of NDCG@10 over the queries and rankers (contract section 3,
    rule 7)."""
    per_query = score(sim.candidates, version, SPEC)
    return per_query.filter(pl.col("cutoff") == 10).select(
        (pl.col("ndcg_max") - pl.col("ndcg_min")).mean()).item()


def test_the_bounds_narrow_as_the_budget_grows(sim, holes, tmp_path):
    widths = []
    for budget in (0, 20, 60, holes.height):
        ratings = judged(sim, holes, tmp_path / str(budget), accuracy=0.9, budget=budget,
                         calibration=0)
        rule = "prefer:maint,sim-judge"
        widths.append(mean_width(sim, combine_ratings(ratings, SPEC.replace(raters=rule))))
    assert widths == sorted(widths, reverse=True) and len(set(widths)) == len(widths), widths
    assert widths[0] > 0.2 and widths[-1] == 0.0, widths  # every hole graded: no bound left


@pytest.mark.parametrize("wrong", ["near", "any"])
def test_the_gate_promotes_a_judge_at_90_percent(sim, holes, tmp_path, wrong):
    ratings = judged(sim, holes, tmp_path, accuracy=0.9, budget=holes.height, wrong=wrong)
    verdict = gate(ratings, SPEC, sim.candidates, THRESHOLDS)
    assert verdict.promoted, verdict.reason
    (pair,) = verdict.pairs
    assert pair["overlap"] >= CALIBRATION and pair["kappa_quadratic"] >= 0.6
    assert [t["cutoff"] for t in verdict.taus] == list(SPEC.cutoffs)
    assert verdict.reason.startswith("promoted: sim-judge vs maint: quadratic kappa ")


def test_the_gate_refuses_a_judge_at_50_percent(sim, holes, tmp_path):
    # Wrong on half the documents, and anywhere on the scale when wrong.
    ratings = judged(sim, holes, tmp_path, accuracy=0.5, budget=holes.height, wrong="any")
    verdict = gate(ratings, SPEC, sim.candidates, THRESHOLDS)
    assert not verdict.promoted
    assert verdict.reason.startswith("refused: sim-judge vs maint: quadratic kappa ")
    assert "is below 0.6 (NDCG_EVAL_GATE_MIN_KAPPA)" in verdict.reason


def test_a_judge_without_enough_documents_in_common_is_not_measured(sim, holes, tmp_path):
    # Holes only: no person graded them.
    ratings = judged(sim, holes, tmp_path, accuracy=1.0, budget=10, calibration=0)
    verdict = gate(ratings, SPEC, sim.candidates, THRESHOLDS)
    assert not verdict.promoted
    assert verdict.reason == ("refused: sim-judge and people graded at most 0 documents in "
                              "common; the gate needs 30 (NDCG_EVAL_GATE_MIN_OVERLAP)")
