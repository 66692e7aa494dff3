"""The report of a TREC DL scoring beside the scoring itself: wall, CPU and peak RSS of each.

    python benchmarks/measures_report.py --queries 1M [--rankers 2] [--candidates 10] [--seed 7]
                                         [--spec FILE] [--pairs 2] [--out DIR] [--reuse]

Generates (seeded, ``unsorted_pool.py``) a pool of ``--rankers`` rankers reranking the same
``--candidates`` candidates per query, unsorted, with one judgment version (30% of the
candidates judged), and a queries table with weights and two slice columns
(``report_data.py``); then, ``--pairs`` times in turn, scores the pool under ``--spec``
(default ``benchmarks/specs/trec_dl.yaml``, the four TREC DL measures) with ``ndcg-eval score
--spec FILE --out DIR`` and times ``ndcg-eval report DIR --queries ... --out DIR2`` on what it
wrote. Each command runs in a process of its own, measured as ``pipeline.py`` measures the main
job (peak RSS of the process tree sampled every 0.1 s, CPU seconds user + system); the load
average is taken before each. Prints a table, one row per command and run, with the report's
time over its scoring's, and writes ``measures-report.json`` in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pipeline import measure  # noqa: E402
from report_data import queries as queries_table  # noqa: E402
from unsorted_pool import generate as generate_pool  # noqa: E402
from unsorted_pool import pool_arguments  # noqa: E402

HERE = Path(__file__).resolve().parent
TREC_DL = HERE / "specs" / "trec_dl.yaml"


def inputs(n_queries: int, rankers: int, candidates: int, seed: int, out: Path,
           reuse: bool) -> tuple[Path, Path, Path]:
    """The pool folder, its judgment version and the queries table under ``out/data``."""
    data = out / "data"
    made = data / "made.json"
    shape = {"queries": n_queries, "rankers": rankers, "candidates": candidates, "seed": seed}
    if reuse and made.exists() and json.loads(made.read_text())["shape"] == shape:
        paths = json.loads(made.read_text())
        return Path(paths["pool"]), Path(paths["judgments"]), Path(paths["queries"])
    shutil.rmtree(data, ignore_errors=True)
    pool = generate_pool(n_queries, rankers, candidates, seed, data)
    judgments = data / f"judgments-{pool.name.removeprefix('pool-')}.parquet"
    queries = data / "queries.parquet"
    queries_table(n_queries, np.random.default_rng([seed, 2])).write_parquet(queries)
    made.write_text(json.dumps({"shape": shape, "pool": str(pool), "judgments": str(judgments),
                                "queries": str(queries)}))
    return pool, judgments, queries


def commands(pool: Path, judgments: Path, queries: Path, spec: Path,
             out: Path) -> dict[str, list[str]]:
    cli = [sys.executable, "-m", "evaluation_pipeline"]
    return {
        "score": [*cli, "score", "--judgments", str(judgments), "--run", str(pool),
                  "--spec", str(spec), "--out", str(out / "scored"),
                  "--spill-dir", str(out / "spill")],
        "report": [*cli, "report", str(out / "scored"), "--queries", str(queries),
                   "--out", str(out / "report")],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    pool_arguments(parser, Path("/tmp/measures-report"))
    # 10 candidates: at 1M queries x 2 rankers, 50 took the scoring past 19.7 GB (README.md,
    # "Every measure through the pipeline"); the report reads the same rows whatever the count.
    parser.set_defaults(rankers=2, candidates=10)
    parser.add_argument("--spec", type=Path, default=TREC_DL,
                        help="spec of the scoring (default: the four TREC DL measures)")
    parser.add_argument("--pairs", type=int, default=2,
                        help="scorings and reports, in turn (default 2)")
    parser.add_argument("--reuse", action="store_true",
                        help="keep the data already generated at --out for the same shape")
    args = parser.parse_args(argv)
    if not args.spec.is_file():
        parser.error(f"--spec {args.spec}: no such file")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    pool, judgments, queries = inputs(args.queries, args.rankers, args.candidates, args.seed,
                                      out, args.reuse)
    rows = sum(pq.read_metadata(p).num_rows for p in pool.glob("*.parquet"))
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    runs = []
    for number in range(1, args.pairs + 1):
        for what, command in commands(pool, judgments, queries, args.spec.resolve(),
                                      out).items():
            shutil.rmtree(out / ("scored" if what == "score" else "report"),
                          ignore_errors=True)
            shutil.rmtree(out / "spill", ignore_errors=True)
            load = os.getloadavg()[0]
            run = measure(command, env, out / f"{what}-{number}.log")
            runs.append({"pair": number, "what": what, "load_average": load, "wall": run.wall,
                         "cpu": run.cpu, "peak_rss": run.peak_rss, "ok": run.returncode == 0})
            print(row(runs[-1]), file=sys.stderr)
            if run.returncode != 0:
                print(f"{what} failed: see {out / f'{what}-{number}.log'}", file=sys.stderr)
                return 1
    per_query = pq.read_metadata(out / "scored" / "per_query.parquet").num_rows
    result = {"rows": rows, "per_query_rows": per_query, "queries": args.queries,
              "rankers": args.rankers, "candidates": args.candidates, "seed": args.seed,
              "spec": str(args.spec.resolve()), "cpus": os.cpu_count(), "runs": runs}
    (out / "measures-report.json").write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    return 0


def row(run: dict) -> str:
    return (f"| {run['pair']} | {run['what']}{'' if run['ok'] else ' (FAILED)'} | "
            f"{run['load_average']:.1f} | {run['wall']:.1f} s | {run['cpu']:.1f} s | "
            f"{run['peak_rss'] / 1e9:.2f} GB |")


def table(result: dict) -> str:
    lines = [f"{result['rows']:,} candidate rows ({result['queries']:,} queries x "
             f"{result['rankers']} rankers x {result['candidates']}), {result['per_query_rows']:,}"
             f" per-query rows, spec {result['spec']}, {result['cpus']} CPUs", "",
             "| pair | command | load average | wall | CPU | peak RSS |",
             "|---|---|---|---|---|---|"]
    lines += [row(run) for run in result["runs"]]
    lines += ["", "| pair | report / scoring, wall | report / scoring, CPU |", "|---|---|---|"]
    for number in sorted({run["pair"] for run in result["runs"]}):
        score, report = ({run["what"]: run for run in result["runs"]
                          if run["pair"] == number}[what] for what in ("score", "report"))
        lines.append(f"| {number} | {report['wall'] / score['wall']:.2f}x | "
                     f"{report['cpu'] / score['cpu']:.2f}x |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
