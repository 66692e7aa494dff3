"""ndcg-eval report / compare / explain, and score --report, over the example data."""

from __future__ import annotations

import json

import polars as pl
import pytest

from evaluation_pipeline.cli.main import main
from evaluation_pipeline.spec import EvaluationSpec
from tests.support.paths import EXAMPLES, P28, P29, V1, V2

FAST = ["--bootstrap", "200"]


def score(out, judgments=V2, pool=P28, *extra):
    args = ["score", "--judgments", str(judgments), "--run", str(pool), "--out", str(out), *extra]
    assert main(args) == 0
    return out


def test_score_without_report_writes_only_its_two_files(tmp_path):
    score(tmp_path / "s")
    assert sorted(p.name for p in (tmp_path / "s").iterdir()) == [
        "per_query.parquet", "summary.json"]


def test_score_report_and_report_command_agree_with_summary(tmp_path, capsys):
    out = score(tmp_path / "s", V2, P28, "--queries", str(EXAMPLES / "queries.csv"), "--report",
                *FAST, "--regressions", "2")
    report = json.loads((out / "report.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    for mine, theirs in zip(report["results"], summary["results"], strict=True):
        assert mine["macro_ndcg"] == pytest.approx(theirs["macro_ndcg"], abs=1e-15)
        assert mine["status_counts"] == theirs["status_counts"]
    assert report["traces"] and all((out / t["path"]).exists() for t in report["traces"])
    capsys.readouterr()
    # The report command over the score output: same spec from summary.json, same numbers.
    again = tmp_path / "again"
    assert main(["report", str(out), "--out", str(again), *FAST, "--baseline", "bm25-v3",
                 "--queries", str(EXAMPLES / "queries.csv")]) == 0
    printed = capsys.readouterr().out
    rerun = json.loads((again / "report.json").read_text())
    assert [r["macro_ndcg_interval"] for r in rerun["results"]] == [
        r["macro_ndcg_interval"] for r in report["results"]
    ]
    assert rerun["comparison"]["baseline"] == "bm25-v3"
    assert "hybrid-v1 vs bm25-v3" in printed and "dense-v2 vs hybrid-v1" not in printed


def test_report_refuses_a_spec_that_did_not_produce_the_rows(tmp_path, capsys):
    out = score(tmp_path / "s")
    (out / "summary.json").unlink()
    assert main(["report", str(out), "--profile", "trec_eval", *FAST]) == 2
    assert "not" in capsys.readouterr().err
    assert not (out / "report.json").exists()


def test_compare_judgment_versions_over_one_pool(tmp_path, capsys):
    old, new = score(tmp_path / "v1", V1), score(tmp_path / "v2", V2)
    capsys.readouterr()
    assert main(["compare", str(old), str(new), "--judgments", str(V1), str(V2)]) == 0
    printed = capsys.readouterr().out
    assert "maint-v1 -> maint-v2" in printed and "regraded" in printed
    assert "queries whose status changed" in printed


def test_compare_pools_is_labelled_not_pure(tmp_path, capsys):
    first, second = score(tmp_path / "a", V2, P28), score(tmp_path / "b", V2, P29)
    capsys.readouterr()
    assert main(["compare", str(first), str(second), "--pools", str(P28), str(P29), *FAST]) == 0
    printed = capsys.readouterr().out
    assert "not a pure reranker comparison" in printed
    assert "recall first" in printed and "candidates added" in printed


def test_compare_rankers_within_one_result(tmp_path, capsys):
    out = score(tmp_path / "s")
    capsys.readouterr()
    assert main(["compare", str(out), "--cutoff", "10", *FAST]) == 0
    printed = capsys.readouterr().out
    assert "multiple comparisons: holm" in printed and "hybrid-v1 vs bm25-v3" in printed


def test_explain_prints_a_trace_whose_ndcg_is_the_scored_one(tmp_path, capsys):
    out = score(tmp_path / "s")
    capsys.readouterr()
    assert main(["explain", "--judgments", str(V2), "--run", str(P28), "--query", "boiler-32",
                 "--ranker", "hybrid-v1", "--cutoff", "5", "--json"]) == 0
    (trace,) = json.loads(capsys.readouterr().out)
    row = pl.read_parquet(out / "per_query.parquet").filter(
        (pl.col("ranker") == "hybrid-v1") & (pl.col("query_id") == "boiler-32")
        & (pl.col("cutoff") == 5)
    ).row(0, named=True)
    assert trace["ndcg"] == row["ndcg"]
    assert trace["candidate_pool"] == row["candidate_pool"]
    assert trace["spec_id"] == EvaluationSpec(cutoffs=(5,)).spec_id  # --cutoff 5 over the default
    assert trace["dcg"] == pytest.approx(row["dcg"], rel=1e-12)
    assert trace["ideal_dcg"] == pytest.approx(row["ideal_dcg"], rel=1e-12)


def test_subcommands_are_listed_in_help(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    printed = capsys.readouterr().out
    assert all(name in printed for name in ("report", "compare", "explain"))


def test_a_report_from_the_columns_it_reads_writes_the_same_files(tmp_path):
    """The pipeline's report holds only ``REPORT_COLUMNS`` and copies the whole rows into the
    report from their file (one file byte for byte, a folder of parts streamed into one): every
    file is byte for byte the report of all columns, from one file and from a folder of
    parts."""
    from evaluation_pipeline.evaluation import read_with_lineage
    from evaluation_pipeline.io.atomic import write_parquet
    from evaluation_pipeline.report import REPORT_COLUMNS, ReportConfig, write_report
    from evaluation_pipeline.spec import profile

    out = score(tmp_path / "s")
    parts = tmp_path / "parts" / "per_query.parquet"
    parts.mkdir(parents=True)
    rows = pl.read_parquet(out / "per_query.parquet")
    for number, start in enumerate(range(0, rows.height, 7)):  # as Spark writes a result
        write_parquet(rows.slice(start, 7), parts / f"part-{number:05d}.parquet")
    (parts / "_SUCCESS").touch()
    queries = pl.read_csv(EXAMPLES / "queries.csv")
    config = ReportConfig(n_bootstrap=200)
    for source in (out / "per_query.parquet", parts):
        whole, lineage = read_with_lineage(source)
        narrow, same = read_with_lineage(source, columns=REPORT_COLUMNS)
        assert same == lineage and narrow.height == whole.height
        assert set(narrow.columns) < set(whole.columns)
        assert set(REPORT_COLUMNS) <= set(narrow.columns)
        written = {}
        for name, frame, copied in (("whole", whole, None), ("narrow", narrow, source)):
            folder = tmp_path / f"{name}-{source.parent.name}"
            folder.mkdir()
            write_report(folder, frame, profile("default"), lineage, queries, config,
                         per_query_source=copied)
            written[name] = {p.name: p.read_bytes() for p in folder.iterdir()}
        assert written["narrow"] == written["whole"]
        if source.is_file():  # the scoring's own bytes, whatever the writer's settings
            assert written["narrow"]["per_query.parquet"] == source.read_bytes()
        assert pl.read_parquet(tmp_path / f"narrow-{source.parent.name}" / "per_query.parquet"
                               ).equals(rows)
