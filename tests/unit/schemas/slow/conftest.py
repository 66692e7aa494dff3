"""Slow: the tables' rules counted on a Spark session."""

from tests.support.slow import mark_folder_slow

pytest_collection_modifyitems = mark_folder_slow(__file__)
