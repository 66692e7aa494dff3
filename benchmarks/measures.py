"""The TREC Deep Learning set in one pass, against nDCG@10 alone and against pytrec_eval.

    python benchmarks/measures.py [--rows 1M 10M] [--repeat 3] [--no-pytrec-eval]

On benchmarks/generate.py's data (made when absent), under the trec_eval profile (AP is not
defined under ties: average), in memory, each compiled kernel called once before it is timed:

- ``nDCG@10`` alone by the NDCG kernel (``metric.kernels.dcg.score_blocks``, as
  ``metric.ndcg.score_candidates`` calls it: its compiled pass only, two threads);
- ``nDCG@10`` alone and the set ``nDCG@10``, ``RR(rel=2)@10``, ``AP(rel=2)@100``, ``R@100`` by
  the measures' pass (``metric.measures.kernels.score_measures``: one thread, bounds included),
  over the candidates already merged with their grades and ranked;
- pytrec_eval on the same four (its ``recip_rank`` has no cutoff; ``ndcg_cut.10`` and
  ``recall.100`` at relevance level 1, ``recip_rank`` and ``map_cut.100`` at 2): its
  ``evaluate`` calls only, the dicts it reads built beforehand.

Wall time and the process's CPU time, best of ``--repeat``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.generate import CANDIDATES, DATA, SEED, data_paths, generate, size_rows  # noqa: E402
from evaluation_pipeline.metric import ndcg  # noqa: E402
from evaluation_pipeline.metric.kernels.codes import GRADED, UNJUDGED, UNKNOWN  # noqa: E402
from evaluation_pipeline.spec import profile, spec_from_mapping  # noqa: E402

TREC_DL = ["nDCG@10", "RR(rel=2)@10", "AP(rel=2)@100", "R@100"]


def best(repeat: int, call) -> tuple[float, float]:
    """(wall, CPU) seconds of ``call()``, the least of ``repeat`` runs each."""
    walls, cpus = [], []
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        call()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus)


def ndcg_kernel_seconds(run: pl.DataFrame, judgments: pl.DataFrame, spec, repeat: int):
    """The NDCG kernel's compiled pass inside metric.ndcg.score_candidates, timed."""
    from evaluation_pipeline.metric.hashing import pool_blocks

    blocks = pool_blocks(run)
    index = ndcg.index_judgments(judgments, spec)
    original = ndcg._score_halves
    timings = []

    def timed(kernel, arguments):
        wall, cpu = time.perf_counter(), time.process_time()
        out = original(kernel, arguments)
        timings.append((time.perf_counter() - wall, time.process_time() - cpu))
        return out

    ndcg._score_halves = timed
    try:
        ndcg.score_candidates(blocks, index, spec)  # compiles, or loads the cache
        timings.clear()
        for _ in range(repeat):
            ndcg.score_candidates(blocks, index, spec)
    finally:
        ndcg._score_halves = original
    return min(t[0] for t in timings), min(t[1] for t in timings)


