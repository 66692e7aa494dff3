"""The Dagster pipeline on a temporary instance, landing folder and storage.

The module fixture lands one judgment version and one pool (copied from the examples) and runs
the sensors and the runs they request until nothing new is asked for. The tests then follow
the module's order: read-only assertions first, then new landings.
"""

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from evaluation_pipeline.definitions import build_definitions
from evaluation_pipeline.io.storage import MANIFEST_FILE
from evaluation_pipeline.orchestration.partitions import evaluation_key
from evaluation_pipeline.orchestration.resources import PublishConflict, QualityPolicy
from evaluation_pipeline.orchestration.selection import evaluable_pools, storage_key
from schemas.errors import InputError
from tests.support.refusals import assert_names
from tests.support.temporary_pipeline import (
    LANDING,
    POOL_1,
    POOL_2,
    VERSION_1,
    VERSION_2,
    Pipeline,
    make_pipeline,
    temporary_instance,
)


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    root = tmp_path_factory.mktemp("pipeline")
    with temporary_instance(root / "dagster_home") as instance:
        env = make_pipeline(root, instance)
        env.land_version(VERSION_1)
        env.land_pool(POOL_1)
        env.first_outcomes = env.runner.run_until_quiet()
        yield env


def _tree_bytes(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


# -- one pool x one version, every asset --------------------------------------------------------


def test_every_asset_materialized_for_a_pool_and_version(pipeline: Pipeline):
    jobs = [(o.job, o.partition, o.success) for o in pipeline.first_outcomes]
    assert jobs == [
        ("ingest_queries", None, True),
        ("ingest_documents", None, True),
        ("ingest_judgments", VERSION_1, True),
        ("ingest_candidate_pool", POOL_1, True),
        ("evaluate", evaluation_key(POOL_1, VERSION_1), True),
    ]
    instance = pipeline.instance
    for asset, partition in [("judgments", VERSION_1), ("candidate_pools", POOL_1),
                             ("queries", None), ("query_scores", f"{POOL_1}|{VERSION_1}"),
                             ("evaluation_report", f"{POOL_1}|{VERSION_1}")]:
        event = instance.get_latest_materialization_event(dg.AssetKey(asset))
        assert event is not None, asset
        assert event.asset_materialization.partition == partition
    judgments = instance.get_latest_materialization_event(dg.AssetKey("judgments"))
    metadata = judgments.asset_materialization.metadata
    manifest = json.loads((pipeline.storage / "judgments" / VERSION_1 / "manifest.json")
                          .read_text())
    assert metadata["sha256"].value == manifest["sha256"]
    assert metadata["dagster/row_count"].value == manifest["rows"]
    assert metadata["unknown_count"].value == manifest["grade_distribution"]["unknown"]
    assert judgments.asset_materialization.tags["dagster/data_version"] == manifest["sha256"]
    pool_metadata = instance.get_latest_materialization_event(
        dg.AssetKey("candidate_pools")).asset_materialization.metadata
    assert pool_metadata["shared_candidate_sets"].value is True
    # The rankers table shows the manifest's counts, column by column and row by row.
    rankers = pool_metadata["rankers"]
    pool_manifest = json.loads((pipeline.storage / "pools" / POOL_1 / "manifest.json")
                               .read_text())
    assert [(c.name, c.type) for c in rankers.schema.columns] == [
        ("ranker", "string"), ("n_queries", "int"), ("n_candidates", "int")]
    assert [r.data for r in rankers.records] == pool_manifest["rankers"]
    assert [r["ranker"] for r in pool_manifest["rankers"]] == ["bm25-v3", "dense-v2", "hybrid-v1"]

    report = json.loads(pipeline.report(POOL_1, VERSION_1).read_text())
    assert report["lineage"]["judgment_version"] == VERSION_1
    assert report["lineage"]["judgments_sha256"] == manifest["sha256"]
    assert report["spec_id"] == pipeline.spec_id()
    for name in ("report.html", "aggregates.parquet", "per_query.parquet"):
        assert (pipeline.report(POOL_1, VERSION_1).parent / name).is_file()
    report_metadata = instance.get_latest_materialization_event(
        dg.AssetKey("evaluation_report")).asset_materialization.metadata
    assert "| bm25-v3 | 10 |" in report_metadata["headline"].value
    assert f"judgments {VERSION_1}" in report_metadata["result"].value


ON_DEMAND = {dg.AssetKey("judgments_llm")}


def test_checks_ran_with_the_runs(pipeline: Pipeline):
    graph = pipeline.defs.resolve_asset_graph()
    for check_key in graph.asset_check_keys:
        if check_key.asset_key in ON_DEMAND:
            # Materialized by hand only (the judge spends money): no run of the week has it.
            assert pipeline.instance.get_latest_materialization_event(
                check_key.asset_key) is None, check_key
            continue
        record = pipeline.instance.get_latest_asset_check_evaluation_record(check_key)
        assert record is not None, check_key
        evaluation = record.event.dagster_event.event_specific_data
        assert evaluation.passed, check_key


# -- sensors and schedule through build contexts ------------------------------------------------


def test_ingest_sensors_register_partitions_and_request_runs(tmp_path: Path):
    with temporary_instance(tmp_path / "home") as instance:
        env = make_pipeline(tmp_path, instance)
        env.land_version(VERSION_1)
        env.land_version(VERSION_2)
        env.land_pool(POOL_1)
        sensor = env.defs.resolve_sensor_def("judgment_versions_landed")
        context = dg.build_sensor_context(instance=instance, definitions=env.defs,
                                          resources=env.defs.resources)
        result = sensor(context)
        assert isinstance(result, dg.SensorResult)
        (added,) = result.dynamic_partitions_requests
        assert added.partitions_def_name == "judgment_versions"
        assert sorted(added.partition_keys) == [VERSION_1, VERSION_2]
        keys = {r.partition_key: r.run_key for r in result.run_requests}
        assert sorted(keys) == [VERSION_1, VERSION_2]
        assert all(r.job_name == "ingest_judgments" for r in result.run_requests)
        # judgments:<name>:<content sha256>@<the storage written to>
        content, _, where = keys[VERSION_1].split(":")[-1].partition("@")
        assert keys[VERSION_1].startswith(f"judgments:{VERSION_1}:") and len(content) == 64
        assert where == storage_key(env.defs.resources["storage"])
        # The same landing again, with the cursor: nothing new.
        instance.add_dynamic_partitions("judgment_versions", [VERSION_1, VERSION_2])
        again = sensor(dg.build_sensor_context(instance=instance, cursor=result.cursor,
                                               definitions=env.defs,
                                               resources=env.defs.resources))
        assert isinstance(again, dg.SkipReason)

        pools = env.defs.resolve_sensor_def("candidate_pools_landed")(dg.build_sensor_context(
            instance=instance, definitions=env.defs, resources=env.defs.resources))
        (added,) = pools.dynamic_partitions_requests
        assert list(added.partition_keys) == [POOL_1]
        (request,) = pools.run_requests
        assert (request.job_name, request.partition_key) == ("ingest_candidate_pool", POOL_1)
        # Nothing is published yet, so nothing can be evaluated.
        evaluations = env.defs.resolve_sensor_def("evaluations_ready")(dg.build_sensor_context(
            instance=instance, definitions=env.defs, resources=env.defs.resources))
        assert isinstance(evaluations, dg.SkipReason)


class HashCounter:
    """Counts which landed files a sensor tick reads to hash."""

    def __init__(self, monkeypatch):
        from evaluation_pipeline.io import landing

        self.read: list[str] = []
        original = landing.file_sha256

        def counting(path):
            self.read.append(Path(path).name)
            return original(path)

        monkeypatch.setattr(landing, "file_sha256", counting)

    def tick(self, env: Pipeline, sensor_name: str, cursor: str | None):
        """One evaluation of the sensor: its result, its cursor and the files it hashed."""
        self.read.clear()
        context = dg.build_sensor_context(instance=env.instance, cursor=cursor,
                                          definitions=env.defs, resources=env.defs.resources)
        result = env.defs.resolve_sensor_def(sensor_name)(context)
        cursor = result.cursor if isinstance(result, dg.SensorResult) else context.cursor
        return result, cursor, sorted(self.read)


def _settle(path: Path, seconds_ago: int) -> None:
    """Give a file a modification time in the past, as a file landed a while ago has."""
    past = (int(datetime.now(UTC).timestamp()) - seconds_ago) * 1_000_000_000
    os.utime(path, ns=(past, past))


def test_landing_sensors_hash_only_files_whose_size_or_mtime_changed(tmp_path: Path,
                                                                     monkeypatch):
    hashed = HashCounter(monkeypatch)
    with temporary_instance(tmp_path / "home") as instance:
        env = make_pipeline(tmp_path, instance)
        env.land_version(VERSION_1)
        env.land_version(VERSION_2)
        first, second = (env.landing / "judgments" / f"{v}.csv" for v in (VERSION_1, VERSION_2))
        for path in (first, second):
            _settle(path, 3600)
        result, cursor, read = hashed.tick(env, "judgment_versions_landed", None)
        assert read == [first.name, second.name] and len(result.run_requests) == 2
        instance.add_dynamic_partitions("judgment_versions", [VERSION_1, VERSION_2])
        # Unchanged files: nothing read, nothing requested.
        result, cursor, read = hashed.tick(env, "judgment_versions_landed", cursor)
        assert read == [] and isinstance(result, dg.SkipReason)
        # Touched, same bytes: read again, nothing requested, and not read on the next tick.
        _settle(first, 1800)
        result, cursor, read = hashed.tick(env, "judgment_versions_landed", cursor)
        assert read == [first.name] and isinstance(result, dg.SkipReason)
        result, cursor, read = hashed.tick(env, "judgment_versions_landed", cursor)
        assert read == []
        # Changed bytes of the same size: read again, and ingested under a new run key.
        text = second.read_text()
        second.write_text(text.replace(",1,", ",2,", 1) if ",1," in text
                          else text.replace(",2,", ",1,", 1))
        _settle(second, 900)
        result, cursor, read = hashed.tick(env, "judgment_versions_landed", cursor)
        (request,) = result.run_requests
        assert read == [second.name] and request.partition_key == VERSION_2
        # A file modified just now is read again on the next tick: its mtime may not move on
        # a second write within the same timestamp tick.
        second.write_text(text)
        result, cursor, read = hashed.tick(env, "judgment_versions_landed", cursor)
        assert read == [second.name] and len(result.run_requests) == 1
        result, cursor, read = hashed.tick(env, "judgment_versions_landed", cursor)
        assert read == [second.name] and isinstance(result, dg.SkipReason)


def test_the_jobs_last_listing_of_the_landing_reads_only_what_the_sensors_did_not(
        tmp_path: Path, monkeypatch):
    """The main job's closing check of what the landing holds unpublished lists it through the
    stamps the sensors kept: settled files are not read a third time; a file changed since is."""
    from evaluation_pipeline.orchestration.selection import unpublished_inputs
    from evaluation_pipeline.orchestration.sensors import landing_stamps

    with temporary_instance(tmp_path / "home") as instance:
        env = make_pipeline(tmp_path, instance)
        env.land_version(VERSION_1)
        env.land_pool(POOL_1)
        landed = [p for p in env.landing.rglob("*") if p.is_file()]
        for path in landed:
            _settle(path, 3600)
        assert all(o.success for o in env.runner.run_until_quiet())
        hashed = HashCounter(monkeypatch)
        resources = env.defs.resources
        stamps = landing_stamps(env.runner.cursors)
        assert unpublished_inputs(resources["landing"], resources["storage"], stamps) == []
        assert hashed.read == []
        # Without the stamps every landed file is read; with them, only one that changed.
        assert unpublished_inputs(resources["landing"], resources["storage"]) == []
        assert sorted(hashed.read) == sorted(p.name for p in landed if p.name != "_READY")
        hashed.read.clear()
        version = env.landing / "judgments" / f"{VERSION_1}.csv"
        _settle(version, 60)
        unpublished_inputs(resources["landing"], resources["storage"], stamps)
        assert hashed.read == [version.name]


def test_the_next_main_job_hashes_only_files_changed_since_the_last(tmp_path: Path,
                                                                    monkeypatch):
    """The main job's runner starts its sensors without cursors, so that what failed is asked
    for again; the landing's file stamps, kept in the instance, spare it reading every file
    ever landed. A runner without them reads them all; a changed file is read, and ingested."""
    from evaluation_pipeline.orchestration.local_runner import LocalRunner
    from evaluation_pipeline.orchestration.sensors import (
        landing_stamps,
        stamped_cursors,
        store_stamps,
    )

    with temporary_instance(tmp_path / "home") as instance:
        env = make_pipeline(tmp_path, instance)
        env.land_version(VERSION_1)
        env.land_pool(POOL_1)
        landed = sorted([p.name for p in env.landing.rglob("*") if p.is_file()
                         and p.name != "_READY"] + ["documents.csv", "queries.csv"])
        for path in [*env.landing.rglob("*"), env.root / "queries.csv",
                     env.root / "documents.csv"]:
            if path.is_file():
                _settle(path, 3600)
        assert all(o.success for o in env.runner.run_until_quiet())
        assert stamped_cursors(instance, env.runner.driven_sensors()) == {}
        store_stamps(instance, landing_stamps(env.runner.cursors))

        hashed = HashCounter(monkeypatch)
        cold = LocalRunner(env.defs, instance)
        assert cold.run_until_quiet() == [] and sorted(hashed.read) == landed
        hashed.read.clear()
        runner = LocalRunner(env.defs, instance)
        seeded = stamped_cursors(instance, runner.driven_sensors())
        assert sorted(seeded) == ["candidate_pools_landed", "documents_changed",
                                  "judgment_versions_landed", "queries_changed"]
        runner.cursors.update(seeded)
        assert runner.run_until_quiet() == [] and hashed.read == []
        version = env.landing / "judgments" / f"{VERSION_1}.csv"
        version.write_text(version.read_text().replace(",1,", ",2,", 1))
        _settle(version, 600)
        runner = LocalRunner(env.defs, instance)
        runner.cursors.update(stamped_cursors(instance, runner.driven_sensors()))
        outcomes = runner.run_until_quiet()
        assert hashed.read == [version.name]
        assert [(o.job, o.partition) for o in outcomes][:1] == [("ingest_judgments", VERSION_1)]


def test_landing_sensors_read_the_cursor_of_earlier_releases(tmp_path: Path, monkeypatch):
    """Cursors once held only the content hashes: read with one, a tick hashes every file
    once and requests nothing that was already seen."""
    from evaluation_pipeline.io.landing import file_sha256

    hashed = HashCounter(monkeypatch)
    with temporary_instance(tmp_path / "home") as instance:
        env = make_pipeline(tmp_path, instance)
        env.land_version(VERSION_1)
        landed = env.landing / "judgments" / f"{VERSION_1}.csv"
        instance.add_dynamic_partitions("judgment_versions", [VERSION_1])
        old = json.dumps({VERSION_1: file_sha256(landed)})
        result, cursor, read = hashed.tick(env, "judgment_versions_landed", old)
        assert read == [landed.name] and isinstance(result, dg.SkipReason)
        assert json.loads(cursor)["landed"] == json.loads(old)
        queries = env.root / "queries.csv"
        _settle(queries, 3600)
        result, cursor, read = hashed.tick(env, "queries_changed", file_sha256(queries))
        assert read == [queries.name] and isinstance(result, dg.SkipReason)
        result, cursor, read = hashed.tick(env, "queries_changed", cursor)
        assert read == [] and isinstance(result, dg.SkipReason)


def test_evaluation_sensor_is_quiet_when_every_pair_has_a_report(pipeline: Pipeline):
    result = pipeline.defs.resolve_sensor_def("evaluations_ready")(dg.build_sensor_context(
        instance=pipeline.instance, definitions=pipeline.defs,
        resources=pipeline.defs.resources))
    assert isinstance(result, dg.SkipReason)


def test_nightly_schedule_evaluates_latest_version_against_active_pools(pipeline: Pipeline):
    schedule = pipeline.defs.resolve_schedule_def("nightly_evaluation")
    assert (schedule.cron_schedule, schedule.execution_timezone) == ("0 2 * * *", "UTC")
    assert schedule.default_status == dg.DefaultScheduleStatus.RUNNING
    context = dg.build_schedule_context(
        instance=pipeline.instance, resources=pipeline.defs.resources,
        scheduled_execution_time=datetime(2026, 12, 1, 2, tzinfo=UTC))
    (request,) = schedule(context)
    assert request.partition_key == evaluation_key(POOL_1, VERSION_1)
    assert request.run_key.startswith(f"nightly-2026-12-01:{POOL_1}:{VERSION_1}:")


def test_published_inputs_are_in_key_order_and_scored_by_auto(pipeline: Pipeline):
    """The pipeline scores with the ``auto`` engine by default (inputs this small in memory,
    and it says so in the metadata); inputs are published sorted by key, so the streaming
    engine streams them as they are, without a sort first."""
    import polars as pl

    assert pipeline.defs.resources["scoring"].engine == "auto"
    scores = pipeline.instance.get_latest_materialization_event(dg.AssetKey("query_scores"))
    assert scores.asset_materialization.metadata["engine"].value == "local"
    pool = pl.read_parquet(pipeline.storage / "pools" / POOL_1 / "candidates.parquet")
    assert pool.equals(pool.sort("ranker", "query_id", "doc_id"))
    grades = pl.read_parquet(pipeline.storage / "judgments" / VERSION_1 / "judgments.parquet")
    assert grades.equals(grades.sort("query_id", "doc_id"))
    assert build_definitions(storage_base="memory://bucket/x").resources[
        "scoring"].engine == "auto"  # remote storage: copied to a local scratch folder first


def test_whole_definitions_load_with_configured_schedule(tmp_path: Path):
    defs = build_definitions(storage_base=str(tmp_path), nightly_cron="30 3 * * 1-5",
                             nightly_timezone="Europe/Berlin")
    dg.Definitions.validate_loadable(defs)
    schedule = defs.resolve_schedule_def("nightly_evaluation")
    assert (schedule.cron_schedule, schedule.execution_timezone) == ("30 3 * * 1-5",
                                                                      "Europe/Berlin")
    sensors = {s.name: s for s in defs.sensors}
    assert set(sensors) == {"judgment_versions_landed", "candidate_pools_landed",
                            "queries_changed", "documents_changed", "evaluations_ready",
                            "evaluation_automation"}
    assert all(s.default_status == dg.DefaultSensorStatus.RUNNING for s in sensors.values())
    assert {j.name for j in defs.jobs} >= {"ingest_judgments", "ingest_candidate_pool",
                                           "ingest_queries", "ingest_documents", "evaluate"}


def test_spec_file_sets_spec_id_and_code_version(tmp_path: Path):
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text("profile: trec_eval\ncutoffs: [10]\n")
    default = build_definitions(storage_base=str(tmp_path))
    changed = build_definitions(storage_base=str(tmp_path), spec_path=spec_file)
    versions = []
    for defs in (default, changed):
        scores = defs.resolve_assets_def("query_scores")
        versions.append(scores.code_versions_by_key[dg.AssetKey("query_scores")])
        spec_id = scores.metadata_by_key[dg.AssetKey("query_scores")]["spec_id"]
        assert spec_id in versions[-1]
    assert versions[0] != versions[1]


# -- publishing is immutable ------------------------------------------------------------------


def test_reingest_with_different_content_is_refused_and_same_content_is_a_noop(
        pipeline: Pipeline):
    landed = pipeline.landing / "judgments" / f"{VERSION_1}.csv"
    published = pipeline.storage / "judgments" / VERSION_1
    original, before = landed.read_text(), _tree_bytes(published)
    lines = original.splitlines(keepends=True)
    header, first = lines[0], lines[1].split(",")
    first[2] = "0" if first[2] != "0" else "1"
    try:
        landed.write_text(header + ",".join(first) + "".join(lines[2:]))
        (outcome,) = pipeline.runner.tick("judgment_versions_landed")
        assert not outcome.success and not outcome.retriable  # the input's doing: not retried
        # The conflict names the version and the published content's hash.
        published_sha = json.loads((published / MANIFEST_FILE).read_text())["sha256"]
        assert_names(outcome.error, PublishConflict.__name__, f"'{VERSION_1}'", published_sha)
        assert _tree_bytes(published) == before
        # Same grades, rows in another order: a new file, the same content.
        landed.write_text(header + "".join(reversed(lines[1:])))
        (outcome,) = pipeline.runner.tick("judgment_versions_landed")
        assert outcome.success
        event = pipeline.instance.get_latest_materialization_event(dg.AssetKey("judgments"))
        assert event.asset_materialization.metadata["newly_written"].value is False
        assert _tree_bytes(published) == before
    finally:
        landed.write_text(original)


def test_bad_input_fails_the_ingest_and_publishes_nothing(pipeline: Pipeline):
    bad = pipeline.landing / "judgments" / "maint-bad.csv"
    text = (LANDING / "judgments" / f"{VERSION_1}.csv").read_text().replace(
        f",{VERSION_1},", ",maint-bad,")
    lines = text.splitlines(keepends=True)
    fields = lines[3].split(",")
    fields[2] = "-1"
    lines[3] = ",".join(fields)
    bad.write_text("".join(lines))
    try:
        (outcome,) = pipeline.runner.tick("judgment_versions_landed")
        assert not outcome.success and not outcome.retriable
        assert_names(outcome.error, InputError.__name__, str(bad), "column 'grade'",
                     rows=[4], row_label="line")
        assert not (pipeline.storage / "judgments" / "maint-bad").exists()
        assert pipeline.runner.tick("evaluations_ready") == []
    finally:
        bad.unlink()


def test_pool_whose_rankers_differ_is_not_scored(pipeline: Pipeline, tmp_path: Path):
    import polars as pl
    split = tmp_path / "pool-split"
    split.mkdir()
    for run_file in (LANDING / "pools" / POOL_1).iterdir():
        if run_file.suffix == ".parquet":
            run = pl.read_parquet(run_file).with_columns(pl.lit("pool-split").alias(
                "candidate_pool"))
            # One candidate fewer for bm25-v3: its first query's set differs from the others'.
            run = run.slice(1) if run_file.stem == "bm25-v3" else run
            run.write_parquet(split / run_file.name)
    (split / "_READY").touch()
    automation = dg.evaluate_automation_conditions(defs=pipeline.defs,
                                                   instance=pipeline.instance)
    pipeline.land_pool("pool-split", split)
    try:
        (outcome,) = pipeline.runner.tick("candidate_pools_landed")
        # Declarative automation does not score past the failed blocking check either.
        automation = dg.evaluate_automation_conditions(
            defs=pipeline.defs, instance=pipeline.instance, cursor=automation.cursor)
        assert automation.get_requested_partitions(dg.AssetKey("query_scores")) == set()
        record = pipeline.instance.get_latest_asset_check_evaluation_record(
            dg.AssetCheckKey(dg.AssetKey("candidate_pools"), "candidate_pool_shared_candidates"))
        evaluation = record.event.dagster_event.event_specific_data
        assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.ERROR
        assert "1 queries where the rankers rank different candidate sets" in (
            evaluation.description)
        assert pipeline.runner.tick("evaluations_ready") == []
        assert not (pipeline.storage / "reports" / "pool-split").exists()
        # With the rule relaxed, the same pool would be scored (the check only warns).
        landing, storage = (pipeline.defs.resources["landing"],
                            pipeline.defs.resources["storage"])
        assert "pool-split" not in evaluable_pools(pipeline.instance, landing, storage,
                                                   QualityPolicy())
        assert "pool-split" in evaluable_pools(pipeline.instance, landing, storage,
                                               QualityPolicy(require_shared_candidates=False))
    finally:
        shutil.rmtree(pipeline.landing / "pools" / "pool-split")


# -- new landings: a pool, then a judgment version ----------------------------------------------


def test_new_pool_gets_reports_and_old_reports_stay_byte_identical(pipeline: Pipeline):
    old = _tree_bytes(pipeline.storage / "reports" / POOL_1)
    automation = dg.evaluate_automation_conditions(defs=pipeline.defs,
                                                   instance=pipeline.instance)
    pipeline.land_pool(POOL_2)
    (ingested,) = pipeline.runner.tick("candidate_pools_landed")
    assert (ingested.job, ingested.partition, ingested.success) == (
        "ingest_candidate_pool", POOL_2, True)
    # Scores and report follow the new upstream partition by automation condition ...
    automation = dg.evaluate_automation_conditions(
        defs=pipeline.defs, instance=pipeline.instance, cursor=automation.cursor)
    for asset in ("query_scores", "evaluation_report"):
        assert automation.get_requested_partitions(dg.AssetKey(asset)) == {
            evaluation_key(POOL_2, VERSION_1)}
    # ... and the evaluation sensor requests the same run; it is executed here.
    (evaluated,) = pipeline.runner.tick("evaluations_ready")
    assert (evaluated.job, evaluated.partition, evaluated.success) == (
        "evaluate", evaluation_key(POOL_2, VERSION_1), True)
    assert POOL_2 in pipeline.instance.get_dynamic_partitions("candidate_pools")
    report = json.loads(pipeline.report(POOL_2, VERSION_1).read_text())
    manifest = json.loads((pipeline.storage / "pools" / POOL_2 / "manifest.json").read_text())
    assert report["lineage"]["candidate_pool"] == POOL_2
    assert report["lineage"]["pool_sha256"] == manifest["sha256"]
    assert _tree_bytes(pipeline.storage / "reports" / POOL_1) == old


def test_new_judgment_version_gets_reports_naming_it(pipeline: Pipeline):
    old_reports = {pool: pipeline.report(pool, VERSION_1).read_bytes() for pool in (POOL_1, POOL_2)}
    pipeline.land_version(VERSION_2)
    outcomes = pipeline.runner.run_until_quiet()
    assert [(o.job, o.partition) for o in outcomes] == [
        ("ingest_judgments", VERSION_2),
        ("evaluate", evaluation_key(POOL_1, VERSION_2)),
        ("evaluate", evaluation_key(POOL_2, VERSION_2)),
    ]
    assert all(o.success for o in outcomes)
    old_sha = json.loads((pipeline.storage / "judgments" / VERSION_1 / "manifest.json")
                         .read_text())["sha256"]
    new_sha = json.loads((pipeline.storage / "judgments" / VERSION_2 / "manifest.json")
                         .read_text())["sha256"]
    assert old_sha != new_sha
    for pool in (POOL_1, POOL_2):
        new = json.loads(pipeline.report(pool, VERSION_2).read_text())
        assert (new["lineage"]["judgment_version"], new["lineage"]["judgments_sha256"]) == (
            VERSION_2, new_sha)
        assert all(VERSION_2 in s and new_sha[:8] in s for s in new["headline"][:3])
        old = json.loads(old_reports[pool])
        assert (old["lineage"]["judgment_version"], old["lineage"]["judgments_sha256"]) == (
            VERSION_1, old_sha)
        assert pipeline.report(pool, VERSION_1).read_bytes() == old_reports[pool]
    # The incomplete-share check compared the new version with the one before it.
    record = pipeline.instance.get_latest_asset_check_evaluation_record(
        dg.AssetCheckKey(dg.AssetKey("query_scores"), "incomplete_share_trend"))
    evaluation = record.event.dagster_event.event_specific_data
    assert evaluation.metadata["compared_with"].value == VERSION_1
    # The nightly schedule now takes the latest version.
    requests = pipeline.defs.resolve_schedule_def("nightly_evaluation")(
        dg.build_schedule_context(instance=pipeline.instance, resources=pipeline.defs.resources,
                                  scheduled_execution_time=datetime(2026, 12, 2, 2, tzinfo=UTC)))
    assert sorted(r.partition_key for r in requests) == [
        evaluation_key(POOL_1, VERSION_2), evaluation_key(POOL_2, VERSION_2)]
