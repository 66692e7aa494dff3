"""docs/python.md's notebook example runs and prints what the page shows, on the bundled data
alone (the blocks test runs it again after `make run`, in the order of the pages)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.doc_blocks import REPO, output_matches, shell_blocks

BLOCKS = [block for block in shell_blocks("docs/python.md") if block.runs]


def test_the_page_has_its_examples_with_their_output():
    assert len(BLOCKS) == 3 and all(block.output for block in BLOCKS)


@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.where())
def test_each_example_prints_what_the_page_shows(block, tmp_path: Path):
    (tmp_path / "examples").symlink_to(REPO / "examples")
    environment = {**os.environ, "PYTHONPATH": str(REPO),
                   "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    environment = {k: v for k, v in environment.items() if not k.startswith("NDCG_EVAL_")}
    ran = subprocess.run(["bash", "-c", block.text], cwd=tmp_path, env=environment,
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert output_matches(block.output, ran.stdout), ran.stdout
