"""A CSV run file many times the memory budget is ingested a part at a time. Its check pass,
where the whole file used to sit in memory as text, cells and conversions, grows the process by
less than half the budget over what the check of the same rows landed as contract-typed Parquet
(which needs no conversion) grows it, and its whole ingest peaks less than the budget over
that Parquet's. Each ingest runs in a fresh process, whose peak resident size (VmHWM) is its
own."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import polars as pl
import pytest

from evaluation_pipeline.ingest.external_sort import parse_memory_limit

BUDGET = "100MB"  # DuckDB's half of it, 50 MB, sorts the 1M rows (64 MB: too little to sort them)
ROWS = 1_000_000  # one ranker's candidates, each with a 500-byte snippet: some 525 MB of CSV


@pytest.fixture(scope="module")
def landed(tmp_path_factory):
    """One ranker's run as CSV (with a snippet column, which a pool does not publish) and the
    same published columns as contract-typed Parquet."""
    folder = tmp_path_factory.mktemp("landing")
    rng = np.random.default_rng(11)
    q = rng.integers(0, ROWS // 100, ROWS)
    run = pl.DataFrame({
        "query_id": pl.Series(q).cast(pl.String).str.zfill(6),
        "doc_id": "doc-" + pl.Series(np.arange(ROWS)).cast(pl.String),
        "score": np.round(rng.normal(size=ROWS), 3),
        "snippet": pl.Series(rng.integers(0, 10**6, ROWS)).cast(pl.String).str.pad_end(500, "x"),
    })
    for kind in ("csv", "parquet"):
        (folder / kind / "pool-m").mkdir(parents=True)
    run.write_csv(folder / "csv" / "pool-m" / "bm25.csv")
    run.drop("snippet").write_parquet(folder / "parquet" / "pool-m" / "bm25.parquet")
    return folder


def _ingest(folder, tmp_path) -> dict:
    """(the process's resident size before the ingest, its peak at the end of the check pass,
    its peak at the end) in bytes, and the published pool's hash, from a fresh process."""
    code = textwrap.dedent(f"""
        import json
        from evaluation_pipeline.io.budget import Budget
        from evaluation_pipeline.ingest.publish import publish_pool

        def peak():
            with open("/proc/self/status") as status:
                return int(next(l for l in status if l.startswith("VmHWM:")).split()[1]) * 1024

        laps = []
        start = peak()
        published = publish_pool({str(folder)!r}, {str(tmp_path / "pool.parquet")!r},
                                 budget=Budget.of({BUDGET!r}, {str(tmp_path)!r}),
                                 log=lambda line: laps.append(peak()))
        with open({str(tmp_path / "figures.json")!r}, "w") as figures:
            json.dump({{"start": start, "checked": laps[0], "end": peak(),
                       "sha256": published.sha256, "rows": published.rows}}, figures)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr
    return json.loads((tmp_path / "figures.json").read_text())


def test_a_csv_many_times_the_budget_is_ingested_within_it(landed, tmp_path):
    budget = parse_memory_limit(BUDGET)
    csv = landed / "csv" / "pool-m"
    assert (csv / "bm25.csv").stat().st_size > 5 * budget
    (tmp_path / "csv").mkdir()
    (tmp_path / "parquet").mkdir()
    from_csv = _ingest(csv, tmp_path / "csv")
    typed = _ingest(landed / "parquet" / "pool-m", tmp_path / "parquet")
    assert from_csv["rows"] == ROWS and from_csv["sha256"] == typed["sha256"]
    # The check pass of any file loads polars' readers and a writer's thread (some 90 MB here);
    # the CSV's parts add a few MB to it, where reading the file whole added over 1 GB.
    checked = [figures["checked"] - figures["start"] for figures in (from_csv, typed)]
    assert checked[0] - checked[1] < budget / 2, (
        f"the check pass grew the process by {checked[0] / 1e6:.0f} MB for the CSV, "
        f"{checked[1] / 1e6:.0f} MB for the typed Parquet")
    over = from_csv["end"] - typed["end"]
    assert over < budget, (f"the CSV's ingest peaked {over / 1e6:.0f} MB over the typed "
                           f"Parquet's ({from_csv['end'] / 1e6:.0f} MB)")
