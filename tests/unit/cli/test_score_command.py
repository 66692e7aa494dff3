"""`ndcg-eval score` end to end on the bundled example data."""

from __future__ import annotations

import json
import subprocess
import sys

import polars as pl

from evaluation_pipeline.cli.main import main
from schemas import PerQueryResults
from tests.support.paths import EXAMPLES

LINEAGE = ["judgment_version", "judgments_sha256", "candidate_pool", "pool_sha256", "spec_id",
           "project_version"]


def test_score_writes_per_query_and_summary_with_lineage(tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["score", "--judgments", str(EXAMPLES / "landing/judgments/maint-v2.csv"),
                 "--run", str(EXAMPLES / "landing/pools/pool-2026-11-28"),
                 "--queries", str(EXAMPLES / "queries.csv"), "--out", str(out)])
    assert code == 0
    rows = pl.read_parquet(out / "per_query.parquet")
    PerQueryResults.validate(rows)
    assert set(rows["ranker"]) == {"bm25-v3", "hybrid-v1", "dense-v2"}
    assert rows.select(LINEAGE).unique().height == 1
    assert rows["judgment_version"][0] == "maint-v2"
    assert rows["candidate_pool"][0] == "pool-2026-11-28"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["spec_id"] == rows["spec_id"][0]
    assert summary["lineage"]["judgments_sha256"] == rows["judgments_sha256"][0]
    hybrid10 = next(r for r in summary["results"]
                    if r["ranker"] == "hybrid-v1" and r["cutoff"] == 10)
    expected = rows.filter(pl.col("ranker") == "hybrid-v1", pl.col("cutoff") == 10)["ndcg"].mean()
    assert hybrid10["macro_ndcg"] == expected
    assert "maint-v2" in hybrid10["sentence"] and "ties averaged" in hybrid10["sentence"]
    printed = capsys.readouterr().out
    assert "hybrid-v1" in printed and "spec " + summary["spec_id"] in printed


def test_hashes_do_not_depend_on_row_order(tmp_path):
    src = EXAMPLES / "landing/judgments/maint-v1.csv"
    shuffled = tmp_path / "maint-v1.csv"
    rows = pl.read_csv(src, infer_schema=False)
    rows.sample(fraction=1.0, shuffle=True, seed=7).write_csv(shuffled)
    run = EXAMPLES / "landing/pools/pool-2026-11-28"
    for name, judgments in (("a", src), ("b", shuffled)):
        assert main(["score", "--judgments", str(judgments), "--run", str(run),
                     "--out", str(tmp_path / name)]) == 0
    a = json.loads((tmp_path / "a/summary.json").read_text())
    b = json.loads((tmp_path / "b/summary.json").read_text())
    assert a == b
    assert ((tmp_path / "a/per_query.parquet").read_bytes()
            == (tmp_path / "b/per_query.parquet").read_bytes())


def test_console_script_and_trec_reader(tmp_path):
    out = tmp_path / "trec"
    run = EXAMPLES / "landing/pools/pool-2026-11-28/bm25-v3.parquet"
    done = subprocess.run(
        [sys.executable, "-m", "evaluation_pipeline.cli.main", "score", "--judgments",
         str(EXAMPLES / "trec/maint-v1.qrels"), "--run", str(run), "--profile", "trec_eval",
         "--cutoff", "10", "--out", str(out)],
        capture_output=True, text=True,
    )
    assert done.returncode == 0, done.stderr
    rows = pl.read_parquet(out / "per_query.parquet")
    assert rows["judgment_version"][0] == "maint-v1"
    assert set(rows["cutoff"]) == {10}


def test_bad_spec_exits_2_and_writes_nothing(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text("ties: random\n")
    out = tmp_path / "out"
    code = main(["score", "--judgments", str(EXAMPLES / "landing/judgments/maint-v1.csv"),
                 "--run", str(EXAMPLES / "landing/pools/pool-2026-11-28"), "--spec", str(spec),
                 "--out", str(out)])
    assert code == 2
    assert "ties" in capsys.readouterr().err
    assert not out.exists()


def test_streaming_engine_gives_the_same_numbers_and_lineage(tmp_path):
    judgments = EXAMPLES / "landing/judgments/maint-v2.csv"
    parquet_judgments = tmp_path / "maint-v2.parquet"
    pl.read_csv(judgments, schema_overrides={"grade": pl.Int64}).write_parquet(parquet_judgments)
    run = EXAMPLES / "landing/pools/pool-2026-11-28/hybrid-v1.parquet"
    # "[*]" in the output folder: its files are read back by name, not as a pattern.
    for name, engine in (("local", "local"), ("streaming[*]", "streaming")):
        assert main(["score", "--judgments", str(parquet_judgments), "--run", str(run),
                     "--engine", engine, "--batch-rows", "50", "--out", str(tmp_path / name)]) == 0
    local = json.loads((tmp_path / "local/summary.json").read_text())
    streamed = json.loads((tmp_path / "streaming[*]/summary.json").read_text())
    assert local["lineage"] == streamed["lineage"]
    assert local["results"] == streamed["results"]
    a = pl.read_parquet(tmp_path / "local/per_query.parquet")
    b = pl.read_parquet(tmp_path / "streaming[*]/per_query.parquet", glob=False)
    assert a.equals(b)
    assert main(["report", str(tmp_path / "streaming[*]"), "--out", str(tmp_path / "report")]) == 0


def test_a_grouped_run_is_streamed_without_a_sort_and_said_so(tmp_path, capsys):
    # Each ranker's queries whole, in numeric order of their number (q2 before q10 would be
    # out of byte order): the stream says it needs no sort, and writes the sorted run's bytes.
    judgments = pl.read_csv(EXAMPLES / "landing/judgments/maint-v2.csv",
                            schema_overrides={"grade": pl.Int64})
    judgments.write_parquet(tmp_path / "maint-v2.parquet")
    outs = {}
    for order in ("sorted", "grouped"):
        pool = tmp_path / order / "pool-2026-11-28"
        pool.mkdir(parents=True)
        for run in sorted((EXAMPLES / "landing/pools/pool-2026-11-28").glob("*.parquet")):
            frame = pl.read_parquet(run).sort("query_id", "doc_id")
            if order == "grouped":
                frame = frame.sort("query_id", descending=True, maintain_order=True)
            frame.write_parquet(pool / run.name)
        outs[order] = tmp_path / f"out-{order}"
        assert main(["score", "--judgments", str(tmp_path / "maint-v2.parquet"), "--run",
                     str(pool), "--engine", "streaming", "--batch-rows", "9",
                     "--out", str(outs[order])]) == 0
        err = capsys.readouterr().err
        assert ("run is grouped by (ranker, query_id) but not sorted" in err) == (
            order == "grouped")
        assert "external sort" not in err
    assert (outs["sorted"] / "per_query.parquet").read_bytes() == (
        outs["grouped"] / "per_query.parquet").read_bytes()
