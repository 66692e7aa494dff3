"""Time NDCG@10 tools end to end, Parquet in, per-query results out, each in its own process.

    python benchmarks/run.py --rows 1M --rows 10M [--tools ndcg-eval,streaming,...] [--repeat N]
        [--data DIR]

Per tool: wall time (the median of ``--repeat`` rounds, each running every tool once), peak RSS of
its process (``os.wait4``), candidate rows per second, the ratio to the floor (reading the needed
columns into Arrow plus one sort) and to pytrec_eval (and its inverse, the speed-up),
and the largest absolute difference of its per-query NDCG@10 from ours under the matching
profile (trec_eval for pytrec_eval, ir_measures and ranx; sklearn for scikit-learn). Data comes
from ``benchmarks/generate.py`` in ``--data`` (default ``benchmarks/data/``), generated on first
use of a size. Prints a markdown table.

``ndcg-eval`` is ``ndcg-eval score`` as users run it, without ``--engine`` (the ``auto`` choice:
in memory where that fits the memory budget, streaming past it); ``streaming`` pins the
streaming engine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from generate import CANDIDATES, SEED, data_paths, generate, size_rows

from evaluation_pipeline.io.storage import PER_QUERY_FILE

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
PYTHON = sys.executable
TOOLS = ("floor", "ndcg-eval", "streaming", "pytrec_eval", "ir_measures", "ranx", "sklearn")
PROFILE = {"pytrec_eval": "trec_eval", "ir_measures": "trec_eval", "ranx": "trec_eval",
           "sklearn": "sklearn", "ndcg-eval": "trec_eval", "streaming": "trec_eval"}
# Past these sizes a tool needs more than this machine's 24 GB (ranx took 6.4 to 6.7 GB at 10M).
MAX_ROWS = {"sklearn": 10_000_000, "ranx": 10_000_000, "ir_measures": 10_000_000,
            "pytrec_eval": 10_000_000}


# -- what each child process does ---------------------------------------------------------------


def child(tool: str, judgments: str, run: str, out: str) -> None:
    import polars as pl

    if tool == "floor":
        import pyarrow.parquet as pq

        table = pq.read_table(run, columns=["query_id", "doc_id", "score"], pre_buffer=False)
        pq.read_table(judgments, columns=["query_id", "doc_id", "grade", "grade_status"])
        pl.from_arrow(table).sort(["query_id", "score"], descending=[False, True])
        return
    qrels = pl.read_parquet(judgments, columns=["query_id", "doc_id", "grade", "grade_status"])
    qrels = qrels.filter(pl.col("grade_status") == "graded")
    candidates = pl.read_parquet(run, columns=["query_id", "doc_id", "score"])
    if tool in ("pytrec_eval", "ir_measures", "ranx"):
        if tool == "pytrec_eval":
            import pytrec_eval

            qrel_dict, run_dict = _nested(qrels, "grade", int), _nested(candidates, "score", float)
            measured = pytrec_eval.RelevanceEvaluator(qrel_dict, {"ndcg_cut.10"}).evaluate(run_dict)
            result = {q: v["ndcg_cut_10"] for q, v in measured.items()}
        elif tool == "ir_measures":
            import ir_measures

            rows = ir_measures.iter_calc(
                [ir_measures.nDCG @ 10],
                qrels.select("query_id", "doc_id", pl.col("grade").alias("relevance")).to_pandas(),
                candidates.to_pandas(),
            )
            result = {m.query_id: m.value for m in rows}
        else:
            from ranx import Qrels, Run, evaluate

            ids = {"query_id": object, "doc_id": object}  # ranx wants object ids
            qrel = Qrels.from_df(qrels.to_pandas().astype(ids), q_id_col="query_id",
                                 doc_id_col="doc_id", score_col="grade")
            ranked = Run.from_df(candidates.to_pandas().astype(ids), q_id_col="query_id",
                                 doc_id_col="doc_id", score_col="score")
            evaluate(qrel, ranked, "ndcg@10", make_comparable=True)
            result = dict(ranked.scores["ndcg@10"])
        pl.DataFrame({"query_id": list(result), "ndcg": list(result.values())}).write_parquet(out)
        return
    if tool == "sklearn":
        import numpy as np
        from sklearn.metrics._ranking import _ndcg_sample_scores

        joined = candidates.join(qrels.select("query_id", "doc_id", "grade"),
                                 on=["query_id", "doc_id"], how="left").sort("query_id")
        width = joined.group_by("query_id").len()["len"].unique()
        if len(width) != 1:
            raise SystemExit("scikit-learn needs the same number of candidates per query")
        shape = (-1, int(width[0]))
        y_true = joined["grade"].fill_null(0).to_numpy().reshape(shape).astype(float)
        y_score = joined["score"].to_numpy().reshape(shape)
        values = _ndcg_sample_scores(y_true, y_score, k=10, ignore_ties=False)
        queries = joined["query_id"].to_numpy().reshape(shape)[:, 0]
        # sklearn scores 0 where the ideal is 0, as we do under `zero`
        keep = y_true.max(axis=1) > 0
        pl.DataFrame({"query_id": queries, "ndcg": np.where(keep, values, 0.0)}).write_parquet(out)
        return
    raise SystemExit(f"unknown tool {tool}")


def _nested(frame, value: str, cast) -> dict:
    out: dict = {}
    for q, d, v in frame.select("query_id", "doc_id", value).iter_rows():
        out.setdefault(q, {})[d] = cast(v)
    return out


# -- the parent: time each child, compare ---------------------------------------------------------


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (GB) of one child process (and what it waited for)."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{argv[:4]} failed with {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_maxrss / 1024 / 1024  # ru_maxrss is in KiB on Linux


def reference(judgments: Path, run: Path, name: str, scratch: Path):
    import polars as pl

    from evaluation_pipeline.engines import score_files
    from evaluation_pipeline.spec import profile

    out = scratch / f"reference-{name}.parquet"
    if not out.exists():
        score_files(judgments, run, profile(name).replace(cutoffs=(10,)), out,
                    engine="streaming", progress=False)
    return pl.read_parquet(out, columns=["query_id", "ndcg"]).drop_nulls("ndcg")


def agreement(tool: str, out: Path, judgments: Path, run: Path, scratch: Path) -> str:
    import polars as pl

    ours = reference(judgments, run, PROFILE[tool], scratch)
    theirs = pl.read_parquet(out, columns=["query_id", "ndcg"]).drop_nulls("ndcg")
    both = ours.join(theirs, on="query_id", suffix="_theirs")
    diff = (both["ndcg"] - both["ndcg_theirs"]).abs().max()
    text = f"{diff:.1e} ({both.height:,} q)"
    # Queries only one side scored: a tool that drops (or invents) queries must show it.
    only_ours = ours.join(theirs, on="query_id", how="anti").height
    only_theirs = theirs.join(ours, on="query_id", how="anti").height
    if only_ours or only_theirs:
        text += f"; {only_ours:,} q only ours, {only_theirs:,} q only theirs"
    if tool == "ranx":
        # ranx ranks by an unstable sort of the scores: tied documents land in an order no
        # declared rule gives. Where the top 11 scores of a query are distinct, NDCG@10 does
        # not depend on the tie order, and the values must agree.
        top = pl.col("score").sort(descending=True).head(11)
        untied = (pl.read_parquet(run, columns=["query_id", "score"]).group_by("query_id")
                  .agg(untied=top.n_unique() == top.len()).filter("untied"))
        clean = both.join(untied, on="query_id", how="semi")
        clean_diff = (clean["ndcg"] - clean["ndcg_theirs"]).abs().max() if clean.height else 0.0
        text += f"; {clean_diff:.1e} on the {clean.height:,} q whose top 11 scores are distinct"
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=size_rows, action="append",
                        help="1M, 10M, 100M (data generated first when missing)")
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs per tool; the table shows the median wall time")
    parser.add_argument("--data", type=Path, default=DATA,
                        help="folder of the generated files (default benchmarks/data)")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(*args.child)
        return 0
    tools = args.tools.split(",")
    lines = ["| rows | tool | wall s | peak RSS GB | rows/s | x floor | x pytrec_eval | "
             "speed-up vs pytrec_eval | max abs diff vs ours |",
             "|---|---|---|---|---|---|---|---|---|"]
    tags = []
    for rows in args.rows or [1_000_000, 10_000_000]:
        judgments, run = data_paths(rows, args.data)
        if not (run.exists() and judgments.exists()):
            print(f"generating {run.name} and {judgments.name} (seed {SEED}) ...", file=sys.stderr)
            generate(rows, CANDIDATES, SEED, args.data)
        tag = run.stem.removeprefix("run-")  # 10M, as in the file names
        tags.append(tag)
        scratch = Path(tempfile.mkdtemp(prefix=f"bench-{tag}-"))
        commands = {}
        for tool in tools:
            if rows > MAX_ROWS.get(tool, rows):
                continue
            out = scratch / f"{tool}.parquet"
            if tool in ("ndcg-eval", "streaming"):  # the command as users run it
                folder = scratch / tool
                argv = [str(Path(PYTHON).parent / "ndcg-eval"), "score", "--judgments",
                        str(judgments), "--run", str(run), "--profile", "trec_eval",
                        "--cutoff", "10", "--out", str(folder)]
                if tool == "streaming":
                    argv += ["--engine", "streaming"]
                out = folder / PER_QUERY_FILE
            else:
                argv = [PYTHON, __file__, "--child", tool, str(judgments), str(run), str(out)]
            commands[tool] = (argv, out)
        # Rounds of every tool once, so that a machine whose speed drifts over minutes slows
        # all tools alike instead of the ones that happen to run late.
        timings: dict[str, list] = {tool: [] for tool in commands}
        for _ in range(max(args.repeat, 1)):
            for tool, (argv, _) in commands.items():
                timings[tool].append(timed(argv))
        results = {}
        for tool, (_, out) in commands.items():
            runs = timings[tool]
            wall = statistics.median(w for w, _ in runs)
            peak = max(p for _, p in runs)
            # The streaming engine is the reference the others are compared with.
            agree = ("" if tool in ("floor", "streaming")
                     else agreement(tool, out, judgments, run, scratch))
            results[tool] = (wall, peak, agree)
            walls = " ".join(f"{w:.2f}" for w, _ in runs)
            print(f"{tag} {tool}: {wall:.2f}s ({walls}) {peak:.2f} GB {agree}", file=sys.stderr)
        floor = results.get("floor", (None,))[0]
        pytrec = results.get("pytrec_eval", (None,))[0]
        for tool, (wall, peak, agree) in results.items():
            x_floor = f"{wall / floor:.2f}" if floor else "-"
            x_pytrec = f"{wall / pytrec:.3f}" if pytrec else "-"
            speed_up = f"{pytrec / wall:.2f}" if pytrec else "-"
            lines.append(f"| {tag} | {tool} | {wall:.2f} | {peak:.2f} | {rows / wall:,.0f} | "
                         f"{x_floor} | {x_pytrec} | {speed_up} | {agree} |")
    print("\n".join(lines))
    args.data.mkdir(parents=True, exist_ok=True)
    (args.data / f"last-run-{'-'.join(tags)}.json").write_text(json.dumps(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
