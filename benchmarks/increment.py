"""The cost of a new judgment version that regrades a few queries: its scores of a pool from
the earlier version's (``engines.incremental``) against a full scoring of that pool.

    python benchmarks/increment.py [--rows 10_000_000] [--rankers 1] [--regrade 0.02] [--add 0.01]

The data is ``benchmarks/generate.py``'s (one ranker, sorted by query). With ``--rankers N``
the pool holds N rankers of ``--rows / N`` rows each: generate.py's run, its scores shifted by
a seeded hash of (ranker, doc_id) for every ranker past the first, in the published pool's
order (ranker, query_id, doc_id), zstd, 1M-row row groups. Version 2 regrades the
graded rows of ``--regrade`` of the queries (grade + 1, mod 4) and grades the unknown rows of
another ``--add`` of them. Each scoring runs in a process of its own, which reports its wall
time, CPU time and peak memory; the two outputs must be the same bytes. Both take the inputs'
published content hashes, as the pipeline's scoring of published inputs does (the increment
from the manifests; the full scoring as ``orchestration.assets.score_evaluation`` hands them on
when the files hold the bytes their publish hashed), and both prove it as the pipeline does
(the SHA-256 of the files each reads); ``--full-hashes`` makes the full scoring hash its inputs
as it scores, as ``ndcg-eval score`` does.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.generate import CANDIDATES, DATA, SEED, data_paths, generate  # noqa: E402


def second_version(first: Path, target: Path, regrade: float, add: float) -> None:
    """Version 2: a share of queries regraded, another share's unknown rows graded."""
    bucket = pl.col("query_id").hash(seed=11) % 10_000
    regraded = bucket < int(regrade * 10_000)
    graded = (bucket >= int(regrade * 10_000)) & (bucket < int((regrade + add) * 10_000))
    (pl.scan_parquet(first)
     .with_columns(
         pl.when(regraded & (pl.col("grade_status") == "graded"))
         .then((pl.col("grade") + 1) % 4)
         .when(graded & (pl.col("grade_status") == "unknown")).then(1)
         .otherwise(pl.col("grade")).alias("grade"),
         pl.when(graded).then(pl.lit("graded")).otherwise(pl.col("grade_status"))
         .alias("grade_status"),
         pl.lit("bench-v2").alias("judgment_version"))
     .sink_parquet(target))


def pool_of_rankers(run: Path, target: Path, rankers: int) -> None:
    """``rankers`` rankers reranking ``run``'s candidates, as the published pool orders them:
    a row group of the run (whole queries) at a time, sorted by (query_id, doc_id)."""
    source = pq.ParquetFile(run)
    writer = None
    for number in range(rankers):
        name = f"ranker-{number}"
        for group in range(source.num_row_groups):
            rows = pl.from_arrow(source.read_row_group(group)).drop("rank")
            if number:
                shift = (pl.col("doc_id").hash(seed=number) % 21).cast(pl.Float64) / 10 - 1
                rows = rows.with_columns((pl.col("score") + shift).round(1).alias("score"))
            table = rows.with_columns(pl.lit(name).alias("ranker")).sort(
                "query_id", "doc_id").to_arrow()
            writer = writer or pq.ParquetWriter(target, table.schema, compression="zstd")
            writer.write_table(table, row_group_size=1_000_000)
    writer.close()


def child(kind: str, folder: Path, judgments: Path, run: Path, published: str | None,
          full_hashes: bool = False) -> None:
    from evaluation_pipeline.engines import score_files
    from evaluation_pipeline.engines.incremental import score_increment
    from evaluation_pipeline.evaluation import read_lineage
    from evaluation_pipeline.io.landing import file_sha256
    from evaluation_pipeline.metric.hashing import KnownHashes
    from evaluation_pipeline.spec import profile

    spec = profile("default")
    out = folder / f"{kind}.parquet"
    started = time.perf_counter()
    earlier = folder / "v1.parquet"
    lineage = read_lineage(earlier)
    if kind == "full":
        known = None
        if not full_hashes:
            # The pipeline's proof that both files hold the bytes their publish hashed.
            for path in (judgments, run):
                file_sha256(path)
            known = KnownHashes(judgments=published, pool=lineage.pool_sha256)
        score_files(judgments, run, spec, out, progress=False, known=known)
    else:
        # The pipeline proves the files the increment reads as it proves the full scoring's:
        # the pool and both versions.
        for path in (judgments, run, data_paths_first(judgments)):
            file_sha256(path)
        done = score_increment(earlier, data_paths_first(judgments), judgments, run, spec, out,
                               pool_sha256=lineage.pool_sha256,
                               previous_judgments_sha256=lineage.judgments_sha256,
                               judgments_sha256_now=published)
        assert done is not None, "the earlier scores do not apply"
        print(f"rescored {done.rescored_queries:,} queries, kept {done.kept_queries:,}; "
              + ", ".join(f"{k} {wall:.2f} s ({cpu:.2f} s CPU)"
                           for k, (wall, cpu) in done.seconds.items()), file=sys.stderr)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"wall": time.perf_counter() - started,
                      "cpu": usage.ru_utime + usage.ru_stime, "peak_gb": _peak_bytes() / 1e9}))


