"""Atomic outputs: a failed or killed write leaves the earlier files byte-identical and readable,
and a rerun completes them. Same inputs in any row order give byte-identical per-query files."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import polars as pl
import pytest

from evaluation_pipeline.cli.main import main
from evaluation_pipeline.io import atomic
from tests.support.paths import EXAMPLES

JUDGMENTS = EXAMPLES / "landing/judgments/maint-v2.csv"
POOL = EXAMPLES / "landing/pools/pool-2026-11-28"


def score_into(out, judgments=JUDGMENTS, run=POOL) -> int:
    return main(["score", "--judgments", str(judgments), "--run", str(run), "--out", str(out)])


def snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_injected_failure_mid_write_keeps_previous_outputs(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    assert score_into(out) == 0
    before = snapshot(out)

    real_write = pl.DataFrame.write_parquet

    def write_half_then_fail(self, file, **kwargs):
        real_write(self, file, **kwargs)
        with open(file, "r+b") as handle:  # a torn file, as a crash would leave it
            handle.truncate(os.path.getsize(file) // 2)
        raise OSError("disk went away")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", write_half_then_fail)
    capsys.readouterr()
    assert score_into(out, judgments=EXAMPLES / "landing/judgments/maint-v1.csv") == 1
    # The file is named where it belongs, not in the staging folder it was written in. The
    # whole line is held: its form is the one docs/reliability.md gives, and nothing else is said.
    assert capsys.readouterr().err == (
        f"ndcg-eval: error: could not write {out / 'per_query.parquet'}: disk went away\n")
    assert snapshot(out) == before  # no temporary file left, targets untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # nor a staging folder
    pl.read_parquet(out / "per_query.parquet")

    monkeypatch.undo()
    assert score_into(out, judgments=EXAMPLES / "landing/judgments/maint-v1.csv") == 0
    rows = pl.read_parquet(out / "per_query.parquet")
    assert rows["judgment_version"].unique().to_list() == ["maint-v1"]


def test_killed_writer_never_leaves_a_torn_file(tmp_path):
    """SIGKILL a process that rewrites a large file in a loop; the target is always whole."""
    target = tmp_path / "per_query.parquet"
    writer = textwrap.dedent(
        f"""
        import sys
        import numpy as np, polars as pl
        from evaluation_pipeline.io.atomic import write_parquet
        print("ready", flush=True)
        i = 0
        while True:
            i += 1
            frame = pl.DataFrame({{"round": np.full(400_000, i), "x": np.arange(400_000) * i}})
            write_parquet(frame, {str(target)!r})
        """
    )
    for delay in (0.05, 0.2, 0.35, 0.6):
        process = subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE,
                                   text=True)
        assert process.stdout.readline().strip() == "ready"  # imports done: writing from now on
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
        if target.exists():
            frame = pl.read_parquet(target)  # whole and readable, one round only
            assert frame.height == 400_000
            assert frame["round"].n_unique() == 1
    assert target.exists()
    leftovers = [p for p in tmp_path.iterdir() if p.name != target.name]
    # A kill can strand a temporary file, never a torn target; it is hidden and named as such.
    assert all(p.name.startswith(".per_query.parquet.") and p.suffix == ".tmp" for p in leftovers)


def test_outputs_are_byte_identical_across_input_row_orders(tmp_path):
    shuffled_pool = tmp_path / "pool-2026-11-28"
    shuffled_pool.mkdir()
    for run in POOL.glob("*.parquet"):
        pl.read_parquet(run).sample(fraction=1.0, shuffle=True, seed=11).write_parquet(
            shuffled_pool / run.name)
    shuffled_judgments = tmp_path / "maint-v2.csv"
    pl.read_csv(JUDGMENTS, infer_schema=False).sample(fraction=1.0, shuffle=True, seed=5).write_csv(
        shuffled_judgments)

    assert score_into(tmp_path / "a") == 0
    assert score_into(tmp_path / "b", shuffled_judgments, shuffled_pool) == 0
    a, b = snapshot(tmp_path / "a"), snapshot(tmp_path / "b")
    assert a["per_query.parquet"] == b["per_query.parquet"]
    assert a["summary.json"] == b["summary.json"]


def test_atomic_write_cleans_up_its_temporary_file_on_error(tmp_path):
    def fail(tmp):
        tmp.write_text("partial")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        atomic.atomic_write(tmp_path / "x.json", fail)
    assert list(tmp_path.iterdir()) == []
