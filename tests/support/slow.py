"""Slow is a property of a folder: a ``slow/`` folder's conftest marks every test under it.

    pytest_collection_modifyitems = mark_folder_slow(__file__)

And of a server: a test that uses a fixture starting one (``SERVER_FIXTURES``) is slow wherever
it is (``mark_server_slow``, called by tests/conftest.py for each test collected).
"""

from __future__ import annotations

from pathlib import Path

import pytest

# The limit of one slow test, where it declares none (pyproject.toml's `timeout` is the other
# tests'): above the subprocess and server timeouts these tests set themselves, below CI's own.
SLOW_TEST_SECONDS = 1800


# S3's API (moto), PostgreSQL, a Spark session's JVM: `make test-all`'s, not `make test`'s.
SERVER_FIXTURES = frozenset({"endpoint", "postgres_server", "spark"})


def _mark_slow(item) -> None:
    item.add_marker(pytest.mark.slow)
    if item.get_closest_marker("timeout") is None:
        item.add_marker(pytest.mark.timeout(SLOW_TEST_SECONDS))


def mark_server_slow(item) -> None:
    """Marks ``slow`` a test that uses a server's fixture, directly or through another."""
    if SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
        _mark_slow(item)


def mark_folder_slow(conftest: str):
    """A collection hook that marks ``slow`` every item under the folder of ``conftest``, and
    gives it the slow tests' time limit unless it has its own."""
    folder = Path(conftest).resolve().parent

    # First, so that the mark is there when ``-m`` deselects.
    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(items):
        for item in items:
            if folder in Path(item.path).resolve().parents:
                _mark_slow(item)

    return pytest_collection_modifyitems