def kernel_inputs(run: pl.DataFrame, judgments: pl.DataFrame):
    """The measures' kernel inputs: candidates merged with their grades and ranked under
    trec_eval ties (score high to low, doc_id descending), and each query's judgments."""
    from evaluation_pipeline.metric.measures.kernels import Judged, Ranked

    marks = judgments.select("query_id", "doc_id", "grade", "grade_status")
    candidates = run.select("query_id", "doc_id", "score").join(
        marks, on=["query_id", "doc_id"], how="left").sort(
        ["query_id", "score", "doc_id"], descending=[False, True, True])
    status = candidates["grade_status"]
    cls = np.where(status.is_null().to_numpy(), UNJUDGED,
                   np.where((status == "unknown").fill_null(False).to_numpy(), UNKNOWN, GRADED))
    queries = candidates["query_id"]
    boundaries = np.flatnonzero((queries != queries.shift(1)).fill_null(True).to_numpy())
    starts = np.r_[boundaries, candidates.height].astype(np.int64)
    ranked = Ranked(starts, candidates["score"].to_numpy().astype(np.float64),
                    cls.astype(np.int8), candidates["grade"].fill_null(0).to_numpy()
                    .astype(np.int64))
    order = pl.DataFrame({"query_id": queries.gather(boundaries)}).with_row_index("q")
    per_query = marks.join(order, on="query_id", how="inner")
    graded = per_query.filter(pl.col("grade_status") == "graded").sort("q")
    counts = np.bincount(graded["q"].to_numpy(), minlength=order.height)
    unknown_rows = np.bincount(per_query.filter(pl.col("grade_status") == "unknown")["q"]
                               .to_numpy(), minlength=order.height)
    has_rows = np.bincount(per_query["q"].to_numpy(), minlength=order.height) > 0
    q_of_row = np.repeat(np.arange(order.height), np.diff(starts))
    unknown_candidates = np.bincount(q_of_row[cls == UNKNOWN], minlength=order.height)
    judged = Judged(np.r_[0, np.cumsum(counts)].astype(np.int64),
                    graded["grade"].to_numpy().astype(np.int64), has_rows,
                    unknown_rows.astype(np.int64),
                    (unknown_rows - unknown_candidates).astype(np.int64))
    return ranked, judged


def measures_seconds(ranked, judged, names, spec, repeat: int):
    from evaluation_pipeline.metric.measures.plan import score_ranked

    score_ranked(ranked, judged, names, spec)  # compiles, or loads the cache
    return best(repeat, lambda: score_ranked(ranked, judged, names, spec))


def pytrec_eval_seconds(run: pl.DataFrame, judgments: pl.DataFrame, repeat: int):
    import pytrec_eval

    qrels: dict = {}
    for q, d, g in judgments.filter(pl.col("grade_status") == "graded").select(
            "query_id", "doc_id", "grade").iter_rows():
        qrels.setdefault(q, {})[d] = int(g)
    runs: dict = {}
    for q, d, s in run.select("query_id", "doc_id", "score").iter_rows():
        runs.setdefault(q, {})[d] = float(s)
    level_1 = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"})
    level_2 = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "map_cut.100"},
                                             relevance_level=2)
    return best(repeat, lambda: (level_1.evaluate(runs), level_2.evaluate(runs)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=size_rows, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=DATA)
    parser.add_argument("--no-pytrec-eval", action="store_true")
    args = parser.parse_args(argv)
    spec = profile("trec_eval")
    at_10 = spec_from_mapping({"profile": "trec_eval", "cutoffs": [10]})
    for rows in args.rows:
        judgments_path, run_path = data_paths(rows, args.out)
        if not (judgments_path.exists() and run_path.exists()):
            generate(rows, CANDIDATES, SEED, args.out)
        run, judgments = pl.read_parquet(run_path), pl.read_parquet(judgments_path)
        ranked, judged = kernel_inputs(run, judgments)
        lines = [
            ("nDCG@10, the NDCG kernel (2 threads)",
             ndcg_kernel_seconds(run, judgments, at_10, args.repeat)),
            ("nDCG@10, the measures' pass",
             measures_seconds(ranked, judged, ["nDCG@10"], spec, args.repeat)),
            ("TREC DL set, the measures' pass",
             measures_seconds(ranked, judged, TREC_DL, spec, args.repeat)),
        ]
        if not args.no_pytrec_eval:
            lines.append(("TREC DL set, pytrec_eval", pytrec_eval_seconds(run, judgments,
                                                                          args.repeat)))
        print(f"{rows:,} rows, {len(ranked.starts) - 1:,} queries (trec_eval profile, "
              "bounds included)")
        for label, (wall, cpu) in lines:
            print(f"  {label:<40} wall {wall:7.3f} s   CPU {cpu:7.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
