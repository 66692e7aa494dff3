"""Slow: ingest and report numbers on a Spark session, against the local path."""

from tests.support.slow import mark_folder_slow

pytest_collection_modifyitems = mark_folder_slow(__file__)
