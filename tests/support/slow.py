"""Slow is a property of a folder: a ``slow/`` folder's conftest marks every test under it.

    pytest_collection_modifyitems = mark_folder_slow(__file__)
"""

from __future__ import annotations

from pathlib import Path

import pytest


def mark_folder_slow(conftest: str):
    """A collection hook that marks ``slow`` every item under the folder of ``conftest``."""
    folder = Path(conftest).resolve().parent

    # First, so that the mark is there when ``-m`` deselects.
    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(items):
        for item in items:
            if folder in Path(item.path).resolve().parents:
                item.add_marker(pytest.mark.slow)

    return pytest_collection_modifyitems
