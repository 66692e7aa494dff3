"""What a sort killed mid-spill leaves in its spill folder is removed by the next run, wherever
that folder is: the storage's .spill, NDCG_EVAL_SPILL_DIR / --spill-dir, or the system's
temporary folder; a live run's scratch is kept."""

from __future__ import annotations

import argparse

from evaluation_pipeline.cli.options import memory_budget
from evaluation_pipeline.io import leftovers
from tests.support.spill import killed_in, spilling_writer


def test_a_killed_sorts_scratch_in_a_custom_spill_folder_is_swept(tmp_path):
    spill = tmp_path / "my-spill"
    left = killed_in(spill)
    assert any(left.rglob("duckdb_temp_*"))
    assert leftovers.sweep_scratch(spill) == [left]
    assert list(spill.iterdir()) == []


def test_a_live_sorts_scratch_is_kept(tmp_path):
    spill = tmp_path / "spill"
    process = spilling_writer(spill)
    try:
        assert leftovers.sweep_scratch(spill) == []
        assert len(list(spill.iterdir())) == 1
    finally:
        process.kill()
        process.wait()


def test_the_cli_sweeps_its_spill_folder_before_it_starts(tmp_path):
    spill = tmp_path / "cli-spill"
    left = killed_in(spill)
    args = argparse.Namespace(memory_limit="300MB", spill_dir=str(spill))
    assert memory_budget(args).spill_dir == spill
    assert not left.exists()


def test_only_this_projects_scratch_names_are_touched(tmp_path):
    spill = tmp_path / "shared-tmp"
    spill.mkdir()
    (spill / "someone-elses").mkdir()
    (spill / "ndcg-eval-notes.txt").write_text("a file, not a scratch folder")
    assert leftovers.sweep_scratch(spill) == []
    assert sorted(p.name for p in spill.iterdir()) == ["ndcg-eval-notes.txt", "someone-elses"]
