"""``ndcg-eval agreement``: its --json document has the fields the report format lists, with
the numbers of ``analysis.agreement``; a version without raters is refused."""

from __future__ import annotations

import json

import polars as pl
import pytest
from scipy.stats import kendalltau

from evaluation_pipeline.analysis.agreement import agreement
from evaluation_pipeline.cli.main import main
from evaluation_pipeline.metric.ndcg import score
from evaluation_pipeline.spec import EvaluationSpec
from tests.support.raters import pool_over, rated_version
from tests.support.refusals import assert_names

PAIR_FIELDS = {"rater_a", "rater_b", "overlap", "cohen_kappa", "cohen_kappa_quadratic",
               "mean_difference", "confusion"}


@pytest.fixture
def files(tmp_path):
    version = rated_version(31)
    version.write_csv(tmp_path / "rated-v1.csv")
    pool_over(version, 32).write_parquet(tmp_path / "run.parquet")
    (tmp_path / "spec.yaml").write_text("cutoffs: [3, 5]\nraters: prefer:h1,h2,llm\n")
    return tmp_path, version


def test_json_fields_and_numbers(files, capsys):
    folder, version = files
    assert main(["agreement", "--judgments", str(folder / "rated-v1.csv"), "--run",
                 str(folder / "run.parquet"), "--spec", str(folder / "spec.yaml"),
                 "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert {"pairs", "krippendorff_alpha_ordinal", "krippendorff_alpha_interval",
            "fleiss_kappa", "fleiss_documents", "ndcg", "kendall_tau"} <= set(document)
    assert [set(p) for p in document["pairs"]] == [PAIR_FIELDS] * 3
    assert {tuple(sorted(n)) for n in document["ndcg"]} == {("cutoff", "mean", "measure",
                                                             "ranker", "rater")}
    assert {tuple(sorted(t)) for t in document["kendall_tau"]} == {("cutoff", "measure",
                                                                    "rater_a", "rater_b", "tau")}
    assert {n["rater"] for n in document["ndcg"]} == {"h1", "h2", "llm", "rule"}
    expected = agreement(version, EvaluationSpec(cutoffs=(3, 5), raters="prefer:h1,h2,llm"),
                         pl.read_parquet(folder / "run.parquet"))
    assert document == json.loads(json.dumps(expected))


def test_the_raters_orders_are_compared_on_each_headline_measure(files):
    # A headline of RR and nDCG@5: the means and taus are of those two, each mean the plain
    # mean of the measure's per-query values under that rater alone.
    folder, version = files
    run = pl.read_parquet(folder / "run.parquet")
    spec = EvaluationSpec(ties="doc_id", raters="prefer:h1,h2,llm",
                          measures=["nDCG@3", "nDCG@5", "RR(rel=2)@5", "AP(rel=2)"],
                          headline=["RR(rel=2)@5", "nDCG@5"])
    document = agreement(version, spec, run)
    assert {(n["measure"], n["cutoff"]) for n in document["ndcg"]} == {
        ("nDCG@5", 5), ("RR(rel=2)@5", 5)}
    assert [t["measure"] for t in document["kendall_tau"]][::3] == ["nDCG@5", "RR(rel=2)@5"]
    assert len(document["kendall_tau"]) == 2 * 3  # three raters: three pairs each
    alone = score(run, version, spec.replace(raters="rater:h2"))
    for n in document["ndcg"]:
        if n["rater"] == "h2":
            values = alone.filter((pl.col("ranker") == n["ranker"])
                                  & (pl.col("measure") == n["measure"]))["value"]
            assert n["mean"] == pytest.approx(values.mean(), abs=1e-15)
    taus = {(t["rater_a"], t["rater_b"], t["measure"]): t["tau"]
            for t in document["kendall_tau"]}
    means = {(n["rater"], n["ranker"], n["measure"]): n["mean"] for n in document["ndcg"]}
    rankers = sorted({n["ranker"] for n in document["ndcg"]})
    x = [means["h1", r, "RR(rel=2)@5"] for r in rankers]
    y = [means["llm", r, "RR(rel=2)@5"] for r in rankers]
    assert taus["h1", "llm", "RR(rel=2)@5"] == pytest.approx(kendalltau(x, y).statistic)


def test_text_names_each_pair_and_the_overall_statistics(files, capsys):
    folder, _ = files
    assert main(["agreement", "--judgments", str(folder / "rated-v1.csv")]) == 0
    out = capsys.readouterr().out
    assert "Krippendorff's alpha: ordinal" in out and "Fleiss' kappa" in out
    assert "h1               h2" in out and "NDCG@K" not in out


def test_a_version_without_raters_is_refused(tmp_path, capsys):
    (tmp_path / "plain.csv").write_text("query_id,doc_id,grade,grade_status\nq,d,1,graded\n")
    assert main(["agreement", "--judgments", str(tmp_path / "plain.csv")]) == 2
    assert_names(capsys.readouterr().err, str(tmp_path / "plain.csv"), "'rater'")
