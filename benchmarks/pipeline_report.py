"""The pipeline report's own memory and time on large results: what the report asset does with
one evaluation's per-query file, each part's wall time, resident and peak memory.

    python benchmarks/report_data.py --queries 3_333_334 --rankers 3 --out /tmp/rep-1b
    python benchmarks/pipeline_report.py /tmp/rep-1b

3.33M queries x 3 rankers x 2 cutoffs is the 1B-row pipeline's evaluation: 20M per-query rows.
The parts, in the asset's order: the results' lineage (``evaluation.read_lineage``), the queries
table, the report's numbers (``engines.report_numbers``, local: a chunk of queries at a time),
then the report's files (``report.write_report``, the per-query file copied in). No previous
night: the 1B pipeline has one pool.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluation_pipeline import engines  # noqa: E402
from evaluation_pipeline.evaluation import read_lineage  # noqa: E402
from evaluation_pipeline.io.storage import DEFAULT_SPEC, PER_QUERY_FILE, QUERIES_FILE  # noqa: E402
from evaluation_pipeline.report import ReportConfig, write_report  # noqa: E402
from evaluation_pipeline.spec import load_spec  # noqa: E402


def memory_gb() -> tuple[float, float]:
    """This process's resident and peak resident memory (VmRSS, VmHWM), GB of 10^9 bytes."""
    with open("/proc/self/status") as status:
        fields = dict(line.split(":", 1) for line in status)
    return tuple(int(fields[name].split()[0]) * 1024 / 1e9 for name in ("VmRSS", "VmHWM"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", type=Path, help="report_data.py output")
    args = parser.parse_args()
    results = args.data / PER_QUERY_FILE
    rows = pl.scan_parquet(results).select(pl.len()).collect().item()
    print(f"{results}: {rows:,} per-query rows; at start {memory_gb()[0]:.2f} GB resident")
    last = time.perf_counter()

    def lap(part: str) -> None:
        nonlocal last
        now, (resident, peak) = time.perf_counter(), memory_gb()
        print(f"  {part:<16} {now - last:6.1f} s   resident {resident:.2f} GB   "
              f"peak so far {peak:.2f} GB")
        last = now

    lineage = read_lineage(results)
    lap("lineage")
    queries = pl.read_parquet(args.data / QUERIES_FILE)
    lap("queries table")
    config = ReportConfig()
    numbers = engines.report_numbers(results, None, queries, config, engine="local")
    lap("numbers")
    with tempfile.TemporaryDirectory(dir=args.data) as out:
        write_report(Path(out), None, load_spec(DEFAULT_SPEC), lineage, queries, config,
                     queries_sha256="0" * 64, per_query_source=results, numbers=numbers)
        lap("report files")


if __name__ == "__main__":
    main()
