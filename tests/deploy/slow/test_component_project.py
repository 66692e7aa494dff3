"""A Dagster project of a user's, made with the dg layout in a temporary folder, that installs
this package, with two NdcgEvaluation instances (a search product and a recommender, each with
its own prefix, group, landing, storage and spec): `dg list components` lists NdcgEvaluation,
`dg scaffold defs` writes each commented defs.yaml, `dg list defs` lists both instances'
definitions without a clash, and the project's definitions, loaded from its defs folder,
evaluate a pool against a version in each instance with the report.json of the standalone
pipeline on the same inputs.

The package is registered as pip registers an installed one: a dist-info folder on the path
holding the entry points pyproject.toml declares (the checkout's own install predates them)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import dagster as dg
import yaml

from evaluation_pipeline.orchestration.local_runner import LocalRunner
from tests.support.paths import EXAMPLES, REPO
from tests.support.temporary_pipeline import (
    POOL_1,
    VERSION_1,
    VERSION_2,
    make_pipeline,
    temporary_instance,
)

TYPE = "evaluation_pipeline.definitions.NdcgEvaluation"
PYPROJECT = """[project]
name = "search-quality"
version = "0.1.0"
requires-python = ">=3.11"

[tool.dg]
directory_type = "project"

[tool.dg.project]
root_module = "search_quality"
"""
DEFINITIONS = """from pathlib import Path

import dagster as dg

defs = dg.load_from_defs_folder(path_within_project=Path(__file__).parent)
"""


def registered_site(folder: Path) -> Path:
    """A folder holding this package's entry points as an installed distribution would."""
    points = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"]
    info = folder / "ndcg_eval_entry_points-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ndcg-eval-entry-points\n"
                                   "Version: 0.1.0\n")
    (info / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in entries.items())
        for group, entries in points.items()))
    return folder


def make_project(root: Path) -> Path:
    project = root / "search-quality"
    package = project / "src" / "search_quality"
    (package / "defs").mkdir(parents=True)
    (project / "pyproject.toml").write_text(PYPROJECT)
    (package / "__init__.py").write_text("")
    (package / "defs" / "__init__.py").write_text("")
    (package / "definitions.py").write_text(DEFINITIONS)
    return project


def dg_command(project: Path, env: dict, *arguments: str) -> str:
    dg_cli = Path(sys.executable).parent / "dg"
    ran = subprocess.run([str(dg_cli), *arguments], cwd=project, env=env, capture_output=True,
                         text=True, timeout=600)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    return ran.stdout


# instance: (its version and pool, its spec file's text or None for the packaged spec)
INSTANCES = {
    "search": (VERSION_1, POOL_1, None),
    "recommender": (VERSION_2, POOL_1, "cutoffs: [5, 20]\nunjudged: zero\n"),
}


def configure(defs_file: Path, root: Path, name: str, spec: Path | None) -> Path:
    """The scaffolded defs.yaml of ``name`` with its own locations, prefix, group and spec;
    returns its landing folder."""
    landing, storage = root / name / "landing", root / name / "storage"
    (landing / "judgments").mkdir(parents=True)
    (landing / "pools").mkdir()
    queries = shutil.copy(EXAMPLES / "queries.csv", root / name / "queries.csv")
    text = defs_file.read_text()
    for example, value in (("/data/ndcg-eval/storage", storage),
                           ("/data/ndcg-eval/landing", landing),
                           ("/data/ndcg-eval/queries.csv", queries)):
        text = text.replace(f": {example}\n", f": {value}\n", 1)
    # The commented attributes, uncommented with this instance's values.
    text = text.replace("  # key_prefix: search\n", f"  key_prefix: {name}\n", 1)
    text = text.replace("  # group_name: search_quality\n", f"  group_name: {name}_quality\n", 1)
    if spec is not None:
        text = text.replace("  # spec: /data/ndcg-eval/evaluation_spec.yaml\n",
                            f"  spec: {spec}\n", 1)
    defs_file.write_text(text)
    document = yaml.safe_load(text)["attributes"]
    assert document["key_prefix"] == name and document["landing"] == str(landing)
    assert ("spec" in document) == (spec is not None)
    return landing


