"""Slow: a pool large enough that the streaming engine's sorts spill to disk."""

from tests.support.slow import mark_folder_slow

pytest_collection_modifyitems = mark_folder_slow(__file__)
