"""The pipeline on a realistic nightly: wall time, CPU time and peak RSS of the main job and of
each of its steps, beside ``ndcg-eval score --report`` on one of its evaluations.

    python benchmarks/pipeline.py --queries 100k [--rankers 3] [--candidates 100] [--seed 7]
                                  [--out DIR] [--memory-limit 2GB] [--new-version]
                                  [--spec FILE] [--reuse] [--main-job-only]

Generates (seeded) a landing folder as a nightly would leave it: one pool of ``--rankers``
rankers reranking the same ``--candidates`` candidates per query, one Parquet file per ranker,
rows in no key order (``unsorted_pool.py``); two judgment versions, the first judging 30% of
the candidates, the second adding 5% more and regrading 10% of the first's rows; and a queries
table with traffic weights and two slice columns of 3 and 5 values (``report_data.py``). Then
runs the main job (``python -m evaluation_pipeline.main_job``) on a fresh Dagster home and storage
(``NDCG_EVAL_LANDING``, ``NDCG_EVAL_STORAGE``, ``NDCG_EVAL_QUERIES``; spills under ``--out``,
``NDCG_EVAL_SPILL_DIR``), and ``ndcg-eval score --report`` on the second version.

With ``--spec FILE``, both evaluate under that spec: the main job as ``NDCG_EVAL_SPEC`` and
``ndcg-eval score --report`` as ``--spec`` (e.g. ``benchmarks/specs/trec_dl.yaml``, the TREC DL
measures, beside ``benchmarks/specs/ndcg10.yaml``, the same conventions with nDCG@10 alone);
without it, the pipeline's spec ($NDCG_EVAL_SPEC, else the packaged one). The result names the
spec. ``--reuse`` keeps a landing folder already generated at ``--out``; ``--main-job-only``
skips ``ndcg-eval score --report``.

With ``--new-version``, a third version lands after the main job (the second with
``THIRD_REGRADED`` of its queries regraded and ``THIRD_ADDED`` more given grades for candidates
it did not judge) and the main job runs again, re-evaluating every pool against it: once with
the incremental scoring (``NDCG_EVAL_INCREMENTAL=1``, the default) and once, from a copy of the
same instance and storage, with it switched off (``NDCG_EVAL_INCREMENTAL=0``).

Peak RSS is of the whole process tree, sampled from /proc every 0.1 s; each step's figures come
from Dagster's STEP_START and STEP_SUCCESS events in the instance, the peak being the highest
sample inside the step's window. CPU seconds are user + system of the command's processes; a
step's, the tree's CPU seconds (its processes' own and their waited-for children's, sampled
with the RSS) between the last sample before the step's window and the first after it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import DATA, DOC_SPACE, doc_ids  # noqa: E402
from report_data import queries as queries_table  # noqa: E402
from unsorted_pool import generate as generate_pool  # noqa: E402
from unsorted_pool import pool_arguments  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
POOL, VERSIONS = "pool-nightly", ("nightly-v1", "nightly-v2")
ADDED_SHARE, REGRADED_SHARE = 0.05, 0.10
THIRD_VERSION, THIRD_REGRADED, THIRD_ADDED = "nightly-v3", 0.02, 0.01
SAMPLE_SECONDS = 0.1


# -- the landing folder ------------------------------------------------------------------------


def landing_folder(n_queries: int, rankers: int, candidates: int, seed: int, out: Path) -> Path:
    """``out/landing`` (pools/POOL/, judgments/VERSIONS) and ``out/queries.parquet``."""
    landing = out / "landing"
    if landing.exists():
        shutil.rmtree(landing)
    (landing / "judgments").mkdir(parents=True)
    (landing / "pools").mkdir()
    scratch = out / "generated"
    folder = generate_pool(n_queries, rankers, candidates, seed, scratch)
    first = scratch / f"judgments-{folder.name.removeprefix('pool-')}.parquet"
    folder.rename(landing / "pools" / POOL)
    first.rename(landing / "judgments" / f"{VERSIONS[0]}.parquet")
    second_version(landing / "judgments" / f"{VERSIONS[0]}.parquet",
                   landing / "judgments" / f"{VERSIONS[1]}.parquet", candidates, seed)
    shutil.rmtree(scratch)
    queries_table(n_queries, np.random.default_rng([seed, 2])).write_parquet(
        out / "queries.parquet")
    return landing


def second_version(first: Path, target: Path, candidates: int, seed: int) -> None:
    """The first version with ADDED_SHARE of its queries' candidates judged besides and
    REGRADED_SHARE of its rows given another grade, a row group (one group of queries) at a
    time; the rows stay in no key order."""
    source = pq.ParquetFile(first)
    writer = None
    for number in range(source.num_row_groups):
        rng = np.random.default_rng([seed, 3, number])
        judged = pl.from_arrow(source.read_row_group(number))
        regrade = pl.Series(rng.random(judged.height) < REGRADED_SHARE)
        new_grade = pl.Series(rng.integers(0, 4, size=judged.height), dtype=pl.Int64)
        judged = judged.with_columns(
            pl.when(regrade).then(new_grade).otherwise(pl.col("grade")).alias("grade"),
            pl.when(regrade).then(pl.lit("graded")).otherwise(pl.col("grade_status"))
            .alias("grade_status"))
        # Candidates of the group's queries (doc j of query q is q * DOC_SPACE + j), drawn.
        query_ids = judged["query_id"].unique().sort()
        numbers = query_ids.str.strip_prefix("q").cast(pl.Int64).to_numpy()
        drawn = rng.random((numbers.size, candidates)) < ADDED_SHARE
        q, j = np.nonzero(drawn)
        added = pl.DataFrame({"query_id": query_ids.gather(q),
                              "doc_id": doc_ids(numbers[q] * DOC_SPACE + j)})
        added = added.join(judged.select("query_id", "doc_id"), on=["query_id", "doc_id"],
                           how="anti")
        added = added.with_columns(
            pl.Series("grade", rng.integers(0, 4, size=added.height), dtype=pl.Int64),
            pl.lit("graded").alias("grade_status"))
        table = pl.concat([judged, added.select(judged.columns)])
        writer = _append_shuffled(writer, target, table, rng)
    writer.close()


def _append_shuffled(writer: pq.ParquetWriter | None, target: Path, table: pl.DataFrame,
                     rng: np.random.Generator) -> pq.ParquetWriter:
    """One row group of ``table``'s rows in a random order (a landing is in no key order)."""
    rows = table[rng.permutation(table.height)].to_arrow()
    writer = writer or pq.ParquetWriter(target, rows.schema)
    writer.write_table(rows, row_group_size=len(rows))
    return writer


