"""The worklist of holes end to end: ``ndcg-eval holes --out`` beside ``ndcg-eval score`` on the
same files, wall time and peak RSS of each process.

    python benchmarks/worklist.py [--rows 1M] [--rows 10M] [--repeat N] [--data DIR]

The data is ``benchmarks/generate.py``'s (one ranker, 100 candidates per query, about 88% of
them holes), made in ``--data`` (default ``benchmarks/data/``) on first use of a size and reused
after. Each command runs as users run it, in a process of its own, Python start-up and imports
included; with ``--repeat N`` the rounds alternate the two commands and the wall and CPU
(user + system) times are the medians (this shared machine's speed drifts over minutes; CPU
time drifts less), the peak RSS the largest (``os.wait4``). ``score`` is the yardstick: the
worklist ranks every hole by what-if scorings of its query, and its cost is given as a multiple
of one scoring's.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import CANDIDATES, DATA, SEED, data_paths, generate, size_rows  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
COMMAND = [sys.executable, "-m", "evaluation_pipeline"]


def measured(argv: list[str]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in GB) of one command in a process of its own."""
    started = time.perf_counter()
    child = subprocess.Popen([*COMMAND, *argv], cwd=REPO, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(argv[:1])} failed: {child.stderr.read().decode()[-2000:]}")
    child.stderr.close()
    # ru_maxrss is in KiB on Linux.
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024 / 1e9


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=size_rows, action="append",
                        help="candidate rows: 1M, 10M, 1_000_000 (repeat for several); default 1M")
    parser.add_argument("--repeat", type=int, default=1, help="rounds (median wall time)")
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args(argv)
    print("| rows | command | wall s | CPU s | peak RSS GB | x score (wall) |")
    print("|---|---|---|---|---|---|")
    for rows in args.rows or [1_000_000]:
        judgments, run = data_paths(rows, args.data)
        if not (judgments.exists() and run.exists()):
            generate(rows, CANDIDATES, SEED, args.data)
        inputs = ["--judgments", str(judgments), "--run", str(run)]
        walls: dict[str, list[float]] = {"score": [], "holes": []}
        cpus: dict[str, list[float]] = {"score": [], "holes": []}
        peaks: dict[str, float] = {"score": 0.0, "holes": 0.0}
        with tempfile.TemporaryDirectory(prefix="worklist-bench-") as folder:
            for round_ in range(args.repeat):
                for name, extra in (("score", ["--out", f"{folder}/score-{round_}"]),
                                    ("holes", ["--out", f"{folder}/worklist.csv"])):
                    wall, cpu, peak = measured([name, *inputs, *extra])
                    walls[name].append(wall)
                    cpus[name].append(cpu)
                    peaks[name] = max(peaks[name], peak)
        score_wall = statistics.median(walls["score"])
        for name in ("score", "holes"):
            wall = statistics.median(walls[name])
            print(f"| {rows:,} | `ndcg-eval {name}` | {wall:.2f} | "
                  f"{statistics.median(cpus[name]):.2f} | {peaks[name]:.2f} | "
                  f"{wall / score_wall:.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
