"""The NdcgEvaluation component: its attributes are the deployment's settings, each left out
read from its variable; the project's code location is the component configured from the
environment; the scaffolded defs.yaml loads as it is and names every attribute; the package
registers the component for `dg list components`, and importing its module reads no setting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib

import dagster as dg
import pytest
import yaml

from evaluation_pipeline import definitions, settings
from evaluation_pipeline.definitions import (
    ATTRIBUTE_SETTINGS,
    MissingSetting,
    NdcgEvaluation,
    build_definitions,
    defs_yaml,
)
from evaluation_pipeline.report import ReportConfig
from schemas.errors import EvaluationError
from tests.support.paths import REPO

TYPE = "evaluation_pipeline.definitions.NdcgEvaluation"


@pytest.fixture(autouse=True)
def own_instance():
    """An instance of its own for each test: resolving the definitions reads the current
    instance's state, and a test run before in the same process (a materialization on a
    temporary instance since removed) can leave its instance current."""
    with dg.instance_for_test():
        yield


@pytest.fixture
def deployment(monkeypatch):
    """No NDCG_EVAL_* variable at all, as in a project that configures the component."""
    for setting in settings.SETTINGS:
        monkeypatch.delenv(setting.name, raising=False)
    return monkeypatch


def dumped(definitions) -> dict:
    return {key: resource.model_dump() for key, resource in definitions.resources.items()}


def test_attributes_configure_what_the_variables_do(deployment, tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("profile: trec_eval\ncutoffs: [10]\n")
    attributes = dict(storage=str(tmp_path / "storage"), landing=str(tmp_path / "landing"),
                      queries=str(tmp_path / "queries.csv"),
                      documents=str(tmp_path / "documents.csv"), spec=str(spec), engine="local",
                      storage_options={"anon": False}, memory_limit="1GB",
                      spill_dir=str(tmp_path / "spill"), alpha=0.01, min_effect=0.02,
                      power=0.9, baseline_pool="pool-1", alert_webhook="http://127.0.0.1:9/hook",
                      nightly_cron="0 3 * * *", nightly_timezone="Europe/Berlin",
                      spark_master="local[2]")
    assert set(attributes) == set(ATTRIBUTE_SETTINGS)  # every setting the component has
    component = dumped(NdcgEvaluation(**attributes).build_defs())
    for name, value in attributes.items():
        deployment.setenv(ATTRIBUTE_SETTINGS[name].name,
                          json.dumps(value) if isinstance(value, dict) else str(value))
    # The variables' resources leave these to be read when a step runs: the same values then.
    assert effective(NdcgEvaluation(**attributes).build_defs()) == effective(build_definitions())
    from_environment = dumped(build_definitions())
    assert from_environment["memory"] == {"memory_limit": None, "spill_dir": None}
    assert from_environment["watch"]["baseline_pool"] is None
    assert from_environment["storage"]["storage_options"] == {}  # io.locations reads it
    late = {"memory": {"memory_limit": "1GB", "spill_dir": str(tmp_path / "spill")}}
    from_environment["watch"]["baseline_pool"] = "pool-1"
    from_environment["watch"]["alert_webhook"] = "http://127.0.0.1:9/hook"
    from_environment["storage"]["storage_options"] = {"anon": False}
    assert component == from_environment | late
    deployment.setattr(definitions, "_built", {})  # built again, from these variables
    assert dumped(definitions.defs) == dumped(build_definitions())  # the project's own location
    assert definitions.defs is definitions.code_location()
    assert definitions.defs.get_schedule_def("nightly_evaluation").cron_schedule == "0 3 * * *"
    assert component["watch"]["alpha"] == 0.01
    assert component["scoring"]["engine"] == "local"


def effective(definitions) -> tuple:
    """What the memory and watch resources apply when a step runs."""
    resources = definitions.resources
    budget = resources["memory"].budget(resources["storage"])
    watch = resources["watch"].settings(ReportConfig())
    return budget.memory_limit, str(budget.spill_dir), watch


def test_left_out_attributes_come_from_the_variables(deployment, tmp_path):
    deployment.setenv(settings.LANDING.name, str(tmp_path / "landing"))
    deployment.setenv(settings.QUERIES.name, str(tmp_path / "queries.csv"))
    deployment.setenv(settings.ALPHA.name, "0.2")
    built = NdcgEvaluation(storage=str(tmp_path / "storage"), min_effect=0.5).build_defs()
    assert built.resources["landing"].folder == str(tmp_path / "landing")
    assert (built.resources["watch"].alpha, built.resources["watch"].min_effect) == (0.2, 0.5)
    deployment.delenv(settings.LANDING.name)
    with pytest.raises(MissingSetting, match=settings.LANDING.name):
        NdcgEvaluation(storage=str(tmp_path / "storage")).build_defs()


def test_bad_attributes_are_named(deployment, tmp_path):
    where = dict(storage=str(tmp_path / "s"), landing=str(tmp_path / "l"),
                 queries=str(tmp_path / "q.csv"))
    with pytest.raises(EvaluationError, match="1 lightyear"):
        NdcgEvaluation(**where, memory_limit="1 lightyear").build_defs()
    with pytest.raises(EvaluationError, match="not an engine"):
        NdcgEvaluation(**where, engine="warp").build_defs()
    with pytest.raises(EvaluationError, match="not a time zone"):
        NdcgEvaluation(**where, nightly_timezone="Mars/Olympus").build_defs()
    # An attribute is held to its variable's rule, and named.
    with pytest.raises(EvaluationError, match=r"^alpha=1.5 is not a number above 0 and at most 1"):
        NdcgEvaluation(**where, alpha=1.5).build_defs()
    with pytest.raises(EvaluationError, match=r"^min_effect=-0.1 is not a number at least 0"):
        NdcgEvaluation(**where, min_effect=-0.1).build_defs()


def test_the_scaffolded_defs_yaml_loads_and_names_every_attribute(deployment, tmp_path):
    text = defs_yaml(TYPE)
    document = yaml.safe_load(text)
    assert document["type"] == TYPE
    assert set(document["attributes"]) == {"storage", "landing", "queries"}
    lines = {line.strip().removeprefix("# ") for line in text.splitlines()}
    named = {name for name in NdcgEvaluation.model_fields
             if any(line.startswith(f"{name}: ") for line in lines)}
    assert named == set(NdcgEvaluation.model_fields)
    # Every commented attribute, uncommented, is a valid value of it.
    uncommented = yaml.safe_load("\n".join(
        line.replace("  # ", "  ", 1) if line.strip()[2:].split(":")[0] in
        NdcgEvaluation.model_fields else line for line in text.splitlines()))
    component = NdcgEvaluation.resolve_from_dict(uncommented["attributes"])
    assert component.memory_limit == "4GB" and component.storage_options == {
        "endpoint_url": "http://127.0.0.1:9000"}


def test_the_package_registers_the_component_module():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    modules = project["entry-points"]["dagster_dg_cli.registry_modules"]
    assert list(modules.values()) == ["evaluation_pipeline.definitions"]
    assert any("dagster-dg-cli==" in d for d in project["optional-dependencies"]["test"])


def test_importing_the_component_reads_no_setting():
    env = {k: v for k, v in os.environ.items() if not k.startswith("NDCG_EVAL_")}
    ran = subprocess.run(
        [sys.executable, "-c", "import evaluation_pipeline.definitions as d\n"
         "print(d.NdcgEvaluation.__name__)\n"
         "try:\n    d.defs\nexcept d.MissingSetting as e:\n    print('refused', e)"],
        env={**env, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("NdcgEvaluation\nrefused NDCG_EVAL_STORAGE is not set")


def names(definitions) -> dict[str, set[str]]:
    """Every name that two instances in one code location must not share."""
    graph = definitions.resolve_asset_graph()
    partitions = set()
    for key in graph.get_all_asset_keys():
        outer = graph.get(key).partitions_def
        for part in getattr(outer, "partitions_defs", None) or ([outer] if outer else []):
            partitions.add(getattr(part, "partitions_def", part).name)
    return {
        "assets": {key.to_user_string() for key in graph.get_all_asset_keys()},
        "checks": {key.to_user_string() for key in graph.asset_check_keys},
        "ops": {d.op.name for d in [*definitions.assets, *definitions.asset_checks]},
        "jobs": {job.name for job in definitions.jobs},
        "sensors": {sensor.name for sensor in definitions.sensors},
        "schedules": {schedule.name for schedule in definitions.schedules},
        "resources": set(definitions.resources),
        "partitions": partitions,
    }


def test_the_project_keeps_its_names(deployment, tmp_path):
    where = dict(storage=str(tmp_path / "s"), landing=str(tmp_path / "l"),
                 queries=str(tmp_path / "q.csv"))
    own = names(NdcgEvaluation(**where).build_defs())
    assert own["jobs"] == {"ingest_judgments", "ingest_candidate_pool", "ingest_queries",
                           "ingest_documents", "evaluate"}
    assert own["sensors"] == {"judgment_versions_landed", "candidate_pools_landed",
                              "queries_changed", "documents_changed", "evaluations_ready",
                              "evaluation_automation"}
    assert own["schedules"] == {"nightly_evaluation"}
    assert own["resources"] == {"storage", "landing", "policy", "watch", "scoring", "memory"}
    assert own["assets"] == {"judgments", "candidate_pools", "queries", "documents",
                             "query_scores", "evaluation_report", "evaluation_history",
                             "judging_worklist", "judgments_llm"}
    assert own["partitions"] == {"judgment_versions", "candidate_pools"}
    groups = NdcgEvaluation(**where).build_defs().get_repository_def().assets_defs_by_key
    assert {key.to_user_string(): a.group_names_by_key[key] for key, a in groups.items()} == {
        "judgments": "ingest", "candidate_pools": "ingest", "queries": "ingest",
        "documents": "ingest",
        "query_scores": "evaluation", "evaluation_report": "evaluation",
        "evaluation_history": "evaluation", "judging_worklist": "judging",
        "judgments_llm": "judging"}


def test_two_instances_share_a_code_location(deployment, tmp_path):
    built = {}
    for prefix in ("search", ["recs", "v2"]):
        name = "_".join([prefix] if isinstance(prefix, str) else prefix)
        built[name] = NdcgEvaluation(
            storage=str(tmp_path / name / "storage"), landing=str(tmp_path / name / "landing"),
            queries=str(tmp_path / name / "q.csv"), key_prefix=prefix,
            group_name=f"{name}_quality", nightly_cron="0 3 * * *").build_defs()
    search, recs = names(built["search"]), names(built["recs_v2"])
    for kind in search:
        assert search[kind] and not search[kind] & recs[kind], kind
    assert "search/query_scores" in search["assets"] and "recs/v2/judgments" in recs["assets"]
    assert "search/judgments:judgments_valid" in search["checks"]
    assert {"search__evaluate", "search__nightly_evaluation", "search__storage",
            "search__judgment_versions"} <= set().union(*search.values())
    assert "recs__v2__candidate_pools_landed" in recs["sensors"]
    merged = dg.Definitions.merge(*built.values())
    dg.Definitions.validate_loadable(merged)
    repository = merged.get_repository_def()
    groups = {a.group_names_by_key[key] for key, a in repository.assets_defs_by_key.items()
              if key.path[0] == "search"}
    assert groups == {"search_quality"}
    # Each instance's job runs its own assets on its own resources.
    job = merged.resolve_job_def("recs__v2__evaluate")
    assert {key.to_user_string() for key in job.asset_layer.selected_asset_keys} == {
        "recs/v2/query_scores", "recs/v2/evaluation_report", "recs/v2/evaluation_history"}
    assert "recs__v2__storage" in job.resource_defs and "search__storage" not in {
        key for node in job.nodes for key in node.definition.required_resource_keys}
    assert merged.resources["recs__v2__storage"].base == str(tmp_path / "recs_v2" / "storage")
    sensor = merged.resolve_sensor_def("search__evaluations_ready")
    assert sensor.required_resource_keys == {"search__landing", "search__storage",
                                             "search__policy"}


def test_a_prefix_or_group_dagster_would_refuse_is_named(deployment, tmp_path):
    where = dict(storage=str(tmp_path / "s"), landing=str(tmp_path / "l"),
                 queries=str(tmp_path / "q.csv"))
    with pytest.raises(EvaluationError, match="key_prefix part 'search-quality'"):
        NdcgEvaluation(**where, key_prefix="search-quality").build_defs()
    with pytest.raises(EvaluationError, match="group_name 'search quality'"):
        NdcgEvaluation(**where, key_prefix="s", group_name="search quality").build_defs()
