"""`make run`'s example week under the TREC DL set (nDCG@10, RR(rel=2)@10, AP(rel=2)@100,
R@100) on each scoring engine: the main job with ``NDCG_EVAL_ENGINE`` streaming and spark
(``local[2]``) writes, for each of the week's 14 evaluations, the report.json,
aggregates.parquet and report.html of the default engine's run (the in-memory engine, at this
size) byte for byte, its per-query rows (Spark's as a folder of parts) to 1e-12, and its
history rows (their times aside). As `make run` runs, the engine scores the first version's
seven nights and the increment the second's, from them (the manifests say which). Slow: three
main jobs, one of them on Spark.
"""

from __future__ import annotations

import json

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from evaluation_pipeline.io.datasets import read_dataset
from evaluation_pipeline.io.storage import history_file
from evaluation_pipeline.orchestration.example_week import WEEK_SPEC
from evaluation_pipeline.spec import load_spec
from schemas.columns import PER_QUERY_KEY
from tests.support.example_run import example_week
from tests.support.spark_session import requires_spark

TOLERANCE = 1e-12
EVALUATIONS = 14  # 7 nights x 2 judgment versions
MEASURES = ["nDCG@10", "RR(rel=2)@10", "AP(rel=2)@100", "R@100"]
# When a history row was written and when its pool landed: the only columns two runs differ in.
HISTORY_TIMES = ("first_evaluated_at", "evaluated_at", "ready_at")
ENGINES = ["streaming", pytest.param("spark", marks=requires_spark)]


@pytest.fixture(scope="module")
def default(tmp_path_factory):
    return example_week(tmp_path_factory).storage


@pytest.fixture(scope="module", params=ENGINES)
def other(request, tmp_path_factory):
    if request.param == "spark":
        pytest.importorskip("pyspark", reason="pyspark is not installed (the `spark` extra)")
    return request.param, example_week(tmp_path_factory, engine=request.param).storage


def _reports(storage):
    spec_id = load_spec(WEEK_SPEC).spec_id
    return sorted(p.parent.relative_to(storage)
                  for p in storage.glob(f"reports/*/*/{spec_id}/report.json"))


def test_the_week_holds_every_measure(default):
    reports = _reports(default)
    assert len(reports) == EVALUATIONS
    report = json.loads((default / reports[0] / "report.json").read_text())
    assert sorted(report["measures"]["names"]) == sorted(MEASURES)


def test_each_report_is_the_default_engines_byte_for_byte(default, other):
    engine, storage = other
    assert _reports(storage) == _reports(default)
    for folder in _reports(default):
        for file in ("report.json", "aggregates.parquet", "report.html"):
            assert (storage / folder / file).read_bytes() == (
                default / folder / file).read_bytes(), (engine, folder / file)


def _scorers(storage) -> dict[tuple[str, str], str]:
    """(pool, version) -> the engine its scores' manifest names."""
    return {(m.parts[-4], m.parts[-3]): json.loads(m.read_text())["engine"]
            for m in storage.glob("scores/*/*/*/manifest.json")}


def test_each_engine_scored_the_first_version_and_the_increment_the_second(default, other):
    # As `make run` runs: maint-v1's seven nights are scored in full by the engine named (the
    # default's is the in-memory one at this size); maint-v2's start from them, by the increment.
    engine, storage = other
    for base, expected in ((default, "local"), (storage, engine)):
        scorers = _scorers(base)
        assert len(scorers) == EVALUATIONS
        assert {v: {e for (_, version), e in scorers.items() if version == v}
                for v in ("maint-v1", "maint-v2")} == {
            "maint-v1": {expected}, "maint-v2": {"incremental"}}, base
    # Spark writes a folder of parts with its marker; the others, one file.
    scores = sorted(storage.glob("scores/*/*/*/per_query.parquet"))
    assert all((p / "_SUCCESS").exists() == (engine == "spark") for p in scores
               if p.parts[-3] == "maint-v1"), engine


def test_per_query_rows_are_the_default_engines(default, other):
    engine, storage = other
    for file in sorted(default.glob("scores/*/*/*/per_query.parquet")):
        expected = read_dataset(file).sort(PER_QUERY_KEY)
        got = read_dataset(storage / file.relative_to(default)).sort(PER_QUERY_KEY)
        assert sorted(set(expected["measure"])) == sorted(MEASURES)
        assert got.schema == expected.schema, engine
        assert_frame_equal(got, expected, check_exact=False, rel_tol=0, abs_tol=TOLERANCE)


def test_history_rows_are_the_default_engines(default, other):
    engine, storage = other
    expected, got = (pl.read_parquet(base.joinpath(*history_file())).drop(HISTORY_TIMES)
                     .sort(pl.all()) for base in (default, storage))
    assert expected.height == got.height > 0
    assert_frame_equal(got, expected, check_exact=False, rel_tol=0, abs_tol=TOLERANCE)
