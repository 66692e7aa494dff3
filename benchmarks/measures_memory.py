"""Peak memory of ``ndcg-eval score`` for nDCG@10 alone against the TREC DL set.

    python benchmarks/measures_memory.py [--rows 100M] [--repeat 2] [--files grouped,sorted]
        [--data DIR] [--engine auto] [--logs DIR] [--stages]

The command as users run it, without ``--engine`` (``auto``: in memory while the in-memory
engine's estimate fits the memory budget, streaming past it, so at 100M rows it streams),
``--profile trec_eval`` and either ``--measure nDCG@10`` or the four measures ``nDCG@10``,
``RR(rel=2)@10``, ``AP(rel=2)@100``, ``R@100``, each in a process of its own, on
benchmarks/generate.py's data: ``grouped``, the run grouped by query but not sorted (ids
unpadded, queries in numeric order: ``grouped.py``'s ``run-grouped-NM.parquet`` and its
judgments), and ``sorted``, generate.py's own files (sorted by query_id). Files are made when
absent (``generate.py``, then ``grouped.plain_ids``; not ``grouped.py``'s DuckDB copies).

Per command: wall time, CPU time (user + system) and peak RSS from ``os.wait4`` (GB = 1e9
bytes, as grouped.py prints them), plus the resident memory polled every 0.2 s from /proc, to
say when the peak came. Each of ``--repeat`` rounds runs every (file, measures) pair in turn;
the table gives the median wall and CPU and the largest peak of the rounds, and the set's peak
over nDCG@10 alone's (the target: at most 1.1x). Every run is printed as it ends.

``--stages``: one more run of each (file, measures) pair, the command's ``main`` called in a
child process with some of its steps wrapped, each printing the process's high-water mark of
resident memory (``VmHWM``, exact) and its resident memory (``VmRSS``) as it starts and ends:
the streaming engine's stream (``engines.streaming.stream._stream``; what comes before it,
such as a grouped run's grouping pass, shows in the high-water mark as it starts), within it
the copy that adds the lineage columns
(``with_lineage_file``, which sorts the rows of a grouped run), then the command's read of the
rows for the summary (``_read_scores``), ``summarize``, the summary's stamp of the file
(``integrity.dataset_stamp``) and the table of the other measures. The step whose end raises
the high-water mark holds the peak. ``--repeat 0 --stages`` runs only these.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import CANDIDATES, DATA, SEED, data_paths, generate, size_rows  # noqa: E402
from grouped import plain_ids  # noqa: E402

TREC_DL = ["nDCG@10", "RR(rel=2)@10", "AP(rel=2)@100", "R@100"]
MEASURES = {"nDCG@10 alone": ["nDCG@10"], "TREC DL set": TREC_DL}


def files(rows: int, data: Path, kinds: list[str]) -> dict[str, tuple[Path, Path]]:
    judgments, run = data_paths(rows, data)
    if not (judgments.exists() and run.exists()):
        generate(rows, CANDIDATES, SEED, data)
    tag = judgments.stem.split("-", 1)[1]
    made = {"sorted": (judgments, run),
            "grouped": (data / f"judgments-grouped-{tag}.parquet",
                        data / f"run-grouped-{tag}.parquet")}
    plain_ids(judgments, made["grouped"][0])
    plain_ids(run, made["grouped"][1])
    return {kind: made[kind] for kind in kinds}


def command(judgments: Path, run: Path, measures: list[str], engine: str, out: Path
            ) -> list[str]:
    argv = [sys.executable, "-m", "evaluation_pipeline", "score", "--judgments", str(judgments),
            "--run", str(run), "--profile", "trec_eval", "--out", str(out)]
    for measure in measures:
        argv += ["--measure", measure]
    return argv + ([] if engine == "auto" else ["--engine", engine])


def rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def timed(argv: list[str], log: Path) -> dict:
    """Wall s, CPU s, peak RSS GB (os.wait4) of one command, and when the polled peak came."""
    samples: list[tuple[float, int]] = []
    started = time.perf_counter()
    with log.open("w") as output:
        process = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT)
        done = threading.Event()

        def poll() -> None:
            while not done.wait(0.2):
                samples.append((time.perf_counter() - started, rss_bytes(process.pid)))

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        _, status, usage = os.wait4(process.pid, 0)
        done.set()
        poller.join()
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"failed ({os.waitstatus_to_exitcode(status)}): {' '.join(argv)}; "
                         f"see {log}")
    at, _ = max(samples, key=lambda s: s[1]) if samples else (0.0, 0)
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
            "peak": usage.ru_maxrss * 1024 / 1e9, "peak_at": at}


def status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def stages_child(argv: list[str]) -> None:
    """``ndcg-eval`` with ``argv``, in this process, some steps wrapped to print the memory
    before and after them; exits as the command does (without the interpreter's teardown)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from evaluation_pipeline.cli import main as cli
    from evaluation_pipeline.cli import score_command
    from evaluation_pipeline.engines.streaming import stream
    from evaluation_pipeline.io import integrity

    started = time.perf_counter()

    def say(what: str) -> None:
        print(f"[stage] {time.perf_counter() - started:6.1f} s  {what:<44} "
              f"RSS {status_kb('VmRSS') / 1e6:5.2f} GB  high-water {status_kb('VmHWM') / 1e6:5.2f}"
              " GB", file=sys.stderr, flush=True)

    def wrap(module, name: str, label: str) -> None:
        original = getattr(module, name)

        def wrapped(*args, **kwargs):
            say(f"{label} starts")
            try:
                return original(*args, **kwargs)
            finally:
                say(f"{label} ends")
        setattr(module, name, wrapped)

    wrap(stream, "_stream", "stream (engine)")
    wrap(stream, "with_lineage_file", "  copy with lineage (with_lineage_file)")
    wrap(score_command, "_read_scores", "read of the rows for the summary")
    wrap(score_command, "summarize", "summarize")
    wrap(integrity, "dataset_stamp", "stamp (integrity.dataset_stamp)")
    wrap(score_command, "other_measures_table", "table of the other measures")
    say("imports done")
    code = cli.main(argv)
    say("command done")
    sys.stdout.flush()
    os._exit(code)


def engine_of(out: Path) -> str:
    try:
        summary = json.loads((out / "summary.json").read_text())
    except (OSError, ValueError):
        return "?"
    return str(summary.get("engine") or summary.get("lineage", {}).get("engine") or "?")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=size_rows, nargs="+", default=[100_000_000])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--files", default="grouped,sorted")
    parser.add_argument("--engine", default="auto", help="auto: no --engine")
    parser.add_argument("--logs", type=Path, help="keep each command's output here")
    parser.add_argument("--stages", action="store_true",
                        help="then run each pair once more, printing memory around its steps")
    parser.add_argument("--child-stages", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_stages is not None:
        stages_child(args.child_stages)
    kinds = args.files.split(",")
    table = ["| rows | file | measures | wall s | CPU s | peak RSS GB | set / alone (peak) |",
             "|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as scratch:
        logs = args.logs or Path(scratch)
        logs.mkdir(parents=True, exist_ok=True)
        for rows in args.rows:
            made = files(rows, args.data, kinds)
            measured: dict = {(kind, label): [] for kind in kinds for label in MEASURES}
            for number in range(args.repeat):
                for kind in kinds:
                    for label, measures in MEASURES.items():
                        out = Path(scratch) / f"{rows}-{kind}-{len(measures)}-{number}"
                        log = logs / f"{rows}-{kind}-{len(measures)}-{number}.log"
                        figures = timed(command(*made[kind], measures, args.engine, out), log)
                        per_query = pq.read_metadata(out / "per_query.parquet").num_rows
                        print(f"{rows:,} rows, {kind}, {label}, round {number + 1}: wall "
                              f"{figures['wall']:.1f} s, CPU {figures['cpu']:.1f} s, peak "
                              f"{figures['peak']:.3f} GB (polled peak at "
                              f"{figures['peak_at']:.0f} s), {per_query:,} per-query rows, "
                              f"engine {engine_of(out)}, load average "
                              f"{os.getloadavg()[0]:.1f}", flush=True)
                        measured[(kind, label)].append(figures)
                        subprocess.run(["rm", "-rf", str(out)], check=True)
            for kind in kinds if args.repeat else []:
                alone = max(m["peak"] for m in measured[(kind, "nDCG@10 alone")])
                for label in MEASURES:
                    runs = measured[(kind, label)]
                    wall = statistics.median(m["wall"] for m in runs)
                    cpu = statistics.median(m["cpu"] for m in runs)
                    peak = max(m["peak"] for m in runs)
                    ratio = f"{peak / alone:.2f}" if label != "nDCG@10 alone" else ""
                    table.append(f"| {rows // 1_000_000}M | {kind} | {label} | {wall:.1f} | "
                                 f"{cpu:.1f} | {peak:.2f} | {ratio} |")
            if args.stages:
                for kind in kinds:
                    for label, measures in MEASURES.items():
                        out = Path(scratch) / f"{rows}-{kind}-{len(measures)}-stages"
                        argv = command(*made[kind], measures, args.engine, out)
                        print(f"{rows:,} rows, {kind}, {label}, steps:", flush=True)
                        lines = subprocess.run(
                            [sys.executable, __file__, "--child-stages", *argv[3:]],
                            capture_output=True, text=True, check=True).stderr.splitlines()
                        print("\n".join(line for line in lines if line.startswith("[stage]")),
                              flush=True)
                        subprocess.run(["rm", "-rf", str(out)], check=True)
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
