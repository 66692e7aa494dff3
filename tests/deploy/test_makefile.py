"""The Makefile's installs, run with a pip that records what it is asked: `make run` installs
the package with no extra (its runtime dependencies alone) and says so; `make test` adds the
`test` extra, and CI's extras come on top of it, each once."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from tests.support.make import MAKE_VARIABLES
from tests.support.paths import REPO

PIP = """#!/bin/sh
echo "$@" >> "$(dirname "$0")/asked"
case "$*" in *-e*) ;; *) exit 0;; esac
echo "Collecting polars>=2.1"
echo "Requirement already satisfied: numpy"
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy2(REPO / name, tmp_path / name)
    bin_folder = tmp_path / ".venv" / "bin"
    bin_folder.mkdir(parents=True)
    (bin_folder / "pip").write_text(PIP)
    (bin_folder / "python").write_text("#!/bin/sh\nexit 0\n")
    for tool in ("pip", "python"):
        (bin_folder / tool).chmod(stat.S_IRWXU)
    return tmp_path


def make(checkout: Path, *arguments: str) -> subprocess.CompletedProcess:
    # Not EXTRAS, nor make's own variables (under `make test` MAKEFLAGS carries its EXTRAS).
    env = {k: v for k, v in os.environ.items() if k not in MAKE_VARIABLES}
    # PYTHON=true: the virtual environment exists already (the stub's folder).
    return subprocess.run(["make", "PYTHON=true", *arguments], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=60)


def installs(checkout: Path) -> list[str]:
    asked = (checkout / ".venv" / "bin" / "asked").read_text().splitlines()
    return [line for line in asked if "--upgrade pip" not in line]


def stamp_target(checkout: Path, target: str, *arguments: str) -> str:
    """Make's install stamp for ``target``, as a dry run names it."""
    dry = make(checkout, "-n", target, *arguments).stdout
    return next(word for word in dry.split() if "/.installed" in word).rstrip(";")


def test_make_run_installs_the_runtime_dependencies_alone_and_says_so(checkout):
    assert stamp_target(checkout, "run") == ".venv/.installed"
    made = make(checkout, ".venv/.installed")
    assert made.returncode == 0, made.stderr
    assert installs(checkout) == ["install --progress-bar off -e ."]
    assert made.stdout.splitlines()[0] == (
        "make: installing ndcg-eval and its runtime dependencies into .venv (the first time only)")
    assert "  polars>=2.1" in made.stdout and "Requirement already" not in made.stdout
    assert (checkout / ".venv" / ".installed").exists()
    assert "/.installed" not in make(checkout, "-n", "run").stdout  # installed once


def test_make_test_adds_the_test_extra_and_ci_its_own(checkout):
    assert stamp_target(checkout, "test") == ".venv/.installed-test"
    assert stamp_target(checkout, "test", "EXTRAS=spark,postgres") == (
        ".venv/.installed-postgres-spark-test")
    assert stamp_target(checkout, "test", "EXTRAS=test,spark") == ".venv/.installed-spark-test"
    made = make(checkout, ".venv/.installed-postgres-spark-test", "EXTRAS=spark,postgres")
    assert made.returncode == 0, made.stderr
    assert installs(checkout) == ["install --progress-bar off -e .[postgres,spark,test]"]
    assert "with the extras [postgres,spark,test]" in made.stdout.splitlines()[0]


def test_a_failed_install_fails_make_and_leaves_no_stamp(checkout):
    pip = checkout / ".venv" / "bin" / "pip"
    pip.write_text(PIP.replace(
        'echo "Collecting', 'echo "ERROR: no such package"; exit 1\necho "Collecting'))
    made = make(checkout, ".venv/.installed")
    assert made.returncode != 0
    assert "ERROR: no such package" in made.stdout
    assert not (checkout / ".venv" / ".installed").exists()


def test_ci_runs_every_test_with_its_extras():
    """CI runs the second tier too (``make test-all``), where a missing requirement fails."""
    assert "make test-all EXTRAS=spark,postgres" in (REPO / ".ci" / "run").read_text()


def test_make_ui_plays_the_week_only_when_no_run_has_landed_it(checkout):
    """`make ui` on the instance a `make run` filled starts the UI at once; on a fresh
    checkout it plays the week first."""
    python = checkout / ".venv" / "bin" / "python"
    python.write_text('#!/bin/sh\necho "$@" >> "$(dirname "$0")/ran"\nexit 0\n')
    assert make(checkout, ".venv/.installed").returncode == 0
    ran = checkout / ".venv" / "bin" / "ran"

    def modules() -> list[str]:
        lines = ran.read_text().splitlines() if ran.exists() else []
        ran.unlink(missing_ok=True)
        return [line.split()[1] for line in lines]

    made = make(checkout, "ui")
    assert made.returncode == 0, made.stderr
    assert modules() == ["evaluation_pipeline.main_job", "evaluation_pipeline.dev_ui"]
    (checkout / ".storage" / "example-landing").mkdir(parents=True)
    (checkout / ".dagster_home").mkdir()
    (checkout / ".dagster_home" / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    made = make(checkout, "ui")
    assert made.returncode == 0, made.stderr
    assert modules() == ["evaluation_pipeline.dev_ui"]
