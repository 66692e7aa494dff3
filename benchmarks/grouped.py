"""A run grouped by query but not sorted, beside the same rows sorted by query_id.

    python benchmarks/grouped.py --rows 10M [--data DIR]
    python benchmarks/grouped.py --rows 10M --time [--repeat 3] [--engines auto,streaming,local]

``generate.py``'s ids are zero-padded (q00000123), so its files are in byte order of query_id.
This writes, from them, the shape of a TREC run or a ranker's log: ids without the padding
(q123), each query's rows together and the queries in numeric order, so that q2 comes before
q10 (``run-grouped-NM.parquet``, and the judgments in the same order,
``judgments-grouped-NM.parquet``); and the same rows sorted by query_id (then score high to
low and doc_id, the order within a query that ``generate.py`` writes), ``run-sorted-NM.parquet``
and ``judgments-sorted-NM.parquet``. The files are derived a row group at a time (the grouped
ones) and by DuckDB's out-of-core sort (the sorted ones), so 100M rows never sit in memory.

``--time`` then runs ``ndcg-eval score --profile trec_eval --cutoff 10`` on both pairs in
turn (sorted, grouped, sorted, grouped, ...), each engine of ``--engines`` (``auto``: no
``--engine``), and prints wall time, CPU time and peak RSS (``os.wait4``), the median of the
rounds, and the grouped file's time over the sorted one's; and whether both wrote the same
per_query.parquet bytes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
from generate import CANDIDATES, DATA, SEED, data_paths, generate, size_rows

REPO = Path(__file__).resolve().parents[1]


def plain_ids(path: Path, target: Path) -> None:
    """``path`` with query_id unpadded (q00000123 -> q123), rows in the same order."""
    if target.exists():
        return
    reader = pq.ParquetFile(path)
    writer = None
    for group in range(reader.num_row_groups):
        frame = pl.from_arrow(reader.read_row_group(group)).with_columns(
            pl.concat_str(pl.lit("q"), pl.col("query_id").str.slice(1).cast(pl.Int64)
                          .cast(pl.String)).alias("query_id"))
        table = frame.to_arrow()
        writer = writer or pq.ParquetWriter(target, table.schema)
        writer.write_table(table, row_group_size=1_000_000)
    writer.close()


def sorted_copy(path: Path, target: Path, order: str) -> None:
    import duckdb

    if target.exists():
        return
    with tempfile.TemporaryDirectory() as spill:
        connection = duckdb.connect(config={"memory_limit": "4GB", "temp_directory": spill,
                                            "preserve_insertion_order": False})
        connection.execute(f"COPY (SELECT * FROM read_parquet('{path}') ORDER BY {order}) TO "
                           f"'{target}' (FORMAT parquet, ROW_GROUP_SIZE 1000000)")
        connection.close()


def files(rows: int, data: Path) -> dict[str, tuple[Path, Path]]:
    """{"sorted": (judgments, run), "grouped": (judgments, run)}, made if missing."""
    judgments, run = data_paths(rows, data)
    if not (judgments.exists() and run.exists()):
        generate(rows, CANDIDATES, SEED, data)
    tag = judgments.stem.split("-", 1)[1]
    made = {kind: (data / f"judgments-{kind}-{tag}.parquet", data / f"run-{kind}-{tag}.parquet")
            for kind in ("grouped", "sorted")}
    plain_ids(judgments, made["grouped"][0])
    plain_ids(run, made["grouped"][1])
    sorted_copy(made["grouped"][0], made["sorted"][0], "query_id, doc_id")
    sorted_copy(made["grouped"][1], made["sorted"][1], "query_id, score DESC, doc_id")
    return made


def timed(argv: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s, peak RSS GB) of a command."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if status:
        raise SystemExit(f"failed ({status}): {' '.join(argv)}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024 / 1e9


def command(judgments: Path, run: Path, engine: str, out: Path) -> list[str]:
    argv = [sys.executable, "-m", "evaluation_pipeline", "score", "--judgments", str(judgments),
            "--run", str(run), "--profile", "trec_eval", "--cutoff", "10", "--out", str(out)]
    return argv + ([] if engine == "auto" else ["--engine", engine])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=size_rows, default=10_000_000)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--time", action="store_true", help="time ndcg-eval score on both")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--engines", default="auto,streaming")
    args = parser.parse_args(argv)
    made = files(args.rows, args.data)
    for kind, (judgments, run) in made.items():
        print(f"{kind}: {judgments} and {run} ({pq.read_metadata(run).num_rows:,} rows)")
    if not args.time:
        return 0
    print("| engine | input | wall s | CPU s | peak RSS GB | grouped / sorted (wall) |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for engine in args.engines.split(","):
            runs: dict[str, list] = {"sorted": [], "grouped": []}
            for number in range(args.repeat):
                for kind in runs:
                    out = Path(scratch) / f"{engine}-{kind}-{number}"
                    runs[kind].append(timed(command(*made[kind], engine, out)))
            same = {(Path(scratch) / f"{engine}-{kind}-0" / "per_query.parquet").read_bytes()
                    for kind in runs}
            print(f"| {engine} | per_query.parquet of both: "
                  f"{'the same bytes' if len(same) == 1 else 'DIFFERENT'} | | | | |")
            walls = {}
            for kind, measured in runs.items():
                wall, cpu = (statistics.median(m[i] for m in measured) for i in (0, 1))
                peak = max(m[2] for m in measured)
                walls[kind] = wall
                ratio = f"{wall / walls['sorted']:.2f}" if kind == "grouped" else ""
                print(f"| {engine} | {kind} | {wall:.1f} | {cpu:.1f} | {peak:.2f} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
