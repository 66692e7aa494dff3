"""Full disks on the CLI, on a real small tmpfs: a full output disk names the output (the
streaming engine's rows and its sorted copies are written beside it), a full spill folder is
named as such with its free space, and neither is a traceback or advice about memory."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from tests.support.refusals import assert_names
from tests.support.small_disk import small_disk

QUERIES, CANDIDATES = 20_000, 100  # 2M candidate rows: some 10 MB of Parquet


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    """Judgments, and one ranker's run twice: in key order and shuffled."""
    folder = tmp_path_factory.mktemp("inputs")
    rng = np.random.default_rng(8)
    q = np.repeat(np.arange(QUERIES), CANDIDATES)
    d = np.tile(np.arange(CANDIDATES), QUERIES)
    rows = pl.DataFrame({
        "query_id": pl.Series([f"q{i:06d}" for i in range(QUERIES)])[q],
        "doc_id": pl.Series([f"doc-{i:03d}" for i in range(CANDIDATES)])[d],
        "score": np.round(rng.normal(size=q.size), 2), "ranker": "bm25"})
    paths = {"sorted": folder / "sorted", "shuffled": folder / "shuffled"}
    for name, frame in (("sorted", rows), ("shuffled", rows.sample(fraction=1.0, seed=1,
                                                                    shuffle=True))):
        paths[name].mkdir()
        frame.write_parquet(paths[name] / "bm25.parquet")
    judged = rows.select("query_id", "doc_id").sample(fraction=0.3, seed=5).sort(
        "query_id", "doc_id")
    paths["judgments"] = folder / "judgments.parquet"
    judged.with_columns(pl.Series("grade", rng.integers(0, 4, judged.height)),
                        pl.lit("graded").alias("grade_status")).write_parquet(paths["judgments"])
    return paths


def _score(inputs, run: str, out: Path, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evaluation_pipeline", "score", "--engine", "streaming",
         "--judgments", str(inputs["judgments"]), "--run", str(inputs[run]), "--out", str(out),
         *options], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("run, size", [("sorted", "1m"), ("shuffled", "1m"), ("shuffled", "3m")])
def test_a_full_output_disk_names_the_output(inputs, tmp_path, run, size):
    with small_disk(tmp_path / "disk", size) as disk:
        done = _score(inputs, run, disk / "out", "--memory-limit", "300MB")
        assert done.returncode == 1, done.stderr
        # docs/reliability.md quotes this line (its table of failures): kept whole.
        assert f"could not write {disk / 'out' / 'per_query.parquet'}: No space left on device" \
            in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and "memory budget" not in done.stderr
        assert ".ndcg-stream-" not in done.stderr and ".staging" not in done.stderr
        assert list(disk.iterdir()) == []  # nothing half-written, no scratch left


def test_a_full_spill_folder_is_named_with_its_free_space(inputs, tmp_path):
    out = tmp_path / "out"
    with small_disk(tmp_path / "spill", "2m") as spill:
        done = _score(inputs, "shuffled", out, "--memory-limit", "100MB", "--spill-dir",
                      str(spill))
        assert done.returncode == 1, done.stderr
        # The spill folder, the space left on it, and the option that moves it.
        said = assert_names(done.stderr, repr(str(spill)), "--spill-dir")
        assert re.search(r"\b[\d.]+(B|MB|GB) free\b", said), said
        assert list(spill.iterdir()) == []
    assert not out.exists()
