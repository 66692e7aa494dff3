"""Importing the package stays cheap: ``import evaluation_pipeline`` loads none of its
dependencies, and the Python API, loaded on first use, never loads Dagster."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support.paths import REPO

HEAVY = ("polars", "numpy", "numba", "pyarrow", "duckdb", "pandera", "dagster")


def loaded_after(code: str) -> dict[str, bool]:
    probe = (f"import sys\n{code}\nimport json\n"
             f"print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))")
    ran = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout.splitlines()[-1])


def test_importing_the_package_loads_no_dependency():
    assert not any(loaded_after("import evaluation_pipeline").values())


def test_the_api_loads_on_first_use_without_dagster():
    loaded = loaded_after("from evaluation_pipeline import evaluate, explain, reconcile")
    assert loaded["polars"] and not loaded["dagster"]
    evaluated = loaded_after(
        "from evaluation_pipeline import evaluate\n"
        f"evaluate({str(REPO / 'examples/data/landing/judgments/maint-v2.csv')!r}, "
        f"{str(REPO / 'examples/data/landing/pools/pool-2026-11-28')!r}).report()")
    assert not evaluated["dagster"]


def test_an_unknown_name_is_an_attribute_error():
    import evaluation_pipeline

    try:
        evaluation_pipeline.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("no AttributeError")
