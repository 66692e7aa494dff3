"""A spec that lists measures beside nDCG@K, through the pipeline: two nights scored with every
measure, the rows equal to the scoring on its own, the report, history and nightly watch on
every measure (the spec's nDCG@K the headline), and the old files still read."""

import json

import polars as pl
import pytest

from evaluation_pipeline.cli.main import main
from evaluation_pipeline.engines import score_files
from evaluation_pipeline.spec import load_spec
from schemas.columns import LINEAGE_COLUMNS, PER_QUERY_KEY
from tests.support.temporary_pipeline import (
    LANDING,
    POOL_1,
    POOL_2,
    Pipeline,
    make_pipeline,
    temporary_instance,
)

VERSION = "maint-v2"
MEASURES = ["nDCG@10", "nDCG@5", "RR(rel=2)@10", "AP(rel=2)@100", "R@100", "P(rel=2)@10"]


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    root = tmp_path_factory.mktemp("measures")
    spec = root / "spec.yaml"
    spec.write_text("profile: trec_eval\nmeasures: [" + ", ".join(
        f"'{m}'" for m in MEASURES) + "]\n")
    with temporary_instance(root / "dagster_home") as instance:
        env = make_pipeline(root, instance, spec_path=str(spec))
        env.land_version(VERSION)
        env.land_pool(POOL_1)
        env.first_outcomes = env.runner.run_until_quiet()
        env.land_pool(POOL_2)
        env.first_outcomes += env.runner.run_until_quiet()
        yield env


def test_each_night_holds_every_measure_as_the_scoring_alone(pipeline: Pipeline, tmp_path):
    assert all(o.success for o in pipeline.first_outcomes), pipeline.first_outcomes
    spec = load_spec(pipeline.root / "spec.yaml")
    assert spec.cutoffs == (5, 10) and pipeline.spec_id() == spec.spec_id
    for pool in (POOL_1, POOL_2):
        stored = pl.read_parquet(pipeline.report(pool, VERSION).parent / "per_query.parquet")
        assert set(stored["measure"]) == set(MEASURES)
        score_files(LANDING / "judgments" / f"{VERSION}.csv", LANDING / "pools" / pool, spec,
                    tmp_path / f"{pool}.parquet", engine="local", progress=False)
        alone = pl.read_parquet(tmp_path / f"{pool}.parquet")
        assert stored.drop(LINEAGE_COLUMNS).sort(PER_QUERY_KEY).equals(
            alone.drop(LINEAGE_COLUMNS).sort(PER_QUERY_KEY))


def test_the_report_and_the_watch_carry_every_measure(pipeline: Pipeline):
    report = json.loads(pipeline.report(POOL_2, VERSION).read_text())
    assert {(r["ranker"], r["cutoff"]) for r in report["results"]} == {
        (ranker, k) for ranker in ("bm25-v3", "dense-v2", "hybrid-v1") for k in (5, 10)}
    per_query = pl.read_parquet(pipeline.report(POOL_2, VERSION).parent / "per_query.parquet")
    own = per_query.filter(pl.col("measure") == "nDCG@10")
    for result in report["results"]:
        if result["cutoff"] == 10:
            mean = own.filter(pl.col("ranker") == result["ranker"])["ndcg"].mean()
            assert result["macro_ndcg"] == pytest.approx(mean, abs=1e-12)
    assert report["nightly"]["previous_pool"] == POOL_1
    # Every measure is reported and compared night over night; the spec's nDCG@K, the default
    # headline, alone alerts.
    assert sorted(report["measures"]["names"]) == sorted(MEASURES)
    compared = sorted((c["measure"], c["headline"]) for c in report["nightly"]["comparisons"])
    assert compared == sorted((m, m.startswith("nDCG@")) for m in MEASURES for _ in range(3))
    history = pl.read_parquet(pipeline.storage / "history" / "history.parquet")
    assert set(history["measure"]) == set(MEASURES)
    assert set(history.filter(pl.col("headline_measure"))["measure"]) == {"nDCG@5", "nDCG@10"}


def test_compare_and_report_read_files_written_before_the_measures(tmp_path, capsys):
    # Files of the former shape (no measure, value, value_min or value_max) read as they did:
    # the same report and comparison as the files of today.
    from evaluation_pipeline.spec import profile

    folders = {}
    for pool in (POOL_1, POOL_2):
        for shape in ("now", "before"):
            folder = tmp_path / shape / pool
            folder.mkdir(parents=True)
            score_files(LANDING / "judgments" / f"{VERSION}.csv", LANDING / "pools" / pool,
                        profile("trec_eval"), folder / "per_query.parquet", engine="local",
                        progress=False)
            if shape == "before":
                pl.read_parquet(folder / "per_query.parquet").drop(
                    "measure", "value", "value_min", "value_max").write_parquet(
                    folder / "per_query.parquet")
            folders[shape, pool] = folder / "per_query.parquet"
    shown = {}
    for shape in ("now", "before"):
        assert main(["compare", str(folders[shape, POOL_1]), str(folders[shape, POOL_2])]) == 0
        shown[shape] = capsys.readouterr().out
        assert main(["report", str(folders[shape, POOL_2]), "--out",
                     str(tmp_path / f"report-{shape}")]) == 0
        capsys.readouterr()
    assert shown["now"] == shown["before"] and "NDCG" in shown["now"]
    now, before = (json.loads((tmp_path / f"report-{shape}" / "report.json").read_text())
                   for shape in ("now", "before"))
    assert now["results"] == before["results"] and now["comparison"] == before["comparison"]
