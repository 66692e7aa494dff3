"""An engine that reads files alone scores in-memory tables from a temporary folder: that folder
is held while it is read, so another run's sweep of the temporary folder (the CLI and the
pipeline remove abandoned scratch folders there) leaves it alone."""

import os
import time
from pathlib import Path

from evaluation_pipeline.api import evaluate, functions
from evaluation_pipeline.io import leftovers

JUDGMENTS = {"q1": {"a": 2, "b": 0}, "q2": {"c": 1}}
RUN = {"q1": {"a": 2.0, "b": 1.0}, "q2": {"c": 1.0}}


def test_a_sweep_while_the_tables_are_staged_removes_nothing(monkeypatch):
    swept = []

    class Swept(functions.Staging):
        def __init__(self, folder):
            super().__init__(folder)
            old = time.time() - 3600  # old enough for a sweep to judge it
            os.utime(folder, (old, old))
            swept.append((folder, leftovers.sweep_scratch(folder.parent)))

    monkeypatch.setattr(functions, "Staging", Swept)
    result = evaluate(JUDGMENTS, RUN, engine="streaming")
    (folder, removed), = swept
    assert folder not in removed and result.per_query.height > 0


def test_a_report_held_in_memory_outlives_a_sweep():
    # Evaluation.report() builds its files in a temporary folder that lives as long as the
    # object: a sweep by another run meanwhile must not take them.
    report = evaluate(JUDGMENTS, RUN).report()
    where = Path(report._folder.name)
    old = time.time() - 3600
    os.utime(where, (old, old))
    assert where not in leftovers.sweep_scratch(where.parent) and where.is_dir()
    assert report.aggregates.height > 0 and (where / "report.json").exists()
