"""``evaluate()`` held to the CLI: on files, DataFrames (polars, pandas), Arrow tables and nested
dicts, its per-query rows are the bytes of the per_query.parquet ``ndcg-eval score`` writes on
the same data, lineage hashes included; its summary is summary.json's, its report report.json's;
under ``profile="trec_eval"`` on pytrec_eval's dicts it is pytrec_eval's ndcg_cut."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import polars as pl
import pytest
import pytrec_eval
from polars.testing import assert_frame_equal

from evaluation_pipeline import Evaluation, evaluate
from evaluation_pipeline.cli.main import main
from evaluation_pipeline.engines import PER_QUERY_ROW_GROUP_ROWS
from schemas.columns import PER_QUERY_COLUMNS
from tests.support.paths import EXAMPLES, P28, V1, V2

QUERIES = EXAMPLES / "queries.csv"


def cli_score(tmp_path, judgments, run, *flags) -> tuple[bytes, dict]:
    out = tmp_path / "cli"
    assert main(["score", "--judgments", str(judgments), "--run", str(run), "--out", str(out),
                 *flags]) == 0
    return (out / "per_query.parquet").read_bytes(), json.loads((out / "summary.json").read_text())


def parquet_bytes(frame: pl.DataFrame, where) -> bytes:
    """The frame written as every engine writes per_query.parquet."""
    frame.write_parquet(where, compression="zstd", statistics=True,
                        row_group_size=PER_QUERY_ROW_GROUP_ROWS)
    return where.read_bytes()


def assert_same_rows(result: Evaluation, cli: bytes, tmp_path) -> None:
    written = pl.read_parquet(cli)
    assert result.per_query.columns == list(PER_QUERY_COLUMNS)
    assert_frame_equal(result.per_query, written, check_exact=True)
    assert parquet_bytes(result.per_query, tmp_path / "api.parquet") == cli


def pool_frame() -> pl.DataFrame:
    return pl.concat([pl.read_parquet(p) for p in sorted(P28.glob("*.parquet"))],
                     how="diagonal_relaxed")


def grades_frame() -> pl.DataFrame:
    return pl.read_csv(V2, schema_overrides={"query_id": pl.String, "doc_id": pl.String})


def test_files_give_the_cli_rows_and_summary(tmp_path):
    cli, summary = cli_score(tmp_path, V2, P28, "--queries", str(QUERIES))
    result = evaluate(V2, P28, queries=QUERIES)
    assert_same_rows(result, cli, tmp_path)
    # The stamp records the bytes of the file the CLI wrote; an evaluation in memory has none.
    assert result.summary_record() == {k: v for k, v in summary.items() if k != "stamp"}
    assert result.summary["macro_ndcg"].to_list() == [r["macro_ndcg"] for r in summary["results"]]
    assert result.summary["n_scored"].to_list() == [r["status_counts"]["scored"]
                                                    for r in summary["results"]]


@pytest.mark.parametrize("kind", ["polars", "pandas", "arrow", "lazy"])
def test_tables_in_memory_give_the_rows_of_their_files(tmp_path, kind):
    cli, _ = cli_score(tmp_path, V2, P28)
    grades, pool = grades_frame(), pool_frame()
    convert = {"polars": lambda f: f, "pandas": lambda f: f.to_pandas(),
               "arrow": lambda f: f.to_arrow(), "lazy": lambda f: f.lazy()}[kind]
    assert_same_rows(evaluate(convert(grades), convert(pool)), cli, tmp_path)


def test_tables_without_names_are_named_as_the_flags_name_files(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    grades = grades_frame().drop("judgment_version")
    pool = pool_frame().filter(pl.col("ranker") == "bm25-v3").drop("candidate_pool", "ranker")
    grades.write_csv(plain / "grades.csv")
    pool.write_parquet(plain / "one.parquet")
    cli, _ = cli_score(tmp_path, plain / "grades.csv", plain / "one.parquet",
                       "--judgment-version", "v9", "--pool", "night", "--ranker", "bm25")
    result = evaluate(grades, pool, judgment_version="v9", pool="night", ranker="bm25")
    assert_same_rows(result, cli, tmp_path)
    unnamed = evaluate(grades, pool.to_pandas())
    assert (unnamed.lineage.judgment_version, unnamed.lineage.candidate_pool,
            unnamed.per_query["ranker"][0]) == ("judgments", "pool", "run")
    assert unnamed.lineage.judgments_sha256 == result.lineage.judgments_sha256


def qrels_of(grades: pl.DataFrame) -> dict:
    """pytrec_eval's qrels dict; an unknown grade is rel -1 (in the pool, not judged)."""
    qrels: dict = {}
    for q, d, g, status in grades.select("query_id", "doc_id", "grade", "grade_status").rows():
        qrels.setdefault(q, {})[d] = -1 if status == "unknown" else g
    return qrels


def runs_of(pool: pl.DataFrame) -> dict:
    runs: dict = {}
    for r, q, d, s in pool.select("ranker", "query_id", "doc_id", "score").rows():
        runs.setdefault(r, {}).setdefault(q, {})[d] = s
    return runs


