"""``evaluate(..., measures=[...])`` and ``ndcg-eval score --measure`` against pytrec_eval per
query, to 1e-12, on random data with ties, unjudged documents and grades 0..7, at relevance
levels 1 and 2: the whole path a user takes (inputs read, validated, scored by the engine
chosen), not the kernel alone. A name that does not parse is refused before anything is
written."""

from __future__ import annotations

import json

import polars as pl
import pytest

from evaluation_pipeline import evaluate
from evaluation_pipeline.cli.main import main
from evaluation_pipeline.measures.parse import parse_measure
from tests.unit.metric.measures.test_oracles import TREC, random_data

pytrec_eval = pytest.importorskip("pytrec_eval")


@pytest.mark.parametrize("rel", [1, 2])
@pytest.mark.parametrize("engine", ["local", "streaming"])
def test_evaluate_with_measures_matches_pytrec_eval(rel, engine):
    qrels, run = random_data(seed=11 + rel)
    r = f"(rel={rel})" if rel != 1 else ""
    table = {name: str(parse_measure(ours.format(r=r))) for name, ours in TREC.items()
             if rel == 1 or not name.startswith("ndcg")}  # trec_eval's ndcg ignores -l
    measures = ["nDCG@10", *table.values()]
    result = evaluate(qrels, run, spec="trec_eval", measures=measures, engine=engine)
    assert result.spec.measures is not None
    rows = {(q, m): v for q, m, v in result.per_query.select(
        "query_id", "measure", "value").iter_rows()}
    evaluator = pytrec_eval.RelevanceEvaluator(
        {q: {d: g for d, g in docs.items()} for q, docs in qrels.items()},
        set(table), relevance_level=rel)
    expected = evaluator.evaluate(run)
    checked = 0
    for q, values in expected.items():
        for name, ours in table.items():
            assert rows[(q, ours)] == pytest.approx(values[name], abs=1e-12), (q, name)
            checked += 1
    assert checked == len(table) * len(run)


def test_the_command_scores_the_measures_it_is_given(tmp_path, capsys):
    qrels, run = random_data(seed=5, n_queries=12)
    judgments = tmp_path / "judgments.csv"
    pl.DataFrame([(q, d, g, "graded") for q, docs in qrels.items() for d, g in docs.items()],
                 schema=["query_id", "doc_id", "grade", "grade_status"], orient="row"
                 ).write_csv(judgments)
    run_file = tmp_path / "run.csv"
    pl.DataFrame([("r", q, d, s) for q, docs in run.items() for d, s in docs.items()],
                 schema=["ranker", "query_id", "doc_id", "score"], orient="row"
                 ).write_csv(run_file)
    assert main(["score", "--judgments", str(judgments), "--run", str(run_file), "--profile",
                 "trec_eval", "--measure", "nDCG@10", "--measure", "RR(rel=2)@10",
                 "--measure", "AP(rel=2)", "--out", str(tmp_path / "out")]) == 0
    shown = capsys.readouterr().out
    assert "RR(rel=2)@10" in shown and "AP(rel=2)" in shown
    stored = pl.read_parquet(tmp_path / "out" / "per_query.parquet")
    assert sorted(set(stored["measure"])) == ["AP(rel=2)", "RR(rel=2)@10", "nDCG@10"]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["spec"]["measures"] == ["nDCG@10", "RR(rel=2)@10", "AP(rel=2)"]
    # compare (one result's rankers, two results) and report read the nDCG@K rows.
    for results in ([tmp_path / "out"], [tmp_path / "out", tmp_path / "out"]):
        assert main(["compare", *map(str, results)]) == 0
    assert main(["report", str(tmp_path / "out"), "--out", str(tmp_path / "report")]) == 0
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert {r["cutoff"] for r in report["results"]} == {10}
    capsys.readouterr()
    # The API, given the same files and measures, gives the same rows.
    same = evaluate(judgments, run_file, spec="trec_eval",
                    measures=["nDCG@10", "RR(rel=2)@10", "AP(rel=2)"])
    assert same.per_query.drop("judgment_version", "candidate_pool").equals(
        stored.drop("judgment_version", "candidate_pool"))


@pytest.mark.parametrize(("measure", "names"), [
    ("RR(rell=2)@10", ["no parameter 'rell'", "did you mean rel"]),
    ("nDGC@10", ["unknown measure 'nDGC'", "did you mean nDCG"]),
    ("AP", ["not defined under ties: average"]),
])
def test_a_bad_measure_is_refused_before_anything_is_written(tmp_path, capsys, measure, names):
    qrels, run = random_data(seed=6, n_queries=3)
    with pytest.raises(Exception) as refused:
        evaluate(qrels, run, measures=["nDCG@10", measure])
    for name in names:
        assert name in str(refused.value)
    judgments = tmp_path / "j.csv"
    judgments.write_text("query_id,doc_id,grade,grade_status\nq,d,1,graded\n")
    run_file = tmp_path / "r.csv"
    run_file.write_text("ranker,query_id,doc_id,score\nr,q,d,1.0\n")
    assert main(["score", "--judgments", str(judgments), "--run", str(run_file), "--measure",
                 "nDCG@10", "--measure", measure, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert all(name in err for name in names), err
    assert not (tmp_path / "out").exists()


def test_the_api_gives_every_measure_long_and_wide_and_compares_each_or_the_one_asked():
    qrels, run = random_data(seed=8, n_queries=20)
    names = ["nDCG@10", "RR(rel=2)@10", "AP", "P@5"]
    result = evaluate(qrels, run, spec="trec_eval", measures=names)
    long = result.values()
    assert long.columns == ["ranker", "query_id", "measure", "value"]
    assert sorted(set(long["measure"])) == sorted(names)
    wide = result.means()
    assert wide.columns == ["ranker", *names]
    for name in names:
        assert wide[name][0] == pytest.approx(
            long.filter(pl.col("measure") == name)["value"].mean(), abs=1e-15)
    macro = result.summary.filter(pl.col("cutoff") == 10)["macro_ndcg"][0]
    assert wide["nDCG@10"][0] == pytest.approx(macro, abs=1e-15)
    # ir_measures' calc_aggregate on the same data (its pytrec_eval provider: every query of
    # the run). Its RR@k (msmarco provider) averages over another set of queries, so RR is
    # held to it per query (test_oracles.py), not here.
    ir_measures = pytest.importorskip("ir_measures")
    aggregate = ir_measures.calc_aggregate([ir_measures.parse_measure("P@5")], qrels, run)
    assert wide["P@5"][0] == pytest.approx(aggregate[ir_measures.parse_measure("P@5")],
                                           abs=1e-12)
    # Two pools of the same run: every measure paired, one pair per ranker and measure, or
    # the measure asked for.
    other = evaluate(qrels, run, spec="trec_eval", measures=names, pool="other")
    assert sorted(p["measure"] for p in result.compare(other)["pairs"]) == sorted(names)
    (pair,) = result.compare(other, measure="nDCG@10")["pairs"]
    assert (pair["cutoff"], pair["mean_difference"]) == (10, 0.0)
    assert pair["mean_first"] == pytest.approx(macro, abs=1e-15)
