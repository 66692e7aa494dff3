"""Peak memory and wall time of a judgment version landed as CSV, under a memory budget.

    python benchmarks/ingest_csv.py --rows 22M [--memory-limit 512MB] [--source DIR]
        [--data DIR] [--repeat N] [--parquet]

Data: a seeded judgments CSV of ``--rows`` rows (some 52 bytes a row: 22M rows are 1.15 GB),
query ids over ``rows / 50`` queries in no order, 5% of the grades unknown (an empty grade),
generated on first use in ``--data`` (default ``benchmarks/data/``). ``--parquet`` also lands
the same rows as a contract-typed Parquet file, whose ingest is the floor of a CSV's: it needs
no conversion.

Each ingest (``ingest.publish.publish_judgments``, as the ``judgments`` asset calls it, with
``NDCG_EVAL_MEMORY_LIMIT`` set to ``--memory-limit``) runs in a process of its own, with the
code of ``--source`` (default: this checkout) first on its path, so that two checkouts compare
on the same file. Printed per run: wall time, the time of the check pass (pass 1, where a CSV
is parsed and converted), the peak RSS of the process (VmHWM, read by the process itself:
ru_maxrss would keep the parent's peak across the exec) and its peak at the end of pass 1, and
the published file's SHA-256, as a markdown table.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "benchmarks" / "data"


def size_rows(text: str) -> int:
    scale = {"k": 1000, "m": 1000**2}.get(text[-1].lower(), 1)
    return int(float(text.rstrip("kKmM").replace("_", "")) * scale)


def generate(rows: int, path: Path) -> None:
    """A judgments CSV of ``rows`` rows, in batches of 2M rows so that no size sits whole."""
    import numpy as np
    import polars as pl

    rng = np.random.default_rng(22)
    tmp = path.with_name(f".{path.name}.part")
    with open(tmp, "wb") as out:
        for start in range(0, rows, 2_000_000):
            n = min(2_000_000, rows - start)
            frame = pl.DataFrame({"q": rng.integers(0, max(rows // 50, 1), n),
                                  "d": np.arange(start, start + n),
                                  "g": rng.integers(0, 4, n), "u": rng.random(n) < 0.05})
            frame.select(
                query_id="query-" + pl.col("q").cast(pl.String),
                doc_id="https://example.org/docs/" + pl.col("d").cast(pl.String),
                grade=pl.when(pl.col("u")).then(None).otherwise(pl.col("g")),
                grade_status=pl.when(pl.col("u")).then(pl.lit("unknown"))
                .otherwise(pl.lit("graded")),
            ).write_csv(out, include_header=start == 0)
    os.replace(tmp, path)


def typed_copy(csv: Path, path: Path) -> None:
    import polars as pl

    pl.scan_csv(csv, schema_overrides={"grade": pl.Int64}).sink_parquet(path)


def child(source: Path, target: Path, spill: Path) -> None:
    """One ingest; prints its figures as JSON on the last line."""
    from evaluation_pipeline.ingest.publish import publish_judgments
    from evaluation_pipeline.io.budget import Budget

    laps: list[tuple[float, int]] = []

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)
        laps.append((time.perf_counter(), peak_bytes()))

    started = time.perf_counter()
    publish_judgments(source, target, budget=Budget.of(None, spill), log=log)
    print(json.dumps({"wall": time.perf_counter() - started, "check": laps[0][0] - started,
                      "check_peak_gb": laps[0][1] / 1e9, "peak_gb": peak_bytes() / 1e9}))


def peak_bytes() -> int:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def measured(source_tree: Path, landed: Path, limit: str) -> dict:
    with tempfile.TemporaryDirectory(dir=landed.parent) as folder:
        target = Path(folder) / "judgments.parquet"
        env = {**os.environ, "PYTHONPATH": str(source_tree), "NDCG_EVAL_MEMORY_LIMIT": limit}
        done = subprocess.run(
            [sys.executable, __file__, "--child", str(landed), str(target), folder],
            stdout=subprocess.PIPE, text=True, env=env, cwd=source_tree, check=True)
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        with open(target, "rb") as published:
            figures["sha256"] = hashlib.file_digest(published, "sha256").hexdigest()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="22M")
    parser.add_argument("--memory-limit", default="512MB")
    parser.add_argument("--source", type=Path, action="append",
                        help="a checkout whose ingest to measure (repeatable; default: this one)")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--parquet", action="store_true",
                        help="also ingest the same rows as contract-typed Parquet")
    parser.add_argument("--child", nargs=3, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    args.data.mkdir(parents=True, exist_ok=True)
    rows = size_rows(args.rows)
    csv = args.data / f"judgments-{args.rows}.csv"
    if not csv.exists():
        generate(rows, csv)
    landed = [csv]
    if args.parquet:
        typed = csv.with_suffix(".parquet")
        if not typed.exists():
            typed_copy(csv, typed)
        landed.append(typed)
    print(f"{rows:,} rows, {csv.stat().st_size / 1e9:.2f} GB of CSV, "
          f"NDCG_EVAL_MEMORY_LIMIT={args.memory_limit}, load {os.getloadavg()[0]:.1f}\n")
    print("| source | landed | wall s | check pass s | peak RSS GB | peak RSS after check GB "
          "| published sha256 |\n|---|---|---|---|---|---|---|")
    for _ in range(args.repeat):
        for tree in args.source or [ROOT]:
            for path in landed:
                f = measured(tree.resolve(), path, args.memory_limit)
                print(f"| {tree} | {path.suffix[1:]} | {f['wall']:.1f} | {f['check']:.1f} | "
                      f"{f['peak_gb']:.2f} | {f['check_peak_gb']:.2f} | {f['sha256'][:16]} |",
                      flush=True)


if __name__ == "__main__":
    main()
