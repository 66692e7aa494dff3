"""Slow: the pipeline end to end: the main job in a subprocess (faults, Spark, object
storage), the nightly week through the assets, and sorts that spill."""

from tests.support.slow import mark_folder_slow

pytest_collection_modifyitems = mark_folder_slow(__file__)
