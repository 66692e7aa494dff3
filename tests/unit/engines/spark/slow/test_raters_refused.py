"""The Spark engine applies no rule for raters: a spec with one, a version with raters to score
and one to publish are each refused, naming the engines that do, before anything is written."""

from __future__ import annotations

import pytest

from evaluation_pipeline.engines import score_files
from evaluation_pipeline.engines.spark.ingest import publish_judgments
from evaluation_pipeline.metric.raters import RatersError
from evaluation_pipeline.spec import EvaluationSpec
from schemas import InputError
from tests.support.raters import pool_over, rated_version
from tests.support.spark_session import requires_spark

pytest.importorskip("pyspark", reason="pyspark is not installed (the `spark` extra)")
pytestmark = requires_spark


@pytest.fixture
def inputs(tmp_path):
    version = rated_version(41, n_queries=5)
    version.write_parquet(tmp_path / "rated-v1.parquet")
    version.drop("rater", "rater_kind").unique(["query_id", "doc_id"]).write_parquet(
        tmp_path / "plain.parquet")
    pool_over(version, 42).write_parquet(tmp_path / "run.parquet")
    return tmp_path


@pytest.mark.parametrize("judgments, spec", [
    ("rated-v1.parquet", EvaluationSpec(raters="max")),
    ("rated-v1.parquet", EvaluationSpec()),
    ("plain.parquet", EvaluationSpec(raters="max")),
])
def test_scoring_with_raters_is_refused(inputs, spark, judgments, spec):
    with pytest.raises(RatersError, match="the Spark engine does not combine raters"):
        score_files(inputs / judgments, inputs / "run.parquet", spec, inputs / "out",
                    engine="spark", spark_session=spark)
    assert not (inputs / "out").exists()


def test_publishing_a_version_with_raters_is_refused(inputs, spark):
    with pytest.raises(InputError, match="the Spark engine does not publish a version with "
                                         "raters"):
        publish_judgments(inputs / "rated-v1.parquet", inputs / "published.parquet",
                          spark=spark)
    assert not (inputs / "published.parquet").exists()
