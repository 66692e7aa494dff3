"""Scoring a version with raters under a rule, on the local and streaming engines: under
`rater:<id>` the per-query numbers are, to the byte, those of that rater's rows published as
a version of their own; both engines write the same rows; a rule that cannot apply is refused
before anything is written."""

from __future__ import annotations

import polars as pl
import pytest

from evaluation_pipeline.engines import score_files
from evaluation_pipeline.metric.hashing import judgments_sha256
from evaluation_pipeline.metric.raters import RatersError
from evaluation_pipeline.spec import EvaluationSpec
from schemas.columns import LINEAGE_COLUMNS, PER_QUERY_KEY
from tests.support.raters import pool_over, rated_version

SPEC = EvaluationSpec(cutoffs=(3, 5))


@pytest.fixture
def inputs(tmp_path):
    version = rated_version(11)
    version.write_parquet(tmp_path / "rated-v1.parquet")
    pool_over(version, 12).write_parquet(tmp_path / "run.parquet")
    return tmp_path, version


def numbers(path) -> pl.DataFrame:
    return pl.read_parquet(path).drop(LINEAGE_COLUMNS)


@pytest.mark.parametrize("engine", ["local", "streaming"])
@pytest.mark.parametrize("rater", ["h1", "llm"])
def test_one_raters_grades_score_as_that_raters_own_version(inputs, engine, rater):
    folder, version = inputs
    alone = version.filter(pl.col("rater") == rater).drop("rater", "rater_kind")
    alone.write_parquet(folder / "alone.parquet")
    spec = SPEC.replace(raters=f"rater:{rater}")
    rated = score_files(folder / "rated-v1.parquet", folder / "run.parquet", spec,
                        folder / "rated.parquet", engine=engine, progress=False)
    own = score_files(folder / "alone.parquet", folder / "run.parquet", SPEC,
                      folder / "own.parquet", engine=engine, progress=False)
    assert numbers(folder / "rated.parquet").equals(numbers(folder / "own.parquet"))
    assert numbers(folder / "own.parquet")["ndcg"].drop_nulls().len() > 10
    # The lineage names the version with every rating, and the spec with its rule.
    assert rated.lineage.judgments_sha256 == judgments_sha256(version)
    assert own.lineage.judgments_sha256 == judgments_sha256(alone)
    assert rated.lineage.spec_id == spec.spec_id != own.lineage.spec_id


@pytest.mark.parametrize("rule", ["mean:half_up", "majority:higher", "prefer:h2,llm"])
@pytest.mark.parametrize("suffix", ["parquet", "csv"])
def test_both_engines_score_a_rule_alike(inputs, rule, suffix):
    folder, version = inputs
    version.write_csv(folder / "rated-v1.csv")
    spec = SPEC.replace(raters=rule)
    for engine in ("local", "streaming"):
        score_files(folder / f"rated-v1.{suffix}", folder / "run.parquet", spec,
                    folder / f"{engine}.parquet", engine=engine, progress=False)
    local, streamed = (pl.read_parquet(folder / f"{e}.parquet").sort(PER_QUERY_KEY)
                       for e in ("local", "streaming"))
    assert local.equals(streamed)


@pytest.mark.parametrize("engine", ["local", "streaming"])
@pytest.mark.parametrize("spec, words", [
    (SPEC, "declare how its ratings become one grade"),
    (SPEC.replace(raters="rater:nobody"), "the version's raters are h1, h2, llm"),
])
def test_a_rule_that_cannot_apply_is_refused_before_writing(inputs, engine, spec, words):
    folder, _ = inputs
    with pytest.raises(RatersError, match=words):
        score_files(folder / "rated-v1.parquet", folder / "run.parquet", spec,
                    folder / "out.parquet", engine=engine, progress=False)
    assert not (folder / "out.parquet").exists()
