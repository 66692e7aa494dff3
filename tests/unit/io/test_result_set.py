"""Result folders as sets: built beside --out and swapped in whole, never mixed with an earlier
result; leftovers of killed writes removed by the next run; refusals before anything is
written; permissions of normal file creation; the queries table's hash in the lineage."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluation_pipeline import settings
from evaluation_pipeline.cli.main import main
from evaluation_pipeline.io import leftovers, result_set
from evaluation_pipeline.spec import MAX_CUTOFF
from tests.support.paths import EXAMPLES, REPO
from tests.support.refusals import assert_names

JUDGMENTS = EXAMPLES / "landing/judgments/maint-v2.csv"
POOL = EXAMPLES / "landing/pools/pool-2026-11-28"
QUERIES = EXAMPLES / "queries.csv"
# A report with few resamples and one regression per pair: its traces/ folder is small.
FAST_REPORT = ["--report", "--bootstrap", "200", "--regressions", "1"]


def score(out, *extra: str, judgments=JUDGMENTS, run=POOL) -> int:
    return main(["score", "--judgments", str(judgments), "--run", str(run), "--out", str(out),
                 *extra])


def tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden ones too) by relative name."""
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def aged(path: Path, seconds: float = 60) -> Path:
    """``path`` made older, as a killed run's leftover is by the time the next run starts."""
    then = time.time() - seconds
    os.utime(path, (then, then))
    return path


# -- atomic result sets ---------------------------------------------------------------------------


