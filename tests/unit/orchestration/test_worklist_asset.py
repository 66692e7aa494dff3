"""``judging_worklist``: a pool x version partition writes the worklist of its published
inputs, the bytes ``ndcg-eval holes --out`` writes, and refuses inputs not yet published."""

from __future__ import annotations

import dagster as dg

from evaluation_pipeline.analysis.worklist import worklist
from evaluation_pipeline.io.readers import read_candidates, read_judgments, read_queries
from evaluation_pipeline.io.storage import (
    judgments_folder,
    pool_folder,
    queries_file,
    worklist_file,
)
from evaluation_pipeline.orchestration.partitions import (
    candidate_pool_partitions,
    evaluation_key,
    judgment_version_partitions,
)
from evaluation_pipeline.orchestration.resources import EvaluationStorage
from evaluation_pipeline.orchestration.worklist_asset import build_worklist_asset
from evaluation_pipeline.spec import EvaluationSpec
from tests.support.paths import EXAMPLES

POOL, VERSION = "pool-2026-11-28", "maint-v2"
SPEC = EvaluationSpec()


def inputs():
    landing = EXAMPLES / "landing"
    return (read_judgments(landing / "judgments" / f"{VERSION}.csv"),
            read_candidates(landing / "pools" / POOL), read_queries(EXAMPLES / "queries.csv"))


def _publish(storage: EvaluationStorage, pool: bool = True) -> None:
    """The three inputs as the ingest assets leave them: the file, then its manifest."""
    judgments, candidates, queries = inputs()
    places = [(judgments_folder(VERSION), "judgments.parquet", judgments),
              (tuple(queries_file()[:-1]), queries_file()[-1], queries)]
    if pool:
        places.append((pool_folder(POOL), "candidates.parquet", candidates))
    for folder, name, frame in places:
        storage.write_parquet(frame, *folder, name)
        storage.write_json({"sha256": "0" * 64}, *folder, "manifest.json")


def _materialize(storage: EvaluationStorage):
    with dg.instance_for_test() as instance:
        instance.add_dynamic_partitions(candidate_pool_partitions.name, [POOL])
        instance.add_dynamic_partitions(judgment_version_partitions.name, [VERSION])
        return dg.materialize([build_worklist_asset(SPEC)], instance=instance,
                              partition_key=evaluation_key(POOL, VERSION),
                              resources={"storage": storage}, raise_on_error=False)


def test_a_partition_writes_the_worklist_of_its_inputs(tmp_path):
    storage = EvaluationStorage(base=str(tmp_path))
    _publish(storage)
    result = _materialize(storage)
    assert result.success
    written = tmp_path.joinpath(*worklist_file(POOL, VERSION, SPEC.spec_id))
    judgments, candidates, queries = inputs()
    assert written.read_text() == worklist(judgments, candidates, SPEC, queries).write_csv()
    metadata = result.asset_materializations_for_node("judging_worklist")[0].metadata
    assert metadata["dagster/row_count"].value == written.read_text().count("\n") - 1 > 0
    # The widths and narrowings name what they are of: the inputs' lineage and the spec.
    lineage = {name: metadata[name].value for name in (
        "judgment_version", "judgments_sha256", "candidate_pool", "pool_sha256", "spec_id",
        "conventions")}
    assert lineage == {"judgment_version": VERSION, "judgments_sha256": "0" * 64,
                       "candidate_pool": POOL, "pool_sha256": "0" * 64,
                       "spec_id": SPEC.spec_id, "conventions": SPEC.describe()}
    first = worklist(judgments, candidates, SPEC, queries).row(0, named=True)
    table = metadata["first_holes"].value.splitlines()
    assert table[0] == ("| priority | query_id | doc_id | rankers (top K) | best | width | "
                        "expected |")
    assert table[2].startswith(f"| 1 | {first['query_id']} | {first['doc_id']} | ")
    assert len(table) == 2 + 10


def test_an_input_not_published_fails_the_step_and_writes_nothing(tmp_path):
    storage = EvaluationStorage(base=str(tmp_path))
    _publish(storage, pool=False)
    result = _materialize(storage)
    assert not result.success
    error = result.get_step_failure_events()[0].step_failure_data.error
    assert "not published yet" in error.message
    assert not tmp_path.joinpath("worklists").exists()


def test_the_worklist_is_materialized_on_demand_only(tmp_path):
    """In the code location, but in no job the sensors run and without automation: its what-if
    scorings cost more than the evaluation, so a night's run does not pay for them."""
    from evaluation_pipeline.definitions import build_definitions

    defs = build_definitions(storage_base=str(tmp_path / "s"), landing_folder=str(tmp_path),
                             queries_path=str(tmp_path / "q.csv"))
    key = dg.AssetKey("judging_worklist")
    asset = defs.resolve_assets_def(key)
    assert asset.automation_conditions_by_key.get(key) is None
    assert asset.group_names_by_key[key] == "judging"
    for job in defs.resolve_all_job_defs():
        if not job.name.startswith("__ASSET_JOB"):  # Dagster's own job of every asset
            assert key not in job.asset_layer.selected_asset_keys, job.name