def third_version(second: Path, target: Path, candidates: int, seed: int) -> None:
    """The second version with the graded rows of THIRD_REGRADED of its queries regraded
    (grade + 1, mod 4) and, for THIRD_ADDED more, ADDED_SHARE of their candidates it did not
    judge graded besides; a row group (one group of queries) at a time, in no key order."""
    source = pq.ParquetFile(second)
    writer = None
    for number in range(source.num_row_groups):
        rng = np.random.default_rng([seed, 4, number])
        judged = pl.from_arrow(source.read_row_group(number))
        share = (pl.col("query_id").hash(seed=seed) % 10_000) / 10_000
        judged = judged.with_columns(
            pl.when((share < THIRD_REGRADED) & (pl.col("grade_status") == "graded"))
            .then((pl.col("grade") + 1) % 4).otherwise(pl.col("grade")).alias("grade"))
        query_ids = judged.select("query_id").unique().filter(
            (share >= THIRD_REGRADED) & (share < THIRD_REGRADED + THIRD_ADDED))[
            "query_id"].sort()
        numbers = query_ids.str.strip_prefix("q").cast(pl.Int64).to_numpy()
        q, j = np.nonzero(rng.random((numbers.size, candidates)) < ADDED_SHARE)
        added = pl.DataFrame({"query_id": query_ids.gather(q),
                              "doc_id": doc_ids(numbers[q] * DOC_SPACE + j)},
                             schema={"query_id": pl.String, "doc_id": pl.String})
        added = added.join(judged.select("query_id", "doc_id"), on=["query_id", "doc_id"],
                           how="anti").with_columns(
            pl.lit(2, dtype=pl.Int64).alias("grade"),
            pl.lit("graded").alias("grade_status"))
        table = pl.concat([judged, added.select(judged.columns)])
        writer = _append_shuffled(writer, target, table, rng)
    writer.close()


