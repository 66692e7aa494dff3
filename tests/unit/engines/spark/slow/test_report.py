"""A report's numbers summed on Spark's executors equal the local path's to the bit.

Per-query rows of three rankers at two cutoffs, two nights, weights and two slice columns, cut
into several chunks of queries; Spark reads them as the folder of parts it wrote, the local
path as one frame in another row order. report.json, the aggregates and the nightly
comparison must be the same bytes. Slow (a Spark session): ``pytest -m slow``.
"""

from __future__ import annotations

import json

import pytest

from evaluation_pipeline.aggregation import partials as report_partials
from evaluation_pipeline.io.atomic import json_text
from evaluation_pipeline.report.build import build_report, local_numbers
from tests.support.frames import LINEAGE
from tests.support.report_nights import CONFIG, QUERIES, SPEC, night
from tests.support.spark_session import requires_spark

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (the `spark` extra)")
pytestmark = requires_spark


@pytest.fixture(scope="module")
def nights(tmp_path_factory, spark):
    root = tmp_path_factory.mktemp("spark-report")
    tonight, previous = night(1, ("a", "b", "c")), night(2, ("a", "b"))
    urls = []
    for name, frame in (("tonight", tonight), ("previous", previous)):
        url = str(root / name / "per_query.parquet")
        # Spark's layout: a folder of parts, in an order of its own.
        spark.createDataFrame(frame.to_pandas()).repartition(3).write.parquet(url)
        urls.append(url)
    return tonight, previous, urls


def _report(numbers) -> str:
    report, aggregates, _ = build_report(None, SPEC, LINEAGE, QUERIES, CONFIG, numbers=numbers)
    return json_text(report), aggregates


def test_spark_and_local_numbers_give_the_same_report_to_the_bit(nights, spark, monkeypatch):
    from evaluation_pipeline.engines.spark.report import spark_numbers

    monkeypatch.setattr(report_partials, "CHUNK_QUERIES", 128)  # several chunks
    tonight, previous, (tonight_url, previous_url) = nights
    shuffled = tonight.sample(fraction=1.0, shuffle=True, seed=4)
    on_spark = spark_numbers(tonight_url, previous_url, QUERIES, CONFIG, spark=spark)
    here = local_numbers(shuffled, QUERIES, CONFIG, previous)
    assert on_spark[0].plan == here[0].plan and here[0].plan.n_chunks == 6
    spark_json, spark_aggregates = _report(on_spark)
    local_json, local_aggregates = _report(here)
    assert spark_json == local_json
    assert spark_aggregates.equals(local_aggregates)
    settings = {"alpha": 0.05, "min_effect": 0.01, "ci_level": CONFIG.ci_level}
    assert (on_spark[0].night_comparison(on_spark[1], **settings)
            == here[0].night_comparison(here[1], **settings))
    report = json.loads(local_json)
    # The evidence the numbers carry is there: three rankers, a comparison that is not pure
    # (ranker c has other candidate counts), slices with a value for queries without a row.
    assert report["rankers"] == ["a", "b", "c"] and len(report["comparison"]["pairs"]) == 6
    assert not report["comparison"]["pure_reranker_comparison"]
    assert {r["slice_value"] for r in report["slice_results"]
            if r["slice_column"] == "band"} == {"head", "tail", "(none)"}
    assert all(len(p["regressions"]) == 4 for p in report["comparison"]["pairs"])


def test_spark_and_local_report_every_measure_alike(nights, spark, tmp_path):
    # Rows of other measures (a cutoff of their own, or none) beside the spec's nDCG@K: both
    # paths sum every measure, to the bit, under its own name.
    import polars as pl

    from evaluation_pipeline.engines.spark.report import spark_numbers

    tonight, _, _ = nights
    with_measures = tonight.with_columns(
        pl.col("cutoff").cast(pl.Int64), pl.format("nDCG@{}", pl.col("cutoff")).alias("measure"),
        pl.col("ndcg").alias("value"))
    # One row per ranker, query and measure: the other measures from the rows at one cutoff.
    at_10 = with_measures.filter(pl.col("cutoff") == 10)
    others = pl.concat([
        at_10.with_columns(pl.lit("RR(rel=2)@10").alias("measure"),
                                   pl.lit(10, dtype=pl.Int64).alias("cutoff"),
                                   (pl.col("value") ** 2).alias("value")),
        at_10.with_columns(pl.lit("AP").alias("measure"),
                                   pl.lit(None, dtype=pl.Int64).alias("cutoff"),
                                   (pl.col("value") / 2).alias("value")),
    ]).with_columns(pl.lit(None, dtype=pl.Float64).alias("ndcg"))
    rows = pl.concat([with_measures, others])
    url = str(tmp_path / "per_query.parquet")  # as the local engines write it: cutoff int64
    rows.write_parquet(url)
    on_spark = spark_numbers(url, None, QUERIES, CONFIG, spark=spark)
    here = local_numbers(rows.sample(fraction=1.0, shuffle=True, seed=5), QUERIES, CONFIG, None)
    spark_json, spark_aggregates = _report(on_spark)
    local_json, local_aggregates = _report(here)
    assert spark_json == local_json and spark_aggregates.equals(local_aggregates)
    report = json.loads(spark_json)
    assert set(report["measures"]["names"]) == {*set(with_measures["measure"]),
                                                "RR(rel=2)@10", "AP"}
    assert {p["measure"] for p in report["comparison"]["pairs"]} == set(
        report["measures"]["names"])
