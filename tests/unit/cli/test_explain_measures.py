"""ndcg-eval explain --measure and explain(measure=...): the trace of any measure, its number the
one ndcg-eval score writes; NDCG's trace as it was; a measure that does not parse, or a cutoff
that is not the measure's own, refused."""

from __future__ import annotations

import json

import polars as pl
import pytest

from evaluation_pipeline import explain
from evaluation_pipeline.api.functions import ApiOptionError
from evaluation_pipeline.cli.main import main
from evaluation_pipeline.measures.parse import MeasureError, parse_measure
from tests.support.paths import P28, REPO, V2

TRACE = ["explain", "--judgments", str(V2), "--run", str(P28), "--query", "boiler-32",
         "--ranker", "hybrid-v1"]
MEASURES = ["RR(rel=2)@10", "AP(rel=2)@100", "R@100", "P@5", "Success@3", "DCG@5", "Judged@10",
            "Rprec", "Bpref", "ERR@10", "RBP(p=0.5)", "nDCG(dcg=log2)@10"]


def printed(capsys, *argv) -> str:
    capsys.readouterr()
    assert main([*TRACE, *argv]) == 0
    return capsys.readouterr().out


def test_each_measure_traced_is_the_number_score_writes(tmp_path, capsys):
    names = [str(parse_measure(m)) for m in MEASURES]
    assert main(["score", "--judgments", str(V2), "--run", str(P28), "--out", str(tmp_path),
                 "--profile", "trec_eval", "--measure", "nDCG@10",
                 *(a for m in names for a in ("--measure", m))]) == 0
    rows = pl.read_parquet(tmp_path / "per_query.parquet").filter(
        (pl.col("ranker") == "hybrid-v1") & (pl.col("query_id") == "boiler-32"))
    shown = json.loads(printed(capsys, "--profile", "trec_eval", "--json",
                               *(a for m in MEASURES for a in ("--measure", m))))
    assert [t["measure"] for t in shown] == names
    for trace in shown:
        row = rows.filter(pl.col("measure") == trace["measure"]).row(0, named=True)
        assert (trace["status"], trace["value"]) == (row["status"], row["value"])
        assert trace["traced"] == pytest.approx(row["value"], rel=1e-12, abs=1e-12)
        assert trace["candidate_pool"] == row["candidate_pool"]
        assert trace["counts"] and trace["formula"]


def test_the_table_shows_the_first_relevant_position_and_precisions(capsys):
    text = printed(capsys, "--spec", str(REPO / "examples" / "trec_dl_spec.yaml"),
                   "--measure", "RR(rel=2)@10", "--measure", "AP(rel=2)@100")
    assert ("ranker hybrid-v1, RR(rel=2)@10 0.500000 (status scored); first relevant document "
            "(grade >= 2) at position 2: RR = 1/2 = 0.500000") in text
    assert "relevant so far  precision  contrib" in text
    assert "over R = 2: 0.583333" in text


def test_ndcg_traces_are_as_they_were(capsys):
    by_cutoff = printed(capsys, "--cutoff", "5")
    assert printed(capsys, "--measure", "nDCG@5") == by_cutoff
    assert printed(capsys, "--measure", "NDCG@5", "--cutoff", "5") == by_cutoff
    assert printed(capsys, "--measure", "nDCG@5", "--json") == printed(capsys, "--cutoff", "5",
                                                                        "--json")
    assert "NDCG@5 0.764411 (status scored); DCG 9.734038 / ideal DCG 12.734038" in by_cutoff


def test_a_cutoff_beside_a_measure_must_be_its_own(capsys):
    capsys.readouterr()
    assert main([*TRACE, "--measure", "RR@10", "--cutoff", "5"]) == 2
    error = capsys.readouterr().err
    assert "--cutoff 5 and --measure RR@10 disagree" in error
    assert main([*TRACE, "--measure", "RR@10", "--cutoff", "10", "--json"]) == 0
    (trace,) = json.loads(capsys.readouterr().out)
    assert trace["measure"] == "RR@10"


def test_a_measure_that_does_not_parse_is_refused_with_the_parsers_message(capsys):
    with pytest.raises(SystemExit) as exit_:
        main([*TRACE, "--measure", "RRR@10"])
    assert exit_.value.code == 2
    with pytest.raises(MeasureError) as parsed:
        parse_measure("RRR@10")
    assert str(parsed.value) in capsys.readouterr().err


def test_the_api_traces_a_measure_as_the_cli_does(capsys):
    (shown,) = json.loads(printed(capsys, "--measure", "RR(rel=2)@10", "--json"))
    trace = explain(V2, P28, query="boiler-32", ranker="hybrid-v1", measure="RR(rel=2)@10")
    assert trace.to_dict() == {k: v for k, v in shown.items()
                               if k not in ("candidate_pool", "spec_id", "conventions")}
    same = explain(V2, P28, query="boiler-32", ranker="hybrid-v1", measure="MRR(rel=2)@10",
                   cutoff=10)
    assert same.to_dict() == trace.to_dict()
    ndcg = explain(V2, P28, query="boiler-32", ranker="hybrid-v1", measure="nDCG@5")
    assert ndcg.to_dict() == explain(V2, P28, query="boiler-32", ranker="hybrid-v1",
                                     cutoff=5).to_dict()


@pytest.mark.parametrize("measure, cutoff, words", [
    ("RR(rel=2)@10", 5, "its cutoff is 10; give the measure alone, RR(rel=2)@5 for that"),
    ("RR", 5, "it has no cutoff (it reads the whole list); give the measure alone, RR@5"),
    ("Rprec", 5, "Rprec takes no cutoff; leave cutoff out"),
])
def test_the_api_refuses_a_cutoff_that_is_not_the_measures(measure, cutoff, words):
    with pytest.raises(ApiOptionError, match="disagree") as refused:
        explain(V2, P28, query="boiler-32", ranker="hybrid-v1", measure=measure, cutoff=cutoff)
    assert words in str(refused.value)


def test_the_api_refuses_a_measure_that_does_not_parse_with_the_parsers_message():
    with pytest.raises(MeasureError) as parsed:
        parse_measure("AP(rell=2)")
    with pytest.raises(MeasureError) as refused:
        explain(V2, P28, query="boiler-32", ranker="hybrid-v1", measure="AP(rell=2)")
    assert str(refused.value) == str(parsed.value)
    with pytest.raises(ApiOptionError, match="measure must be a string"):
        explain(V2, P28, query="boiler-32", ranker="hybrid-v1", measure=3)
