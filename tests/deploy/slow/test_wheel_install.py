"""The package as a deployment gets it: the wheel, installed into a fresh virtual environment,
loads its Dagster code location from configuration alone (no checkout, no development switch)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from evaluation_pipeline import settings
from tests.support.paths import REPO
from tests.support.refusals import assert_names

# What the wheel is built from: the packaging metadata and the packages it declares.
SOURCES = ("pyproject.toml", "README.md", "evaluation_pipeline", "schemas")
INSTALL_SECONDS = 900


def _run(*command, env=None, cwd=None) -> subprocess.CompletedProcess:
    # Not check=True: the callers assert on the exit status with the output in the message.
    return subprocess.run([str(c) for c in command], check=False, env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=INSTALL_SECONDS)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh virtual environment holding the wheel and the dependencies it declares."""
    root = tmp_path_factory.mktemp("wheel")
    # Built from a copy: a build inside the checkout would leave build/ there, and a stale
    # build/lib could slip deleted files into the wheel.
    source = root / "source"
    source.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name,
                            ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(REPO / name, source / name)
    built = _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", root / "dist", source)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = (root / "dist").glob("ndcg_eval-*.whl")

    environment = root / "venv"
    venv.create(environment, with_pip=False)
    python = environment / "bin" / "python"
    # The running pip installs into the new environment; dependencies come from its cache.
    added = _run(sys.executable, "-m", "pip", "--python", python, "install", "--quiet", wheel)
    assert added.returncode == 0, added.stdout[-3000:] + added.stderr[-3000:]
    return environment


def deployment_env(root: Path, **locations: str) -> dict[str, str]:
    """The environment of a deployment: no checkout on the path, no development switch."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", settings.DEV.name) and not k.startswith("NDCG_EVAL_")}
    (root / "dagster_home").mkdir(exist_ok=True)
    return env | {"DAGSTER_HOME": str(root / "dagster_home")} | locations


def validate(environment: Path, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return _run(environment / "bin" / "dagster", "definitions", "validate", "-m",
                "evaluation_pipeline.definitions", env=env, cwd=cwd)


def test_the_installed_wheel_validates_its_definitions_from_configuration(installed, tmp_path):
    landing = tmp_path / "landing"
    (landing / "judgments").mkdir(parents=True)
    (landing / "pools").mkdir()
    env = deployment_env(tmp_path, NDCG_EVAL_LANDING=str(landing),
                         NDCG_EVAL_QUERIES=str(tmp_path / "queries.csv"),
                         NDCG_EVAL_STORAGE=str(tmp_path / "storage"))
    where = _run(installed / "bin" / "python", "-c",
                 "import evaluation_pipeline; print(evaluation_pipeline.__file__)",
                 env=env, cwd=tmp_path)
    assert where.stdout.startswith(str(installed)), where.stdout + where.stderr
    checked = validate(installed, env, tmp_path)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-3000:]
    assert "Validation successful" in checked.stdout + checked.stderr


def test_the_installed_wheel_names_the_missing_variable(installed, tmp_path):
    env = deployment_env(tmp_path, NDCG_EVAL_LANDING=str(tmp_path / "landing"),
                         NDCG_EVAL_QUERIES=str(tmp_path / "queries.csv"))
    checked = validate(installed, env, tmp_path)
    assert checked.returncode != 0
    assert_names(checked.stdout + checked.stderr, settings.STORAGE.name)
