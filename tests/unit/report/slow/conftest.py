"""Slow: report.html opened in headless Chromium (its first screen, its scripts)."""

from tests.support.slow import mark_folder_slow

pytest_collection_modifyitems = mark_folder_slow(__file__)
