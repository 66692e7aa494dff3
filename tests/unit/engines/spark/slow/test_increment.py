"""An increment on Spark is the full Spark scoring: a version that regrades, adds and removes
queries and documents, and grades an unknown row and nothing else of its query, scored on
Spark from the earlier version's rows and its changed queries alone. The folder of parts reads
as the full scoring's: the same rows in the same order, the same schema, the same parts.
Slow (a Spark session): ``pytest -m slow``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

from evaluation_pipeline.engines import score_files
from evaluation_pipeline.engines.incremental import changed_queries
from evaluation_pipeline.ingest.publish import publish_judgments
from evaluation_pipeline.spec import profile
from tests.support.spark_session import requires_spark
from tests.unit.engines.test_incremental import _published

pyspark = pytest.importorskip("pyspark", reason="pyspark is not installed (the `spark` extra)")
pytestmark = requires_spark


def _with_added_queries(tmp_path: Path, published: dict) -> dict:
    """The versions again, version 1 without one of its queries (which version 2 then adds,
    with candidates in the pool) and version 2 with a query the pool lacks."""
    before, after = (pl.read_parquet(published[v].path) for v in ("v1", "v2"))
    dropped = sorted(set(before["query_id"]) & set(after["query_id"]))[-1]
    new = after.filter(pl.col("query_id") == after["query_id"][0]).head(2).with_columns(
        pl.lit("q900").alias("query_id"), pl.lit(1, dtype=pl.Int64).alias("grade"),
        pl.lit("graded").alias("grade_status"))
    versions = {"v1": before.filter(pl.col("query_id") != dropped),
                "v2": pl.concat([after, new]).sort("query_id", "doc_id")}
    for name, frame in versions.items():
        source = tmp_path / f"{name}-again.parquet"
        frame.drop("judgment_version").write_parquet(source)
        published[name] = publish_judgments(
            source, tmp_path / "published-again" / f"{name}.parquet", version=name)
    return published


def _parts(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.startswith("part-"))


@pytest.mark.parametrize("spec_name", ["default", "trec_eval"])
def test_an_increment_on_spark_is_the_full_spark_scoring(tmp_path, spark, spec_name):
    from evaluation_pipeline.engines.spark.increment import score_increment_spark

    published = _with_added_queries(tmp_path, _published(tmp_path, np.random.default_rng(2)))
    spec = profile(spec_name)
    pool, v1, v2 = published["pool"], published["v1"], published["v2"]
    before, after = pl.read_parquet(v1.path), pl.read_parquet(v2.path)
    changed = changed_queries(before, after)
    # The version regrades, adds and removes queries, and one query's change is only an
    # unknown row graded.
    assert set(before["query_id"]) - set(after["query_id"])
    assert set(after["query_id"]) - set(before["query_id"])
    graded = before.join(after, on=["query_id", "doc_id"]).filter(
        (pl.col("grade_status") == "unknown") & (pl.col("grade_status_right") == "graded"))
    assert graded.height
    earlier = tmp_path / "scores-v1"
    score_files(v1.path, pool.path, spec, str(earlier), engine="spark", spark_session=spark)
    full = tmp_path / "scores-v2-full"
    whole = score_files(v2.path, pool.path, spec, str(full), engine="spark",
                        spark_session=spark)
    out = tmp_path / "scores-v2-increment"
    increment = score_increment_spark(str(earlier), str(v1.path), str(v2.path),
                                      str(pool.path), spec, str(out), pool_sha256=pool.sha256,
                                      previous_judgments_sha256=v1.sha256, spark=spark)
    assert increment is not None
    assert increment.lineage == whole.lineage and increment.rows == whole.rows
    assert increment.rescored_queries == changed.len() > 0
    assert increment.kept_queries > changed.len()
    got, expected = _parts(out), _parts(full)
    # The same rows in the same order, to the bit, under the same schema, in as many parts.
    assert pl.concat([pl.read_parquet(p) for p in got]).equals(
        pl.concat([pl.read_parquet(p) for p in expected]))
    assert [pq.read_schema(p) for p in got] == [pq.read_schema(p) for p in expected]
    assert [p.read_bytes() for p in got] == [p.read_bytes() for p in expected]


def test_rows_of_another_evaluation_are_not_used_on_spark(tmp_path, spark):
    from evaluation_pipeline.engines.spark.increment import score_increment_spark

    published = _published(tmp_path, np.random.default_rng(7))
    spec = profile("default")
    earlier = tmp_path / "scores-v1"
    score_files(published["v1"].path, published["pool"].path, spec, str(earlier),
                engine="spark", spark_session=spark)
    out = tmp_path / "out"
    for pool_sha, judged_sha, other_spec in (("0" * 64, published["v1"].sha256, spec),
                                             (published["pool"].sha256, "0" * 64, spec),
                                             (published["pool"].sha256, published["v1"].sha256,
                                              profile("trec_eval"))):
        assert score_increment_spark(
            str(earlier), str(published["v1"].path), str(published["v2"].path),
            str(published["pool"].path), other_spec, str(out), pool_sha256=pool_sha,
            previous_judgments_sha256=judged_sha, spark=spark) is None
        assert not out.exists()
