"""Choosing an engine and where it runs: by configuration (CLI flags, the ScoringEngine
resource), never by editing code; URLs only where an engine can reach them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from evaluation_pipeline.cli import main as cli
from evaluation_pipeline.cli import score_command as score
from evaluation_pipeline.cli.main import main
from evaluation_pipeline.engines.spark.cogroup import (
    BUCKETS,
    LOCAL_MASTER,
    ROWS_PER_BUCKET,
    bucket_count,
    spark_master,
)
from evaluation_pipeline.orchestration.scoring import ScoringEngine
from evaluation_pipeline.spec import profile
from tests.support.paths import EXAMPLES

JUDGMENTS = str(EXAMPLES / "landing/judgments/maint-v2.csv")
RUN = str(EXAMPLES / "landing/pools/pool-2026-11-28")


def test_spark_master_is_the_configured_one_else_spark_submits_else_local():
    assert spark_master("spark://head:7077", {}) == "spark://head:7077"
    assert spark_master("yarn", {"PYSPARK_GATEWAY_PORT": "4000"}) == "yarn"
    # Under spark-submit the JVM already runs with its --master: setting one would override it.
    assert spark_master(None, {"PYSPARK_GATEWAY_PORT": "4000"}) is None
    assert spark_master(None, {}) == LOCAL_MASTER
    assert spark_master("", {}) == LOCAL_MASTER


@pytest.mark.parametrize("url, summary", [
    ("s3a://bucket/results", "s3a://bucket/results/summary.json"),
    ("s3a://bucket/results/", "s3a://bucket/results/summary.json"),
    ("hdfs://nn:8020/ndcg/out", "hdfs://nn:8020/ndcg/out/summary.json"),
    ("file:///tmp/out", "file:///tmp/out/summary.json"),
    ("file:/tmp/out", "file:/tmp/out/summary.json"),
])
def test_urls_are_kept_as_written(url, summary):
    assert cli._location(url) == url
    assert score.inside(cli._location(url), "summary.json") == summary


@pytest.mark.parametrize("text", ["data/run.parquet", "C:/runs/x.parquet", "runs:2026/x.parquet",
                                  "/abs/run.parquet"])
def test_local_paths_stay_paths(text):
    assert cli._location(text) == Path(text)


@pytest.mark.parametrize("engine", ["local", "streaming"])
def test_a_url_whose_filesystem_is_missing_names_the_extra(engine, tmp_path, capsys,
                                                           monkeypatch):
    # s3fs is installed here: its absence is what find_spec would say without it.
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "s3fs" else real(name, *a))
    out = tmp_path / "out"
    code = main(["score", "--judgments", "s3://bucket/maint-v2.parquet", "--run", RUN,
                 "--engine", engine, "--out", str(out)])
    assert code == cli.EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "s3://bucket/maint-v2.parquet" in err and "pip install 'ndcg-eval[s3]'" in err
    assert not out.exists()


def test_a_spark_report_needs_a_local_output_folder(capsys):
    code = main(["score", "--judgments", JUDGMENTS, "--run", RUN, "--engine", "spark",
                 "--out", "s3a://bucket/results", "--report"])
    assert code == cli.EXIT_BAD_INPUT
    assert "--report writes local files" in capsys.readouterr().err


def test_the_resource_and_the_flag_carry_the_master_to_the_engine(monkeypatch, tmp_path):
    seen = []

    def carried(inputs, spec, output, resources, engine):
        seen.append((engine, resources.spark_master))

    monkeypatch.setattr("evaluation_pipeline.engines.score_inputs", carried)
    ScoringEngine(engine="spark", spark_master="spark://head:7077").score(
        "j.parquet", "p.parquet", profile("default"), "out")
    assert seen[-1] == ("spark", "spark://head:7077")

    class Stop(Exception):
        pass

    def fake_score_inputs(*args, **kwargs):
        carried(*args, **kwargs)
        raise Stop

    monkeypatch.setattr(score, "score_inputs", fake_score_inputs)
    with pytest.raises(Stop):
        main(["score", "--judgments", JUDGMENTS, "--run", RUN, "--engine", "spark",
              "--spark-master", "yarn", "--out", str(tmp_path / "out")])
    assert seen[-1] == ("spark", "yarn")


def test_the_pipeline_takes_engine_and_master_from_its_environment(monkeypatch, tmp_path):
    from evaluation_pipeline.definitions import build_definitions

    monkeypatch.setenv("NDCG_EVAL_ENGINE", "spark")
    monkeypatch.setenv("NDCG_EVAL_SPARK_MASTER", "spark://head:7077")
    scoring = build_definitions(storage_base=str(tmp_path)).resources["scoring"]
    assert (scoring.engine, scoring.spark_master) == ("spark", "spark://head:7077")
    monkeypatch.delenv("NDCG_EVAL_SPARK_MASTER")
    assert build_definitions(storage_base=str(tmp_path)).resources["scoring"].spark_master is None


def test_spark_buckets_grow_with_the_run():
    assert bucket_count(0) == bucket_count(1_000) == BUCKETS
    assert bucket_count(BUCKETS * ROWS_PER_BUCKET) == BUCKETS
    assert bucket_count(BUCKETS * ROWS_PER_BUCKET + 1) == BUCKETS + 1
    assert bucket_count(10**9) * ROWS_PER_BUCKET >= 10**9
