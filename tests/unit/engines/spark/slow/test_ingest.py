"""Ingest on Spark (``engines.spark.ingest``) against the local path (``ingest.publish``):
the same content hashes, published rows and facts for unsorted input spread over several
files, and the same refusals.

Ranges are made a few thousand rows long, so that the pool's and the version's hashes are
combined from many ranges numbered across Spark's partitions.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from evaluation_pipeline.ingest import publish as bounded_ingest
from evaluation_pipeline.metric import hashing
from tests.support.pools import BUDGET, candidates, shuffled
from tests.support.spark_session import requires_spark

pytestmark = requires_spark
# The local path's fixture ``pool_folder`` (tests.support.pools): a pool folder of unsorted
# ranker files, Parquet and CSV.


@pytest.fixture
def short_ranges(monkeypatch):
    monkeypatch.setattr(hashing, "RANGE_ROWS", 7_001)


@pytest.fixture
def judgment_files(tmp_path):
    """One judgment version in three unsorted Parquet files, one without the version column."""
    rng = np.random.default_rng(11)
    base = candidates(rng).sample(fraction=0.2, seed=2)
    unknown = rng.random(base.height) < 0.02
    frame = shuffled(base.with_columns(
        pl.Series("grade", rng.integers(0, 4, base.height)).set(pl.Series(unknown), None),
        pl.Series("grade_status", np.where(unknown, "unknown", "graded")),
        pl.lit("assessor-1").alias("judge"),
    ), rng)
    files = []
    for number, part in enumerate(np.array_split(np.arange(frame.height), 3)):
        rows = frame[part]
        if number:
            rows = rows.with_columns(pl.lit("v9").alias("judgment_version"))
        files.append(tmp_path / f"part-{number}.parquet")
        rows.write_parquet(files[-1], row_group_size=5_000)
    return files


def test_a_pool_of_unsorted_files_publishes_as_the_local_path(
        spark, pool_folder, tmp_path, short_ranges):
    from evaluation_pipeline.engines.spark import ingest as spark_ingest

    locally = bounded_ingest.publish_pool(pool_folder, tmp_path / "local.parquet",
                                          budget=BUDGET)
    on_spark = spark_ingest.publish_pool(pool_folder, tmp_path / "spark.parquet",
                                         budget=BUDGET, spark=spark)
    assert on_spark.sha256 == locally.sha256
    assert pl.read_parquet(on_spark.path).equals(pl.read_parquet(locally.path))
    assert (on_spark.name, on_spark.rows, on_spark.rankers) == (
        locally.name, locally.rows, locally.rankers)
    assert on_spark.rows > 20 * hashing.RANGE_ROWS  # many ranges


def test_a_version_in_several_files_publishes_as_the_local_path(spark, judgment_files,
                                                                tmp_path, short_ranges):
    from evaluation_pipeline.engines.spark import ingest as spark_ingest

    locally = bounded_ingest.publish_judgments(judgment_files, tmp_path / "local.parquet",
                                               version="v9", budget=BUDGET)
    on_spark = spark_ingest.publish_judgments(judgment_files, tmp_path / "spark.parquet",
                                              version="v9", budget=BUDGET, spark=spark)
    assert on_spark.sha256 == locally.sha256
    assert pl.read_parquet(on_spark.path).equals(pl.read_parquet(locally.path))
    assert (on_spark.name, on_spark.rows, on_spark.grade_distribution) == (
        locally.name, locally.rows, locally.grade_distribution)


def _refusal(call):
    with pytest.raises(bounded_ingest.InputError) as caught:
        call()
    return str(caught.value)


def test_bad_rows_are_refused_with_the_local_paths_message(
        spark, pool_folder, tmp_path):
    from evaluation_pipeline.engines.spark import ingest as spark_ingest

    dense = pl.read_parquet(pool_folder / "dense.parquet")
    dense.with_columns(pl.when(pl.int_range(pl.len()) == 7).then(float("nan"))
                       .otherwise(pl.col("score")).alias("score")).write_parquet(
        pool_folder / "dense.parquet")
    local = _refusal(lambda: bounded_ingest.publish_pool(pool_folder, tmp_path / "l.parquet",
                                                         budget=BUDGET))
    assert "row 8" in local
    assert _refusal(lambda: spark_ingest.publish_pool(
        pool_folder, tmp_path / "s.parquet", budget=BUDGET, spark=spark)) == local
    # A key repeated across files: named with both files' rows, as locally.
    pl.read_parquet(pool_folder / "first.parquet").head(3).write_parquet(
        pool_folder / "late.parquet")
    (pool_folder / "dense.parquet").unlink()
    local = _refusal(lambda: bounded_ingest.publish_pool(pool_folder, tmp_path / "l.parquet",
                                                         budget=BUDGET))
    assert "duplicate rows across files" in local
    assert _refusal(lambda: spark_ingest.publish_pool(
        pool_folder, tmp_path / "s.parquet", budget=BUDGET, spark=spark)) == local