def test_nested_dicts_give_the_rows_of_the_files(tmp_path):
    cli, _ = cli_score(tmp_path, V2, P28)
    grades = grades_frame()
    result = evaluate(qrels_of(grades), runs_of(pool_frame()),
                      judgment_version="maint-v2", pool="pool-2026-11-28")
    assert_same_rows(result, cli, tmp_path)


def test_a_one_ranker_dict_is_named_by_ranker(tmp_path):
    runs = runs_of(pool_frame())
    result = evaluate(qrels_of(grades_frame()), runs["dense-v2"], ranker="dense-v2",
                      judgment_version="maint-v2", pool="pool-2026-11-28")
    cli, _ = cli_score(tmp_path, V2, P28 / "dense-v2.parquet")
    assert_same_rows(result, cli, tmp_path)


def random_dicts(seed: int) -> tuple[dict, dict]:
    """Qrels with negative (unjudged) and zero grades, runs with many tied scores, judged
    documents no ranker returned and returned documents never judged."""
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(40):
        docs = [f"d{q}-{i}" for i in range(int(rng.integers(1, 15)))]
        qrels[f"q{q}"] = {d: int(g) for d in docs if (g := rng.integers(-1, 4)) > -2
                          and rng.random() < 0.8}
        run[f"q{q}"] = {d: float(rng.choice([0.0, 0.5, 0.5, 1.0, 2.0])) for d in docs
                        if rng.random() < 0.9}
        qrels[f"q{q}"][f"never-{q}"] = int(rng.integers(0, 3))
    return {q: g for q, g in qrels.items() if g}, {q: r for q, r in run.items() if r}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_trec_eval_profile_on_dicts_is_pytrec_eval(seed):
    qrels, run = random_dicts(seed)
    result = evaluate(qrels, run, spec="trec_eval", cutoffs=[1, 5, 10])
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.1,5,10"}).evaluate(run)
    ours = {(q, k): v for q, k, v in result.per_query.select("query_id", "cutoff", "ndcg").rows()}
    assert theirs
    for q, measures in theirs.items():
        for k in (1, 5, 10):
            assert ours[(q, k)] == pytest.approx(measures[f"ndcg_cut_{k}"], abs=1e-12), (q, k)
    # trec_eval scores the judged queries of the run alone; the others are counted apart.
    apart = result.per_query.filter(~pl.col("query_id").is_in(list(theirs)))
    assert apart["ndcg"].null_count() == apart.height


def test_the_report_is_the_clis(tmp_path):
    out = tmp_path / "cli"
    assert main(["score", "--judgments", str(V2), "--run", str(P28), "--out", str(out),
                 "--queries", str(QUERIES), "--report", "--bootstrap", "200"]) == 0
    report = evaluate(V2, P28, queries=QUERIES).report(n_bootstrap=200)
    assert report.to_json() == (out / "report.json").read_text()
    assert report.record["headline"] == report.headline
    written = report.write(tmp_path / "api")
    for name in ("report.json", "report.html", "aggregates.parquet", "per_query.parquet"):
        assert (written / name).read_bytes() == (out / name).read_bytes(), name
    assert sorted(p.name for p in (written / "traces").iterdir()) == sorted(
        p.name for p in (out / "traces").iterdir())
    html = report.to_html(tmp_path / "page.html")
    assert html.read_text() == (out / "report.html").read_text()


def test_in_memory_queries_give_the_files_weights(tmp_path):
    from_file = evaluate(V2, P28, queries=QUERIES)
    in_memory = evaluate(V2, P28, queries=pd.read_csv(QUERIES))
    assert_frame_equal(from_file.summary, in_memory.summary)
    assert in_memory.queries_sha256 and in_memory.queries_sha256 != from_file.queries_sha256


def test_compare_is_the_clis_within_and_across_versions(tmp_path):
    new = evaluate(V2, P28)
    old = evaluate(V1, P28)
    within = new.compare(baseline="bm25-v3", n_bootstrap=200)
    assert {(p["first"], p["second"]) for p in within["pairs"]} == {
        ("bm25-v3", "dense-v2"), ("bm25-v3", "hybrid-v1")}
    diff = old.compare(new)
    assert (diff["judgment_version_old"], diff["judgment_version_new"]) == ("maint-v1", "maint-v2")
    assert diff["n_added"] + diff["n_removed"] + diff["n_regraded"] == diff[
        "judgment_changes"].height > 0


def test_to_pandas_holds_the_rows():
    result = evaluate(V2, P28)
    frame = result.to_pandas()
    assert list(frame.columns) == list(PER_QUERY_COLUMNS)
    assert len(frame) == result.per_query.height


def test_the_streaming_engine_gives_the_same_rows_from_memory(tmp_path):
    cli, _ = cli_score(tmp_path, V2, P28)
    result = evaluate(grades_frame(), pool_frame(), engine="streaming")
    assert result.engine == "streaming" and result.candidates is None
    assert_same_rows(result, cli, tmp_path)