def _peak_bytes() -> int:
    """This process's peak resident memory: VmHWM (ru_maxrss would keep the parent's peak
    across the exec)."""
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def data_paths_first(second: Path) -> Path:
    return second.with_name(second.name.replace("-v2", ""))


def measured(argv: list[str]) -> dict:
    done = subprocess.run([sys.executable, __file__, *argv], stdout=subprocess.PIPE, text=True,
                          cwd=ROOT)
    if done.returncode:
        raise SystemExit(f"{argv} failed")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=lambda t: int(t.replace("_", "")), default=10_000_000)
    parser.add_argument("--rankers", type=int, default=1,
                        help="rankers of the pool, each of --rows / N rows")
    parser.add_argument("--regrade", type=float, default=0.02)
    parser.add_argument("--add", type=float, default=0.01)
    parser.add_argument("--out", type=Path, default=DATA)
    parser.add_argument("--child", choices=["full", "increment"])
    parser.add_argument("--folder", type=Path)
    # The pipeline has the new version's hash from its manifest, as a publish step gives it.
    parser.add_argument("--published-sha256")
    parser.add_argument("--full-hashes", action="store_true",
                        help="the full scoring hashes its inputs (ndcg-eval score's way)")
    args = parser.parse_args(argv)
    per_ranker = args.rows // args.rankers // CANDIDATES * CANDIDATES
    first, run = data_paths(per_ranker, args.out)
    pool = run if args.rankers == 1 else run.with_name(
        run.name.replace(".parquet", f"x{args.rankers}.parquet"))
    second = first.with_name(first.name.replace(".parquet", "-v2.parquet"))
    if args.child:
        child(args.child, args.folder, second, pool, args.published_sha256, args.full_hashes)
        return 0
    if not run.exists():
        generate(per_ranker, CANDIDATES, SEED, args.out)
    if not pool.exists():
        pool_of_rankers(run, pool, args.rankers)
    run = pool
    second_version(first, second, args.regrade, args.add)
    folder = args.out / (f"increment-{args.rows}"
                         + ("" if args.rankers == 1 else f"x{args.rankers}"))
    folder.mkdir(exist_ok=True)
    from evaluation_pipeline.engines import score_files
    from evaluation_pipeline.metric.hashing import judgments_sha256
    from evaluation_pipeline.spec import profile
    if not (folder / "v1.parquet").exists():  # version 1's scores, made once
        score_files(first, run, profile("default"), folder / "v1.parquet", progress=False)
    published = judgments_sha256(pl.read_parquet(second))
    # Each twice, in turns: the second of each is the figure (files in the page cache).
    results, runs = {}, []
    for kind in ("full", "increment", "full", "increment"):
        results[kind] = measured(["--rows", str(args.rows), "--rankers", str(args.rankers),
                                  "--out", str(args.out),
                                  "--child", kind, "--folder", str(folder),
                                  "--published-sha256", published,
                                  *(["--full-hashes"] if args.full_hashes else [])])
        runs.append((kind, results[kind]))
    same = (folder / "full.parquet").read_bytes() == (folder / "increment.parquet").read_bytes()
    rows = pq.read_metadata(run).num_rows
    print(f"{rows:,} rows ({args.rankers} rankers), {args.regrade:.0%} of queries regraded, "
          f"{args.add:.0%} graded; the full scoring "
          + ("hashes its inputs" if args.full_hashes else "takes the published hashes")
          + f"; load average {os.getloadavg()[0]:.1f}")
    for kind, result in runs:
        print(f"  {kind:<10} {result['wall']:6.1f} s wall  {result['cpu']:6.1f} s CPU  "
              f"{result['peak_gb']:.2f} GB peak")
    print(f"  increment / full: {results['increment']['wall'] / results['full']['wall']:.2f} "
          f"of the wall time, {results['increment']['cpu'] / results['full']['cpu']:.2f} of "
          f"the CPU time; same bytes: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
