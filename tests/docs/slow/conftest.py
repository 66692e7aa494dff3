"""Slow: every sh/bash block of README.md and docs/ run in order on a copy of the checkout after
`make run`."""

from tests.support.slow import mark_folder_slow

pytest_collection_modifyitems = mark_folder_slow(__file__)
