"""The Spark engine gives the local engine's per-query rows (PySpark on local[2])."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from evaluation_pipeline.engines import score_files
from evaluation_pipeline.spec import profile
from schemas import InputError
from schemas.columns import PER_QUERY_KEY
from tests.support.paths import EXAMPLES
from tests.support.spark_session import requires_spark
from tests.support.unshared_pool import unshared_pool

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (the `spark` extra)")
pytestmark = requires_spark

JUDGMENTS = EXAMPLES / "landing" / "judgments" / "maint-v2.csv"
POOL = EXAMPLES / "landing" / "pools" / "pool-2026-11-28"


@pytest.fixture
def inputs(tmp_path):
    judgments = tmp_path / "maint-v2.parquet"
    pl.read_csv(JUDGMENTS, schema_overrides={"grade": pl.Int64}).write_parquet(judgments)
    # One file for the whole pool: Spark reads one URL (a file or a folder of parts).
    run = tmp_path / "pool-2026-11-28" / "run.parquet"
    run.parent.mkdir()
    pl.concat([pl.read_parquet(p).drop("rank") for p in sorted(POOL.glob("*.parquet"))]
              ).write_parquet(run)
    return judgments, run


def test_spark_equals_local(inputs, tmp_path, spark):
    # trec_eval: the all_judged ideal and missing_from_run need every judgment row of a query
    # beside its candidates, which is what the cogroup provides. (One spec: Spark start-up and
    # jobs dominate the time; the kernel itself is covered spec by spec elsewhere.)
    judgments, run = inputs
    _same_as_local(judgments, run, run, tmp_path, spark, "run")


def test_spark_scores_a_specs_other_measures_as_local_does(inputs, tmp_path, spark):
    # Each query's group is scored by the same call as the local engine's, every measure of
    # the spec in it.
    judgments, run = inputs
    spec = profile("trec_eval").replace(
        measures=["nDCG@10", "RR(rel=2)@10", "AP(rel=2)@100", "R@100", "Bpref"])
    _same_as_local(judgments, run, run, tmp_path, spark, "measures", spec)


@pytest.mark.parametrize("column", ["grade", "grade_status"])
def test_a_graded_row_without_a_grade_or_status_is_refused(inputs, tmp_path, spark, column):
    # SQL logic: a rule over a null is null, and a sum of nulls counts nothing; the rule must
    # count such a row as broken, as the local engine's model does.
    from schemas import InputError

    judgments, run = inputs
    broken = tmp_path / "broken.parquet"
    grades = pl.read_parquet(judgments)
    first_graded = grades["grade_status"].to_list().index("graded")
    grades.with_columns(pl.when(pl.int_range(pl.len()) == first_graded)
                        .then(None).otherwise(pl.col(column)).alias(column)).write_parquet(broken)
    with pytest.raises(InputError, match="grade_status must be graded"):
        score_files(broken, run, profile("trec_eval"), str(tmp_path / "out"), engine="spark",
                    spark_session=spark)
    assert not (tmp_path / "out").exists()


def test_the_command_reads_and_writes_urls(inputs, tmp_path, spark):
    # file:// stands for any URL the session reaches (s3a://, hdfs://): per-query parts and
    # the summary are written there, through Spark, and match the local engine's.
    import json

    from evaluation_pipeline.cli.main import main

    judgments, run = inputs
    assert main(["score", "--judgments", str(judgments), "--run", str(run), "--profile",
                 "trec_eval", "--out", str(tmp_path / "local")]) == 0
    out = (tmp_path / "remote").as_uri()
    assert main(["score", "--engine", "spark", "--judgments", judgments.as_uri(), "--run",
                 run.as_uri(), "--profile", "trec_eval", "--out", out]) == 0
    local = json.loads((tmp_path / "local" / "summary.json").read_text())
    remote = json.loads((tmp_path / "remote" / "summary.json").read_text())
    assert remote["lineage"] == local["lineage"] and remote["results"] == local["results"]
    expected = pl.read_parquet(tmp_path / "local" / "per_query.parquet")
    got = pl.read_parquet(tmp_path / "remote" / "per_query.parquet" / "*.parquet")
    assert_frame_equal(got.select(expected.columns).sort("ranker", "query_id", "cutoff"),
                       expected)
    assert not list((tmp_path / "remote").glob(".*tmp*"))  # no temporary file left beside


def test_ties_by_rank_equal_local(tmp_path, spark):
    # The cogroup hands a bucket its rows in no set order: the run's rank restores the tie order.
    judgments = tmp_path / "maint-v2.parquet"
    pl.read_csv(JUDGMENTS, schema_overrides={"grade": pl.Int64}).write_parquet(judgments)
    run = tmp_path / "pool-2026-11-28" / "run.parquet"
    run.parent.mkdir()
    pl.concat([pl.read_parquet(p) for p in sorted(POOL.glob("*.parquet"))]).sample(
        fraction=1.0, shuffle=True, seed=2).write_parquet(run)
    _same_as_local(judgments, run, run, tmp_path, spark, "ranked", profile("lightgbm"))
    pl.read_parquet(run).drop("rank").write_parquet(run)
    with pytest.raises(InputError, match="column 'rank': required column is missing"):
        score_files(judgments, run, profile("lightgbm"), str(tmp_path / "none"),
                    engine="spark", spark_session=spark)
    assert not (tmp_path / "none").exists()


def _same_as_local(judgments, local_run, spark_run, tmp_path, spark, name, spec=None):
    spec = spec or profile("trec_eval")
    local = score_files(judgments, local_run, spec, tmp_path / f"{name}-local.parquet",
                        engine="local")
    remote = score_files(judgments, spark_run, spec, str(tmp_path / f"{name}-spark"),
                         engine="spark", spark_session=spark)
    assert remote.lineage == local.lineage
    expected = pl.read_parquet(local.per_query_path)
    got = pl.read_parquet(tmp_path / f"{name}-spark" / "*.parquet").select(expected.columns)
    assert remote.rows == expected.height
    assert_frame_equal(got.sort(*PER_QUERY_KEY), expected)
    return local.lineage, set(got["ranker"])


# File names a URI spells differently (a space, a percent sign) and a folder name with dots.
_RANKER_FILES = {"bm25-v3": "bm25 v3", "dense-v2": "dense%41.v2", "hybrid-v1": "hybrid-v1"}


@pytest.fixture
def pool_folder(tmp_path):
    """The example pool as one file per ranker, with no ranker or pool column."""
    folder = tmp_path / "pool-2026.11.28"
    folder.mkdir()
    for path in sorted(POOL.glob("*.parquet")):
        pl.read_parquet(path).drop("rank", "ranker", "candidate_pool").write_parquet(
            folder / f"{_RANKER_FILES[path.stem]}.parquet")
    judgments = tmp_path / "maint-v2.parquet"
    pl.read_csv(JUDGMENTS, schema_overrides={"grade": pl.Int64}).write_parquet(judgments)
    return judgments, folder


def test_a_pool_folder_is_named_as_the_local_reader_names_it(pool_folder, tmp_path, spark):
    # The folder names the pool and each file's stem its ranker, in both engines; a pattern
    # that picks the files is the same pool.
    judgments, folder = pool_folder
    for name, url in (("folder", str(folder)), ("pattern", f"{folder.as_uri()}/*.parquet")):
        lineage, rankers = _same_as_local(judgments, folder, url, tmp_path, spark, name)
        assert lineage.candidate_pool == "pool-2026.11.28"
        assert rankers == set(_RANKER_FILES.values())


def test_a_run_spark_wrote_in_parts_is_one_run(inputs, tmp_path, spark):
    # A folder of part files with _SUCCESS is one run: named by its parent folder and itself,
    # as the same rows in one file of that name are.
    judgments, run = inputs
    one = pl.read_parquet(run).filter(pl.col("ranker") == "bm25-v3").drop(
        "ranker", "candidate_pool")
    single = tmp_path / "copy" / "runs" / "bm25-v3.parquet"
    single.parent.mkdir(parents=True)
    one.write_parquet(single)
    parts = tmp_path / "written" / "runs" / "bm25-v3.parquet"
    spark.createDataFrame(one.to_pandas()).repartition(3).write.parquet(str(parts))
    assert (parts / "_SUCCESS").exists()
    lineage, rankers = _same_as_local(judgments, single, str(parts), tmp_path, spark, "parts")
    assert (lineage.candidate_pool, rankers) == ("runs", {"bm25-v3"})


def test_an_empty_run_is_refused(inputs, tmp_path, spark):
    from schemas import InputError

    judgments, run = inputs
    empty = tmp_path / "empty" / "run.parquet"
    empty.parent.mkdir()
    pl.read_parquet(run).head(0).write_parquet(empty)
    with pytest.raises(InputError, match="no rows"):
        score_files(judgments, empty, profile("trec_eval"), str(tmp_path / "out"),
                    engine="spark", spark_session=spark)


def test_many_small_buckets_give_the_same_rows(inputs, tmp_path, spark, monkeypatch):
    # A big run is cut into more buckets (engines.spark.cogroup.bucket_count); here ten rows a
    # bucket stand in for a million, so that the run spreads over some two hundred Python calls.
    from evaluation_pipeline.engines.spark import cogroup as engine

    monkeypatch.setattr(engine, "ROWS_PER_BUCKET", 10)
    judgments, run = inputs
    assert engine.bucket_count(pl.read_parquet(run).height) > 100
    _same_as_local(judgments, run, run, tmp_path, spark, "buckets")
    # The bounds too, though a bucket of ten rows rarely holds the version's largest grade.
    scored = pl.read_parquet(tmp_path / "buckets-local.parquet")
    assert (scored["n_holes"] > 0).any() and (scored["ndcg_max"] > scored["ndcg_min"]).any()


def test_other_rankers_unjudged_documents_are_holes_as_locally(tmp_path, spark):
    # Under all_judged a document only one ranker returns and the version lacks is a hole of
    # every ranker of the query; a bucket holds every ranker of its queries, so it counts them.
    judgments, pool = unshared_pool(tmp_path)
    _same_as_local(judgments, pool, str(pool), tmp_path, spark, "unshared")


def test_an_active_session_is_used_whatever_the_master(spark):
    # The pipeline's resource and the command name a master for a new session only: under
    # spark-submit, or beside a session the caller started, that session scores.
    from evaluation_pipeline.engines.spark.cogroup import spark_session

    assert spark_session("spark://nowhere:7077") is spark
