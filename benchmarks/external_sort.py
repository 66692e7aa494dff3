"""Time the ways to sort an unsorted pool folder into key order under a memory budget.

    python benchmarks/external_sort.py --queries 100k [--methods duckdb,polars,kway,ingest]
        [--memory-limit 2GB] [--spill DIR]

Data: ``benchmarks/unsorted_pool.py`` (3 rankers x 100 candidates, one shuffled Parquet file
per ranker), generated on first use. Each method runs in its own process and writes one Parquet
file sorted by (ranker, query_id, doc_id); printed per method: wall time, CPU time and the
peak RSS of its process (``os.wait4``) and the machine's load average, as a markdown table.

- ``duckdb``: ``COPY (... ORDER BY ...) TO`` with ``memory_limit`` and ``temp_directory``.
- ``polars``: ``scan_parquet(...).sort(...).sink_parquet(...)`` on the streaming engine.
- ``kway``: sorted runs of a fixed number of rows written to the spill folder, merged k ways
  a slice of every run at a time.
- ``ingest``: ``evaluation_pipeline.ingest.publish.publish_pool``, the whole ingest
  (checks, sort, content hash, atomic publish).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from generate import DATA, size_rows
from run import PYTHON
from unsorted_pool import generate, pool_folder

KEYS = ["ranker", "query_id", "doc_id"]
METHODS = ("duckdb", "polars", "kway", "ingest")


def child(method: str, folder: Path, out: Path, limit: int, spill: Path) -> None:
    from evaluation_pipeline.io.budget import Budget

    files = sorted(str(p) for p in folder.glob("*.parquet"))
    budget = Budget.of(limit, spill)
    if method == "duckdb":
        from evaluation_pipeline.ingest.external_sort import sort_parquet

        sort_parquet(files, out, KEYS, budget=budget)
    elif method == "polars":
        import polars as pl

        pl.scan_parquet(files).sort(KEYS).sink_parquet(out, compression="zstd")
    elif method == "kway":
        kway(files, out, limit, spill)
    elif method == "ingest":
        from evaluation_pipeline.ingest.publish import publish_pool

        publish_pool(files, out, pool="bench-pool", budget=budget,
                     log=lambda line: print(line, file=sys.stderr, flush=True))


def kway(files: list[str], out: Path, limit: int, spill: Path) -> None:
    """Sorted runs sized to a quarter of the budget, then a merge holding a slice of each."""
    import polars as pl
    import pyarrow.parquet as pq

    run_rows = max(limit // 4 // 120, 100_000)  # ~120 bytes a row once in polars, sorted
    runs, pending, count = [], [], 0

    def flush() -> None:
        nonlocal pending, count
        path = spill / f"run-{len(runs)}.parquet"
        pl.concat(pending).sort(KEYS).write_parquet(path, row_group_size=50_000)
        runs.append(pq.ParquetFile(path))
        pending, count = [], 0

    for name in files:
        for batch in pq.ParquetFile(name).iter_batches(batch_size=200_000):
            pending.append(pl.from_arrow(batch))
            count += batch.num_rows
            if count >= run_rows:
                flush()
    if pending:
        flush()
    groups = [iter(range(run.num_row_groups)) for run in runs]
    heads = [pl.from_arrow(run.read_row_group(next(g))) for run, g in zip(runs, groups)]
    writer = None
    while heads:
        # Every run's rows up to the smallest of the runs' last keys can be written now.
        bound = min(h.select(KEYS).row(-1) for h in heads)
        below = pl.lit(False)
        for depth in range(len(KEYS) - 1, -1, -1):
            equal = pl.col(KEYS[depth]) == bound[depth]
            below = (pl.col(KEYS[depth]) < bound[depth]) | (
                equal & below if depth < len(KEYS) - 1 else equal)
        taken = [h.filter(below) for h in heads]
        merged = pl.concat(taken).sort(KEYS).to_arrow()
        writer = writer or pq.ParquetWriter(out, merged.schema, compression="zstd")
        writer.write_table(merged)
        rest = []
        for head, take, run, g in zip(heads, taken, runs, groups):
            head = head.slice(take.height)
            if head.height == 0:
                number = next(g, None)
                if number is None:
                    continue
                head = pl.from_arrow(run.read_row_group(number))
            rest.append((head, run, g))
        heads = [r[0] for r in rest]
        runs = [r[1] for r in rest]
        groups = [r[2] for r in rest]
    writer.close()


def measured(argv: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS GB) of a child process. CPU time (user + system) is the figure
    that a shared, loaded machine disturbs least."""
    started = time.perf_counter()
    process = subprocess.Popen(argv)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{argv[2:5]} failed with {os.waitstatus_to_exitcode(status)}")
    return (time.perf_counter() - started, usage.ru_utime + usage.ru_stime,
            usage.ru_maxrss / 1024 / 1024)  # ru_maxrss is in KiB on Linux


def main(argv: list[str] | None = None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--child":
        method, folder, out, limit, spill = sys.argv[2:7]
        child(method, Path(folder), Path(out), int(limit), Path(spill))
        return 0
    from evaluation_pipeline.io.budget import parse_memory_limit

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=size_rows, action="append", required=True)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--memory-limit", default="2GB")
    parser.add_argument("--spill", type=Path, default=None, help="default: a temporary folder")
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args(argv)
    limit = parse_memory_limit(args.memory_limit)
    print("| rows | method | wall (s) | CPU (s) | peak RSS (GB) | load (1 min) |\n"
          "|---|---|---|---|---|---|")
    for queries in args.queries:
        folder = pool_folder(queries * 300, args.data)
        if not folder.exists():
            generate(queries, 3, 100, 7, args.data)
        for method in args.methods.split(","):
            with tempfile.TemporaryDirectory(dir=args.spill, prefix="sort-") as scratch:
                spill = Path(scratch) / "spill"
                spill.mkdir()
                out = Path(scratch) / "sorted.parquet"
                wall, cpu, peak = measured([PYTHON, __file__, "--child", method, str(folder),
                                            str(out), str(limit), str(spill)])
                load = os.getloadavg()[0]
                print(f"| {queries * 300:,} | {method} | {wall:.1f} | {cpu:.1f} | {peak:.2f} "
                      f"| {load:.1f} |", flush=True)
                shutil.rmtree(spill, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
