"""A Dagster project of a user's, made with the dg layout in a temporary folder, that installs
this package: `dg list components` lists NdcgEvaluation, `dg scaffold defs` writes its
commented defs.yaml, `dg list defs` lists the assets it builds, and the project's definitions,
loaded from its defs folder, evaluate a pool against a version with the report.json of the
standalone pipeline on the same inputs.

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


def test_a_dg_project_lists_scaffolds_and_evaluates_with_the_component(tmp_path, monkeypatch):
    project = make_project(tmp_path)
    site = registered_site(tmp_path / "site")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NDCG_EVAL_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO), str(project / "src")])
    env["COLUMNS"] = "200"

    listed = json.loads(dg_command(project, env, "list", "components", "--json"))
    assert TYPE in [item["key"] for item in listed["items"]]

    dg_command(project, env, "scaffold", "defs", TYPE, "search")
    defs_file = project / "src" / "search_quality" / "defs" / "search" / "defs.yaml"
    document = yaml.safe_load(defs_file.read_text())
    assert document["type"] == TYPE and "# engine: auto" in defs_file.read_text()
    landing, storage = tmp_path / "landing", tmp_path / "storage"
    (landing / "judgments").mkdir(parents=True)
    (landing / "pools").mkdir()
    queries = shutil.copy(EXAMPLES / "queries.csv", tmp_path / "queries.csv")
    text = defs_file.read_text()
    for example, value in (("/data/ndcg-eval/storage", storage),
                           ("/data/ndcg-eval/landing", landing),
                           ("/data/ndcg-eval/queries.csv", queries)):
        text = text.replace(f": {example}\n", f": {value}\n", 1)
    defs_file.write_text(text)

    assets = json.loads(dg_command(project, env, "list", "defs", "--json"))["assets"]
    keys = {asset["asset_key"] for asset in assets}
    assert {"judgments", "candidate_pools", "queries", "query_scores", "evaluation_report",
            "evaluation_history"} <= keys
    assert all(asset["source"].endswith("defs/search/defs.yaml:1") for asset in assets)

    # In process: the project's definitions as Dagster loads them, on the example inputs.
    monkeypatch.syspath_prepend(str(project / "src"))
    for variable in [v for v in os.environ if v.startswith("NDCG_EVAL_")]:
        monkeypatch.delenv(variable)
    defs = dg.load_from_defs_folder(path_within_project=project / "src" / "search_quality")
    shutil.copy(EXAMPLES / "landing" / "judgments" / f"{VERSION_1}.csv", landing / "judgments")
    shutil.copytree(EXAMPLES / "landing" / "pools" / POOL_1, landing / "pools" / POOL_1)
    with temporary_instance(tmp_path / "home") as instance:
        outcomes = LocalRunner(defs, instance).run_until_quiet()
    assert outcomes and all(outcome.success for outcome in outcomes), outcomes
    ours = sorted(storage.glob(f"reports/{POOL_1}/{VERSION_1}/*/report.json"))
    assert len(ours) == 1

    monkeypatch.setenv("NDCG_EVAL_DEV", "1")
    with temporary_instance(tmp_path / "standalone-home") as instance:
        standalone = make_pipeline(tmp_path / "standalone", instance)
        standalone.land_version(VERSION_1)
        standalone.land_pool(POOL_1)
        assert all(o.success for o in standalone.runner.run_until_quiet())
        theirs = standalone.report(POOL_1, VERSION_1)
    assert json.loads(ours[0].read_text()) == json.loads(theirs.read_text())
    assert ours[0].read_bytes() == theirs.read_bytes()
