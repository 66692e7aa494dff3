"""Time the pipeline report's numbers of one night against the previous one: both nights'
per-query files summed a chunk of queries at a time (the report asset's local path), the
comparison with its movers and change by slice.

    python benchmarks/report_data.py --queries 1000000 --rankers 2 --out /tmp/rep-1m
    python benchmarks/report_data.py --queries 1000000 --rankers 2 --seed 8 --out /tmp/rep-1m-b
    python benchmarks/night_report.py /tmp/rep-1m-b /tmp/rep-1m

Prints the wall time, the peak memory and how many comparisons and slice rows it computed.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluation_pipeline.io.storage import PER_QUERY_FILE, QUERIES_FILE  # noqa: E402
from evaluation_pipeline.report.build import scanned_numbers  # noqa: E402
from evaluation_pipeline.report.config import ReportConfig  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tonight", type=Path, help="report_data.py output of tonight")
    parser.add_argument("previous", type=Path, help="report_data.py output of the night before")
    args = parser.parse_args()
    start = time.perf_counter()
    queries = pl.read_parquet(args.previous / QUERIES_FILE)
    planned, numbers = scanned_numbers(pl.scan_parquet(args.tonight / PER_QUERY_FILE),
                                       pl.scan_parquet(args.previous / PER_QUERY_FILE),
                                       queries, ReportConfig())
    compared = planned.night_comparison(numbers, alpha=0.05, min_effect=0.01, ci_level=0.95)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    slices = sum(len(c["slices"]) for c in compared.comparisons)
    print(f"{time.perf_counter() - start:.1f} s, peak {peak:.2f} GB, "
          f"{len(compared.comparisons)} comparisons, {slices} slice rows")


if __name__ == "__main__":
    main()