# -- measuring a command -----------------------------------------------------------------------


@dataclass
class Measured:
    wall: float
    cpu: float
    peak_rss: int  # bytes, of the whole process tree
    returncode: int
    # (epoch seconds, bytes, CPU seconds of the tree so far)
    samples: list[tuple[float, int, float]] = field(default_factory=list)

    def peak_between(self, start: float, end: float) -> int:
        inside = [rss for t, rss, _ in self.samples if start <= t <= end]
        return max(inside, default=0)

    def cpu_between(self, start: float, end: float) -> float:
        """CPU seconds of the tree from the last sample at or before ``start`` to the first at
        or after ``end`` (so up to a sample's interval more than the window)."""
        before = [cpu for t, _, cpu in self.samples if t <= start]
        after = [cpu for t, _, cpu in self.samples if t >= end]
        if not self.samples:
            return 0.0
        return ((after[0] if after else self.samples[-1][2])
                - (before[-1] if before else self.samples[0][2]))


def measure(command: list[str], env: dict, log: Path) -> Measured:
    """Run ``command``, sampling the RSS of its process tree, output to ``log``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    samples: list[tuple[float, int, float]] = []
    started = time.perf_counter()
    with open(log, "w") as output:
        process = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT,
                                   cwd=REPO)
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                samples.append((time.time(), *tree_usage(process.pid)))
                done.wait(SAMPLE_SECONDS)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        code = process.wait()
        done.set()
        sampler.join()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    peak = max((rss for _, rss, _ in samples), default=0)
    return Measured(wall, cpu, peak, code, samples)


def tree_usage(root: int) -> tuple[int, float]:
    """Resident bytes of ``root`` and every process below it, and their CPU seconds so far
    (user + system, each process's own and its waited-for children's)."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    cpu: dict[int, float] = {}
    page, tick = os.sysconf("SC_PAGE_SIZE"), os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            statm = Path(f"/proc/{entry}/statm").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        parents[int(entry)] = int(fields[1])
        rss[int(entry)] = int(statm.split()[1]) * page
        # utime, stime, cutime, cstime: the stat file's fields 14 to 17, in clock ticks
        cpu[int(entry)] = sum(int(ticks) for ticks in fields[11:15]) / tick
    total, seconds, stack = 0, 0.0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        seconds += cpu.get(pid, 0.0)
        stack += [child for child, parent in parents.items() if parent == pid]
    return total, seconds


# -- Dagster's step events ---------------------------------------------------------------------


def step_windows(home: Path) -> list[dict]:
    """Every step of every run in the instance at ``home``: job, partition, step, start, end."""
    os.environ["DAGSTER_HOME"] = str(home)
    import dagster as dg

    steps = []
    with dg.DagsterInstance.get() as instance:
        for run in reversed(instance.get_runs()):
            starts: dict[str, float] = {}
            for record in instance.get_records_for_run(run.run_id, limit=100_000).records:
                entry = record.event_log_entry
                event = entry.dagster_event
                if event is None:
                    continue
                if event.event_type_value == "STEP_START":
                    starts[entry.step_key] = entry.timestamp
                elif event.event_type_value in ("STEP_SUCCESS", "STEP_FAILURE"):
                    steps.append({"job": run.job_name,
                                  "partition": run.tags.get("dagster/partition", "-"),
                                  "step": entry.step_key,
                                  "ok": event.event_type_value == "STEP_SUCCESS",
                                  "start": starts.get(entry.step_key, entry.timestamp),
                                  "end": entry.timestamp})
    return steps