def test_rescoring_a_reported_folder_leaves_none_of_the_old_report(tmp_path, capsys):
    out = tmp_path / "out"
    assert score(out, "--queries", str(QUERIES), *FAST_REPORT) == 0
    assert {"report.json", "report.html", "aggregates.parquet"} <= set(tree(out))
    assert any(name.startswith("traces/") for name in tree(out))

    assert score(out, "--cutoff", "3") == 0
    assert sorted(tree(out)) == ["per_query.parquet", "summary.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no staging, no previous
    # The same result again: an identical replacement.
    before = tree(out)
    assert score(out, "--cutoff", "3") == 0
    assert tree(out) == before


def test_a_failure_between_files_keeps_the_earlier_complete_result(tmp_path, monkeypatch,
                                                                    capsys):
    out = tmp_path / "out"
    assert score(out, "--cutoff", "3") == 0
    before = tree(out)
    # per_query.parquet and summary.json of the new result are written, then report.html fails.
    monkeypatch.setenv(settings.FAIL_WRITE.name, "report.html")
    capsys.readouterr()
    assert score(out, *FAST_REPORT) == 1
    err = capsys.readouterr().err
    # docs/reliability.md gives this line's form, "could not write <file>: <reason>": kept whole.
    assert f"could not write {out / 'report.html'}: {os.strerror(errno.ENOSPC)}" in err
    assert tree(out) == before  # no K=5,10 rows beside the K=3 summary, no report
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_killed_score_leaves_the_earlier_result_and_the_rerun_cleans_up(tmp_path):
    out = tmp_path / "out"
    assert score(out, "--cutoff", "3") == 0
    before = tree(out)
    command = [sys.executable, "-m", "evaluation_pipeline.cli.main", "score", "--judgments",
               str(JUDGMENTS), "--run", str(POOL), "--out", str(out), "--bootstrap", "20000",
               "--report"]
    process = subprocess.Popen(command, env=os.environ | {"PYTHONPATH": str(REPO)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    # Killed once the new per-query rows are in its staging folder (the report is computed).
    while not list(tmp_path.glob(".out.staging-*/per_query.parquet")):
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert tree(out) == before
    left = [aged(p) for p in tmp_path.glob(".out.staging-*")]
    assert left  # what the kill left beside --out ...
    assert score(out, "--cutoff", "5") == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # ... the next run removed


def test_a_swap_killed_between_its_renames_is_put_back(tmp_path, capsys):
    out = tmp_path / "out"
    assert score(out, "--cutoff", "3") == 0
    before = tree(out)
    # The earlier result renamed aside, the new one not yet renamed in.
    aside = aged(out.rename(tmp_path / ".out.previous-0123456789ab"))
    (tmp_path / ".out.staging-0123456789ab").mkdir()  # and the staging folder beside it
    aged(tmp_path / ".out.staging-0123456789ab")
    result_set.recover(out)
    assert tree(out) == before and sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert not aside.exists()


def test_report_into_the_results_folder_keeps_the_scores_summary(tmp_path, capsys):
    out = tmp_path / "out"
    assert score(out, "--cutoff", "3") == 0
    summary = (out / "summary.json").read_bytes()
    assert main(["report", str(out), "--bootstrap", "200"]) == 0
    assert (out / "summary.json").read_bytes() == summary
    assert {"report.json", "per_query.parquet", "summary.json"} <= set(tree(out))
    # Elsewhere, a report replaces an earlier score's result whole: no stale summary.
    other = tmp_path / "other"
    assert score(other, "--cutoff", "5") == 0
    assert main(["report", str(out), "--out", str(other), "--bootstrap", "200"]) == 0
    assert "summary.json" not in tree(other)


# -- refusals: a clear message and nothing written -----------------------------------------------


def _refused(capsys, argv_out, *extra: str) -> str:
    capsys.readouterr()
    assert score(argv_out, *extra) == 2
    return capsys.readouterr().err


def test_out_holding_other_files_is_refused_untouched(tmp_path, capsys):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert_names(_refused(capsys, out), str(out), "--out", "notes.txt")
    assert tree(out) == {"notes.txt": b"mine"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine"]


def test_out_that_is_a_file_is_refused(tmp_path, capsys):
    out = tmp_path / "out"
    out.write_text("x")
    err = _refused(capsys, out)
    assert err.startswith("ndcg-eval: error: ")  # the CLI's error line, as docs/cli.md shows it
    assert_names(err, str(out), "--out")
    assert out.read_text() == "x" and sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_out_in_the_run_folder_is_refused(tmp_path, capsys):
    pool = tmp_path / "pool"
    pool.mkdir()
    for run in POOL.iterdir():
        (pool / run.name).write_bytes(run.read_bytes())
    before = tree(pool)
    # Each refusal leads with the folder refused (a prefix of another path here), then the input.
    for out in (pool, pool / "res"):
        capsys.readouterr()
        assert score(out, run=pool) == 2
        assert_names(capsys.readouterr().err, f"{out}: --out", str(pool))
        assert tree(pool) == before
    # A folder holding an input would be deleted by its replacement.
    capsys.readouterr()
    assert score(tmp_path, run=pool) == 2
    assert_names(capsys.readouterr().err, f"{tmp_path}: --out", str(pool))


def test_a_cutoff_above_the_maximum_is_refused_before_any_allocation(tmp_path, capsys):
    err = _refused(capsys, tmp_path / "out", "--cutoff", "100000000")
    assert_names(err, "'cutoffs'", "100,000,000", f"{MAX_CUTOFF:,}")  # the value, the bound
    assert not (tmp_path / "out").exists()
    with pytest.raises(SystemExit) as exit_info:  # argparse: not an int, no traceback
        score(tmp_path / "out", "--cutoff", "1e11")
    assert exit_info.value.code == 2
    assert_names(capsys.readouterr().err, "--cutoff", "'1e11'")


# -- permissions ----------------------------------------------------------------------------------


@pytest.mark.parametrize("umask, file_mode, folder_mode", [(0o022, 0o644, 0o755),
                                                           (0o077, 0o600, 0o700)])
def test_outputs_have_the_permissions_of_the_umask(tmp_path, capsys, umask, file_mode,
                                                   folder_mode):
    old = os.umask(umask)
    try:
        assert score(tmp_path / "out", "--cutoff", "3") == 0
    finally:
        os.umask(old)
    out = tmp_path / "out"
    assert out.stat().st_mode & 0o777 == folder_mode
    for name in ("per_query.parquet", "summary.json"):
        assert (out / name).stat().st_mode & 0o777 == file_mode


# -- leftovers ------------------------------------------------------------------------------------


def test_abandoned_leftovers_are_swept_and_held_ones_kept(tmp_path):
    tmp = tmp_path / ".per_query.parquet.k3x_9a.tmp"
    tmp.write_bytes(b"half")
    aged(tmp)
    staging = tmp_path / ".out.staging-0123456789ab"
    staging.mkdir()
    aged(staging)
    held = tmp_path / ".ndcg-stream-held"
    held.mkdir()
    aged(held)
    mine = tmp_path / "my.tmp"  # not hidden: a name of the user's
    mine.write_text("x")
    aged(mine)
    fd = leftovers.hold(held)
    try:
        removed = leftovers.sweep([tmp_path])
    finally:
        os.close(fd)
    assert sorted(p.name for p in removed) == [staging.name, tmp.name]
    assert held.exists() and mine.exists()
    assert leftovers.sweep([tmp_path]) == [held]  # released: a leftover now


def test_a_leftover_of_a_writer_killed_a_moment_ago_is_swept(tmp_path):
    """The next run starts within a second of a kill -9: a fresh unheld entry is asked again
    once it is old enough to have been locked by a live creator, and then removed."""
    tmp = tmp_path / ".per_query.parquet.0123456789ab.tmp"
    tmp.write_bytes(b"half")  # just written, by a writer now gone
    started = time.monotonic()
    assert leftovers.sweep([tmp_path]) == [tmp]
    assert not tmp.exists()
    assert time.monotonic() - started >= leftovers.MIN_AGE_SECONDS * 0.9


def test_a_fresh_entry_its_creator_locks_in_time_is_kept(tmp_path):
    """Between making the name and locking it, a writer's entry is unheld: the sweep's second
    look finds it held and keeps it."""
    import threading

    tmp = tmp_path / ".report.json.0123456789ab.tmp"
    tmp.write_bytes(b"")
    holding: list[int] = []
    locker = threading.Timer(0.2, lambda: holding.append(leftovers.hold(tmp)))
    locker.start()
    try:
        assert leftovers.sweep([tmp_path]) == []
        assert tmp.exists()
    finally:
        locker.join()
        os.close(holding[0])


def test_an_abandoned_folder_is_removed_whole_and_listed_once(tmp_path):
    staging = tmp_path / ".out.staging-0123456789ab"
    (staging / "nested").mkdir(parents=True)
    inner = staging / ".per_query.parquet.0123456789ab.tmp"
    inner.write_bytes(b"")
    aged(inner)
    aged(staging)
    assert leftovers.sweep([tmp_path], recursive=True) == [staging]
    assert not staging.exists()


def test_the_pipeline_storage_is_cleaned_before_a_run(tmp_path):
    from evaluation_pipeline.orchestration.resources import EvaluationStorage

    root = tmp_path / "storage"
    folder = root / "reports" / "pool" / "v1" / "spec"
    folder.mkdir(parents=True)
    (folder / "report.json").write_text("{}")
    # Killed between the two renames of a swap, and mid-write elsewhere.
    aged(folder.rename(folder.parent / ".spec.previous-0123456789ab"))
    scratch = root / ".staging" / ".ndcg-eval-0123456789ab"
    scratch.mkdir(parents=True)
    aged(scratch)
    tmp = root / "scores" / ".per_query.parquet.abc123.tmp"
    tmp.parent.mkdir()
    tmp.write_bytes(b"")
    aged(tmp)
    EvaluationStorage(base=str(root)).clean_leftovers()
    assert (folder / "report.json").read_text() == "{}"
    assert not scratch.exists() and not tmp.exists()
    assert [p.name for p in folder.parent.iterdir()] == ["spec"]


# -- lineage --------------------------------------------------------------------------------------


def test_report_lineage_records_the_queries_file_hash(tmp_path, capsys):
    out = tmp_path / "out"
    assert score(out, "--queries", str(QUERIES), "--report", "--bootstrap", "200",
                 "--cutoff", "5") == 0
    lineage = json.loads((out / "report.json").read_text())["lineage"]
    assert lineage["queries_sha256"] == hashlib.sha256(QUERIES.read_bytes()).hexdigest()
    assert main(["report", str(out), "--bootstrap", "200"]) == 0  # no queries: no hash
    assert "queries_sha256" not in json.loads((out / "report.json").read_text())["lineage"]
