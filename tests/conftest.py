"""Fixtures for every test: the servers and the Spark session (started on first use), and the
conformance data path. Shared helpers are in ``tests.support``."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from evaluation_pipeline import settings
from tests.support.paths import CONFORMANCE
from tests.support.pools import (  # noqa: F401  (fixtures for every test file)
    large_inputs,
    large_pool_folder,
    pool_folder,
)
from tests.support.postgres_server import postgres_server  # noqa: F401  (a fixture for every test file)
from tests.support.requirements import (  # noqa: F401  (hooks: a skip fails under the full tier)
    OUTSIDE_THE_CHECKOUT,
    pytest_make_collect_report,
    pytest_runtest_makereport,
)
from tests.support.s3_server import endpoint  # noqa: F401  (a fixture for every test file)
from tests.support.slow import mark_server_slow
from tests.support.spark_session import spark  # noqa: F401  (a fixture for every test file)

# The tests run from the checkout: unnamed landing, queries and storage mean its example data
# (as under `make run`), here and in the subprocesses the tests start.
os.environ.setdefault(settings.DEV.name, "1")

# The tests check what is written, not that it survives a power cut: their temporary folders
# (tmp_path, and TMPDIR for the subprocesses they start) go to a memory-backed /dev/shm when it
# has room, where an fsync costs nothing. Each atomic write and each commit of Dagster's SQLite
# run history fsyncs; the end-to-end files took about a quarter less time there
# (benchmarks/README.md, "The test suite"). A TMPDIR the caller set is kept.
SHARED_MEMORY = Path("/dev/shm")
SHARED_MEMORY_FREE = 8 * 1024**3  # less (a container's 64 MB /dev/shm, say): the disk's /tmp


def _memory_backed_tmpdir() -> None:
    if "TMPDIR" in os.environ or not SHARED_MEMORY.is_dir():
        return
    try:
        if shutil.disk_usage(SHARED_MEMORY).free < SHARED_MEMORY_FREE:
            return
        folder = SHARED_MEMORY / f"evaluation-pipeline-tests-{os.getuid()}"
        folder.mkdir(exist_ok=True)
        # Others may pass through, not list: the PostgreSQL server's user reaches its own
        # folder inside (tests/support/postgres_server.py).
        folder.chmod(0o711)
    except OSError:
        return
    os.environ["TMPDIR"] = str(folder)
    tempfile.tempdir = None  # read TMPDIR again


_memory_backed_tmpdir()

# The test files that take longest, longest first (their times in benchmarks/README.md, "The
# test suite"): `make test` runs whole files on two workers in collection order (`--dist
# loadfile --no-loadscope-reorder`), so these start first, the other slow files next, and the
# many short unit files fill in at the end, instead of a long file starting last while the
# other worker has nothing left to do.
FIRST = (
    "tests/pipeline/slow/test_recovery.py",
    "tests/docs/slow/test_blocks.py",
    "tests/deploy/slow/test_postgres_instance.py",
    "tests/deploy/slow/test_make_ui.py",
    "tests/pipeline/slow/test_spark.py",
    "tests/pipeline/slow/test_alert_outage.py",
    "tests/pipeline/slow/test_backfill_window.py",
    "tests/pipeline/slow/test_recovery_in_process.py",
    "tests/pipeline/slow/test_storage_switch.py",
    "tests/unit/engines/spark/slow/test_engine.py",
    "tests/deploy/slow/test_dagster_ui.py",
)


def pytest_itemcollected(item):
    # Before any pytest_collection_modifyitems, so before -m deselects.
    mark_server_slow(item)


@pytest.hookimpl(trylast=True)  # after the slow folders have marked their items
def pytest_collection_modifyitems(items):
    """The files of FIRST in its order, then every other slow test, then the rest; each group
    in its collection order."""
    def rank(item) -> tuple[int, int]:
        path = item.nodeid.split("::")[0]
        if path in FIRST:
            return 0, FIRST.index(path)
        return (1 if item.get_closest_marker("slow") else 2), 0

    items.sort(key=rank)  # stable: a file's tests stay together and in order


@pytest.fixture
def conformance_dir() -> Path:
    if not CONFORMANCE.is_dir():
        pytest.skip(f"trec_eval {OUTSIDE_THE_CHECKOUT} at {CONFORMANCE} (../shared is absent)")
    return CONFORMANCE


@pytest.fixture(autouse=True)
def _no_stale_dagster_instance():
    """Dagster keeps the definitions-state storage of the instance last entered in a context
    variable. Instances whose lifetimes overlap across fixtures (a module's and a test's) can
    leave it holding the storage of one already disposed, and a later test that resolves
    definitions then fails on a dead reference. Each test starts without one."""
    from dagster._core.storage.defs_state import base

    storage = base._current_storage.get()
    if storage is not None and getattr(storage, "_instance_weakref", None) is not None and (
            storage._instance_weakref() is None):
        base._current_storage.set(None)
    yield