# -- the run -----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    pool_arguments(parser, DATA / "pipeline")
    parser.add_argument("--memory-limit", help="NDCG_EVAL_MEMORY_LIMIT of both runs")
    parser.add_argument("--reuse", action="store_true",
                        help="keep a landing folder already generated at --out")
    parser.add_argument("--main-job-only", action="store_true",
                        help="skip ndcg-eval score --report (the 1B-row manual run)")
    parser.add_argument("--spec", type=Path,
                        help="spec file of the main job (NDCG_EVAL_SPEC) and of ndcg-eval score "
                             "--report (--spec); default: $NDCG_EVAL_SPEC, else the packaged one")
    parser.add_argument("--new-version", action="store_true",
                        help=f"then land {THIRD_VERSION} and run the main job again, with the "
                             "incremental scoring and without it")
    args = parser.parse_args(argv)
    spec = args.spec.resolve() if args.spec else None
    if spec is not None and not spec.is_file():
        parser.error(f"--spec {args.spec}: no such file")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    landing = out / "landing"
    started = time.perf_counter()
    if not (args.reuse and landing.exists()):
        landing_folder(args.queries, args.rankers, args.candidates, args.seed, out)
    rows = sum(pq.read_metadata(p).num_rows for p in (landing / "pools" / POOL).glob("*.parquet"))
    print(f"landing folder {landing}: {rows:,} candidate rows "
          f"({time.perf_counter() - started:.0f} s to generate)", file=sys.stderr)

    home, storage = out / "dagster_home", out / "storage"
    for fresh in (home, storage, out / "cli", out / "spill"):
        shutil.rmtree(fresh, ignore_errors=True)
    env = {**os.environ, "DAGSTER_HOME": str(home), "NDCG_EVAL_LANDING": str(landing),
           "NDCG_EVAL_STORAGE": str(storage), "NDCG_EVAL_QUERIES": str(out / "queries.parquet"),
           "NDCG_EVAL_SPILL_DIR": str(out / "spill"), "PYTHONPATH": str(REPO)}
    if args.memory_limit:
        env["NDCG_EVAL_MEMORY_LIMIT"] = args.memory_limit
    if spec is not None:
        env["NDCG_EVAL_SPEC"] = str(spec)
    job = measure([sys.executable, "-m", "evaluation_pipeline.main_job"], env, out / "main.log")
    steps = step_windows(home)
    for step in steps:
        step["wall"] = step["end"] - step["start"]
        step["peak_rss"] = job.peak_between(step["start"], step["end"])
        step["cpu"] = job.cpu_between(step["start"], step["end"])
    # Between steps: start-up, sensor ticks and run launches, the closing summary.
    between = [rss for t, rss, _ in job.samples
               if not any(s["start"] <= t <= s["end"] for s in steps)]
    cli = None if args.main_job_only else measure(
        [sys.executable, "-m", "evaluation_pipeline", "score", "--judgments",
         str(landing / "judgments" / f"{VERSIONS[1]}.parquet"), "--run",
         str(landing / "pools" / POOL), "--queries", str(out / "queries.parquet"),
         "--out", str(out / "cli"), "--report", *(["--spec", str(spec)] if spec else [])],
        env, out / "cli.log")

    new_version = new_version_runs(landing, out, env, args) if args.new_version else None

    result = {
        "new_version": new_version,
        "rows": rows, "queries": args.queries, "rankers": args.rankers,
        "candidates": args.candidates, "seed": args.seed, "memory_limit": args.memory_limit,
        "spec": env.get("NDCG_EVAL_SPEC"),
        "cpus": os.cpu_count(), "load_average": os.getloadavg(),
        "main_job": {"wall": job.wall, "cpu": job.cpu, "peak_rss": job.peak_rss,
                     "ok": job.returncode == 0, "peak_rss_between_steps": max(between, default=0)},
        "steps": [{k: v for k, v in s.items() if k not in ("start", "end")} for s in steps],
        "score_report": None if cli is None else {
            "wall": cli.wall, "cpu": cli.cpu, "peak_rss": cli.peak_rss,
            "ok": cli.returncode == 0},
    }
    (out / "pipeline-benchmark.json").write_text(json.dumps(result, indent=2) + "\n")
    print(table(result))
    failed = new_version is not None and not all(r["ok"] for r in new_version.values())
    return 0 if job.returncode == 0 and (cli is None or cli.returncode == 0) and not failed else 1


