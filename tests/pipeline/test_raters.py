"""The example version with three raters through the pipeline: published with every rating,
scored night after night under the spec's rule, and reported with the raters' agreement, whose
numbers are ``ndcg-eval agreement``'s."""

import json
import shutil

import polars as pl
import pytest

from evaluation_pipeline.cli.main import main
from evaluation_pipeline.engines import score_files
from evaluation_pipeline.io.readers import read_judgments
from evaluation_pipeline.metric.hashing import judgments_sha256
from evaluation_pipeline.orchestration.partitions import evaluation_key
from evaluation_pipeline.spec import load_spec
from schemas.columns import LINEAGE_COLUMNS, PER_QUERY_KEY
from tests.support.paths import EXAMPLES
from tests.support.temporary_pipeline import (
    LANDING,
    POOL_1,
    POOL_2,
    Pipeline,
    make_pipeline,
    temporary_instance,
)

RATED = EXAMPLES / "raters" / "maint-raters.csv"
VERSION = "maint-raters"
RULE = "prefer:h1,h2,llm-judge"


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    root = tmp_path_factory.mktemp("raters")
    spec = root / "spec.yaml"
    spec.write_text(f"raters: {RULE}\n")
    with temporary_instance(root / "dagster_home") as instance:
        env = make_pipeline(root, instance, spec_path=str(spec))
        shutil.copy(RATED, env.landing / "judgments")
        env.land_pool(POOL_1)
        env.first_outcomes = env.runner.run_until_quiet()
        env.land_pool(POOL_2)
        env.first_outcomes += env.runner.run_until_quiet()
        yield env


def test_the_version_is_published_with_every_rating(pipeline: Pipeline):
    assert all(o.success for o in pipeline.first_outcomes), pipeline.first_outcomes
    evaluations = {o.partition for o in pipeline.first_outcomes if o.job == "evaluate"}
    assert evaluations == {evaluation_key(POOL_1, VERSION), evaluation_key(POOL_2, VERSION)}
    folder = pipeline.storage / "judgments" / VERSION
    manifest = json.loads((folder / "manifest.json").read_text())
    landed = read_judgments(RATED)
    assert manifest["raters"] == ["h1", "h2", "llm-judge"]
    assert manifest["rows"] == landed.height
    assert manifest["sha256"] == judgments_sha256(landed)
    assert pl.read_parquet(folder / "judgments.parquet").height == landed.height


def test_each_night_is_scored_on_the_rules_grades(pipeline: Pipeline, tmp_path):
    spec = load_spec(pipeline.root / "spec.yaml")
    assert pipeline.spec_id() == spec.spec_id
    for pool in (POOL_1, POOL_2):
        stored = pl.read_parquet(pipeline.report(pool, VERSION).parent / "per_query.parquet")
        score_files(RATED, LANDING / "pools" / pool, spec, tmp_path / f"{pool}.parquet",
                    engine="local", progress=False)
        alone = pl.read_parquet(tmp_path / f"{pool}.parquet")
        assert stored.drop(LINEAGE_COLUMNS).sort(PER_QUERY_KEY).equals(
            alone.drop(LINEAGE_COLUMNS).sort(PER_QUERY_KEY))
    second = json.loads(pipeline.report(POOL_2, VERSION).read_text())
    assert second["nightly"]["previous_pool"] == POOL_1
    # The history holds both nights under the rule, the second compared with the first.
    history = pl.read_parquet(pipeline.storage / "history" / "history.parquet").filter(
        pl.col("slice").is_null())
    assert set(history["judgment_version"]) == {VERSION}
    assert set(history["spec_id"]) == {spec.spec_id}
    night = history.filter(pl.col("candidate_pool") == POOL_2)
    assert night["previous_pool"].to_list() == [POOL_1] * night.height
    assert night["verdict"].is_not_null().all() and night["mean_difference"].is_not_null().all()
    assert second["lineage"]["judgments_sha256"] == judgments_sha256(read_judgments(RATED))


def test_the_report_shows_the_agreement_of_the_command(pipeline: Pipeline, capsys):
    report = json.loads(pipeline.report(POOL_1, VERSION).read_text())
    assert main(["agreement", "--judgments", str(RATED), "--run", str(LANDING / "pools" / POOL_1),
                 "--spec", str(pipeline.root / "spec.yaml"), "--json"]) == 0
    assert report["agreement"] == json.loads(capsys.readouterr().out)
    assert report["agreement"]["rule"] == RULE
    assert {r["rater_kind"] for r in report["agreement"]["raters"]} == {"human", "llm"}
    html = (pipeline.report(POOL_1, VERSION).parent / "report.html").read_text()
    assert 'id="agreement"' in html and "Krippendorff" in html