def test_a_dg_project_with_two_instances_lists_scaffolds_and_evaluates_each(tmp_path,
                                                                            monkeypatch):
    project = make_project(tmp_path)
    site = registered_site(tmp_path / "site")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NDCG_EVAL_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO), str(project / "src")])
    env["COLUMNS"] = "200"

    listed = json.loads(dg_command(project, env, "list", "components", "--json"))
    assert TYPE in [item["key"] for item in listed["items"]]

    landings, specs = {}, {}
    for name, (_, _, spec_text) in INSTANCES.items():
        dg_command(project, env, "scaffold", "defs", TYPE, name)
        defs_file = project / "src" / "search_quality" / "defs" / name / "defs.yaml"
        assert yaml.safe_load(defs_file.read_text())["type"] == TYPE
        assert "# engine: auto" in defs_file.read_text()
        if spec_text is not None:
            specs[name] = tmp_path / name / "evaluation_spec.yaml"
            specs[name].parent.mkdir(parents=True)
            specs[name].write_text(spec_text)
        landings[name] = configure(defs_file, tmp_path, name, specs.get(name))

    listed = json.loads(dg_command(project, env, "list", "defs", "--json"))
    for name in INSTANCES:
        source = f"defs/{name}/defs.yaml:1"
        assets = {a["asset_key"] for a in listed["assets"]
                  if a["source"].endswith(source)}
        assert assets == {f"{name}/{asset}" for asset in (
            "judgments", "candidate_pools", "queries", "documents", "query_scores",
            "evaluation_report", "evaluation_history", "judging_worklist", "judgments_llm")}
        assert {job["name"] for job in listed["jobs"] if job["source"].endswith(source)} == {
            f"{name}__{job}" for job in ("ingest_judgments", "ingest_candidate_pool",
                                         "ingest_queries", "ingest_documents", "evaluate")}
        assert f"{name}__nightly_evaluation" in {s["name"] for s in listed["schedules"]}
        assert f"{name}__evaluations_ready" in {s["name"] for s in listed["sensors"]}
        assert f"{name}__storage" in {r["name"] for r in listed["resources"]}
        assert f"{name}/judgments:judgments_valid" in {c["key"] for c in listed["asset_checks"]}

    # In process: the project's definitions as Dagster loads them, each instance's landing
    # with its own inputs.
    monkeypatch.syspath_prepend(str(project / "src"))
    for variable in [v for v in os.environ if v.startswith("NDCG_EVAL_")]:
        monkeypatch.delenv(variable)
    defs = dg.load_from_defs_folder(path_within_project=project / "src" / "search_quality")
    for name, (version, pool, _) in INSTANCES.items():
        shutil.copy(EXAMPLES / "landing" / "judgments" / f"{version}.csv",
                    landings[name] / "judgments")
        shutil.copytree(EXAMPLES / "landing" / "pools" / pool, landings[name] / "pools" / pool)
    with temporary_instance(tmp_path / "home") as instance:
        outcomes = LocalRunner(defs, instance).run_until_quiet()
        partitions = {name: (instance.get_dynamic_partitions(f"{name}__judgment_versions"),
                             instance.get_dynamic_partitions(f"{name}__candidate_pools"))
                      for name in INSTANCES}
    assert outcomes and all(outcome.success for outcome in outcomes), outcomes
    # One evaluation of each instance, each run by its own job.
    evaluations = sorted(o.job for o in outcomes if o.job.endswith("__evaluate"))
    assert evaluations == ["recommender__evaluate", "search__evaluate"]
    assert partitions == {name: ([version], [pool])
                          for name, (version, pool, _) in INSTANCES.items()}

    monkeypatch.setenv("NDCG_EVAL_DEV", "1")
    for name, (version, pool, _) in INSTANCES.items():
        ours = sorted((tmp_path / name / "storage").glob(f"reports/{pool}/{version}/*/report.json"))
        assert len(ours) == 1, name
        with temporary_instance(tmp_path / f"standalone-{name}-home") as instance:
            standalone = make_pipeline(tmp_path / f"standalone-{name}", instance,
                                       spec_path=specs.get(name))
            standalone.land_version(version)
            standalone.land_pool(pool)
            assert all(o.success for o in standalone.runner.run_until_quiet())
            theirs = standalone.report(pool, version)
        assert json.loads(ours[0].read_text()) == json.loads(theirs.read_text()), name
        assert ours[0].read_bytes() == theirs.read_bytes(), name
    search, recommender = (json.loads(next((tmp_path / name / "storage").glob(
        "reports/*/*/*/report.json")).read_text()) for name in INSTANCES)
    assert search["spec_id"] != recommender["spec_id"]
