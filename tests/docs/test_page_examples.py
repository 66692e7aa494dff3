"""The examples of docs/python.md (a notebook's cells) and docs/dagster.md (the scaffolded
defs.yaml, two instances in one code location) run and print what the pages show, on the
bundled data alone, without `make run` (the blocks test runs them again after it, in the order
of the pages)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.doc_blocks import REPO, output_matches, shell_blocks

PAGES = {"docs/python.md": 5, "docs/dagster.md": 2}  # page: its examples
BLOCKS = [block for page in PAGES for block in shell_blocks(page) if block.runs]


@pytest.mark.parametrize("page", PAGES)
def test_the_page_has_its_examples_with_their_output(page):
    blocks = [block for block in BLOCKS if block.path == page]
    assert len(blocks) == PAGES[page] and all(block.output for block in blocks)


@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.where())
def test_each_example_prints_what_the_page_shows(block, tmp_path: Path):
    (tmp_path / "examples").symlink_to(REPO / "examples")
    environment = {k: v for k, v in os.environ.items() if not k.startswith("NDCG_EVAL_")}
    environment |= {"PYTHONPATH": str(REPO),
                    "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    ran = subprocess.run(["bash", "-c", block.text], cwd=tmp_path, env=environment,
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    assert output_matches(block.output, ran.stdout), ran.stdout
