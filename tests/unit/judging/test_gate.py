"""``ndcg-eval gate`` and ``judging.gate``: the figures, the declared thresholds, the verdict
in words, and the exit status a script reads (0 promoted, 3 refused, 2 bad input)."""

from __future__ import annotations

import json

import polars as pl

from evaluation_pipeline import settings
from evaluation_pipeline.cli.main import main
from evaluation_pipeline.io.readers import read_judgments
from evaluation_pipeline.judging.gate import Thresholds, gate, people_rule
from tests.support.paths import EXAMPLES

RATERS = EXAMPLES / "raters" / "maint-raters.csv"
POOL = EXAMPLES / "landing" / "pools" / "pool-2026-11-28"


def test_a_judge_that_agrees_with_people_is_promoted(capsys):
    assert main(["gate", "--judgments", str(RATERS), "--run", str(POOL), "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["promoted"] and verdict["judges"] == ["llm-judge"]
    assert verdict["people"] == ["h1", "h2"]
    assert [(p["judge"], p["person"], p["decides"]) for p in verdict["pairs"]] == [
        ("llm-judge", "h1", True), ("llm-judge", "h2", True)]
    assert all(p["kappa_quadratic"] >= 0.6 for p in verdict["pairs"])
    assert [t["cutoff"] for t in verdict["taus"]] == [5, 10]
    assert verdict["thresholds"] == {"min_kappa": 0.6, "min_tau": 0.8, "min_overlap": 30}
    assert verdict["rule"] == "prefer:h1,h2,llm-judge" and verdict["people_rule"] == (
        "prefer:h1,h2")
    assert verdict["reason"].startswith("promoted: llm-judge vs h1: quadratic kappa 0.901")


def test_a_threshold_it_misses_refuses_it_and_says_which(capsys, monkeypatch):
    monkeypatch.setenv(settings.GATE_MIN_KAPPA.name, "0.85")
    assert main(["gate", "--judgments", str(RATERS)]) == 3
    out = capsys.readouterr().out
    assert ("refused: llm-judge vs h2: quadratic kappa 0.830 over 714 documents is below 0.85 "
            "(NDCG_EVAL_GATE_MIN_KAPPA)") in out
    # An option wins over the setting.
    assert main(["gate", "--judgments", str(RATERS), "--min-kappa", "0.5"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("promoted: ")


def test_a_bad_threshold_is_named(capsys, monkeypatch):
    monkeypatch.setenv(settings.GATE_MIN_OVERLAP.name, "0")
    assert main(["gate", "--judgments", str(RATERS)]) == 2
    assert "NDCG_EVAL_GATE_MIN_OVERLAP='0' is not a whole number at least 1" in (
        capsys.readouterr().err)


def test_a_version_without_raters_is_refused_as_input(capsys):
    version = EXAMPLES / "landing" / "judgments" / "maint-v2.csv"
    assert main(["gate", "--judgments", str(version)]) == 2
    assert "the gate needs a version with raters" in capsys.readouterr().err


def test_people_alone_and_nothing_to_gate():
    ratings = read_judgments(RATERS)
    people = ratings.filter(pl.col("rater_kind") == "human")
    verdict = gate(people, thresholds=Thresholds(0.6, 0.8, 30))
    assert verdict.promoted and verdict.reason.startswith("nothing to gate")
    judge = ratings.filter(pl.col("rater_kind") == "llm")
    verdict = gate(judge, thresholds=Thresholds(0.6, 0.8, 30))
    assert not verdict.promoted
    assert verdict.reason == ("refused: no person's ratings (rater_kind human) to measure "
                              "llm-judge against")


def test_people_alone_keep_the_rule_s_order_of_people():
    assert people_rule("prefer:h2,llm,h1", ["h1", "h2", "h3"]) == "prefer:h2,h1,h3"
    assert people_rule("rater:llm", ["h1", "h2"]) == "prefer:h1,h2"
    assert people_rule("majority:higher", ["h1"]) == "majority:higher"