def new_version_runs(landing: Path, out: Path, env: dict, args) -> dict:
    """The main job again after THIRD_VERSION lands: with the incremental scoring and, from a
    copy of the instance and storage as they were before, without it."""
    home, storage = Path(env["DAGSTER_HOME"]), Path(env["NDCG_EVAL_STORAGE"])
    saved = {place: out / f"{place.name}-before-{THIRD_VERSION}" for place in (home, storage)}
    for place, copy in saved.items():
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(place, copy)
    third_version(landing / "judgments" / f"{VERSIONS[1]}.parquet",
                  landing / "judgments" / f"{THIRD_VERSION}.parquet", args.candidates, args.seed)
    runs = {}
    for incremental in ("1", "0"):
        for place, copy in saved.items():
            shutil.rmtree(place)
            shutil.copytree(copy, place)
        started = time.time()
        run = measure([sys.executable, "-m", "evaluation_pipeline.main_job"],
                      {**env, "NDCG_EVAL_INCREMENTAL": incremental},
                      out / f"main-{THIRD_VERSION}-incremental-{incremental}.log")
        scoring = [s for s in step_windows(home) if s["start"] >= started
                   and s["step"] == "query_scores"]
        runs["incremental" if incremental == "1" else "full"] = {
            "wall": run.wall, "cpu": run.cpu, "peak_rss": run.peak_rss,
            "ok": run.returncode == 0,
            "scoring_steps": [{"partition": s["partition"], "wall": s["end"] - s["start"],
                               "cpu": run.cpu_between(s["start"], s["end"]),
                               "peak_rss": run.peak_between(s["start"], s["end"]),
                               "engine": scoring_engine(home, s["partition"])}
                              for s in scoring]}
    (landing / "judgments" / f"{THIRD_VERSION}.parquet").unlink()
    return runs


def scoring_engine(home: Path, partition: str) -> str:
    """The engine the newest query_scores materialization of ``partition`` names."""
    os.environ["DAGSTER_HOME"] = str(home)
    import dagster as dg

    with dg.DagsterInstance.get() as instance:
        records = instance.fetch_materializations(dg.AssetRecordsFilter(
            asset_key=dg.AssetKey("query_scores"), asset_partitions=[partition]), limit=1).records
        if not records:
            return "-"
        engine = records[0].asset_materialization.metadata.get("engine")
        return "-" if engine is None else str(engine.value)


def table(result: dict) -> str:
    def gb(size: int) -> str:
        return f"{size / 1e9:.2f} GB"

    lines = [f"{result['rows']:,} candidate rows ({result['queries']:,} queries x "
             f"{result['rankers']} rankers x {result['candidates']}), load average "
             f"{result['load_average'][0]:.1f} on {result['cpus']} CPUs, spec "
             f"{result.get('spec') or 'the packaged one'}", "",
             "| what | wall | CPU | peak RSS |", "|---|---|---|---|"]
    job = result["main_job"]
    lines.append(f"| main job{'' if job['ok'] else ' (FAILED)'} | {job['wall']:.1f} s | "
                 f"{job['cpu']:.1f} s | {gb(job['peak_rss'])} |")
    # The steps run one after another: the rest is the start, the instance, the sensor ticks,
    # the runs' records and the closing summary.
    outside = job["wall"] - sum(step["wall"] for step in result["steps"])
    outside_cpu = job["cpu"] - sum(step.get("cpu", 0.0) for step in result["steps"])
    lines.append(f"| main job, between steps | {outside:.1f} s | {outside_cpu:.1f} s | "
                 f"{gb(job['peak_rss_between_steps'])} |")
    for step in result["steps"]:
        lines.append(f"| {step['job']} {step['partition']}: {step['step']}"
                     f"{'' if step['ok'] else ' (FAILED)'} | {step['wall']:.1f} s | "
                     f"{step.get('cpu', 0.0):.1f} s | {gb(step['peak_rss'])} |")
    for kind, run in (result["new_version"] or {}).items():
        lines.append(f"| {THIRD_VERSION} lands, main job again ({kind} scoring)"
                     f"{'' if run['ok'] else ' (FAILED)'} | {run['wall']:.1f} s | "
                     f"{run['cpu']:.1f} s | {gb(run['peak_rss'])} |")
        for step in run["scoring_steps"]:
            lines.append(f"| ... query_scores {step['partition']} ({step['engine']}) | "
                         f"{step['wall']:.1f} s | {step.get('cpu', 0.0):.1f} s | "
                         f"{gb(step['peak_rss'])} |")
    cli = result["score_report"]
    if cli is None:
        return "\n".join(lines)
    lines.append(f"| ndcg-eval score --report ({VERSIONS[1]}){'' if cli['ok'] else ' (FAILED)'}"
                 f" | {cli['wall']:.1f} s | {cli['cpu']:.1f} s | {gb(cli['peak_rss'])} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
