"""The TREC Deep Learning set in one pass, against nDCG@10 alone and against pytrec_eval.

    python benchmarks/measures.py [--rows 1M 10M] [--repeat 3] [--no-pytrec-eval] [--out DIR]
        [--per-measure]

On benchmarks/generate.py's data (made when absent), in memory, under the ``trec_eval``
profile with its ``measures`` set to ``nDCG@10`` alone, then to the TREC DL set ``nDCG@10``,
``RR(rel=2)@10``, ``AP(rel=2)@100``, ``R@100`` (bounds over the holes included, as always):

- ``ndcg.score``: the whole in-memory scoring from the two frames (blocks, judgment index,
  pool holes, ``score_candidates``, missing_from_run, the sort), what the local engine runs
  once it has read and validated them;
- ``score_candidates``: that function alone, on blocks and an index built beforehand (what
  every engine calls per batch: local, streaming, Spark), with its steps timed inside it: the
  NDCG kernel's pass (``_score_halves``, two threads; with the set, the other measures are
  scored in it, ``score_blocks_and_measures``), the measures' arguments made before it
  (``_measure_arguments``: their checks, plan and conventions) and the output frame
  (``_assemble``);
- pytrec_eval on the same four (``ndcg_cut.10`` and ``recall.100`` at relevance level 1,
  ``recip_rank`` and ``map_cut.100`` at 2: two evaluators, since it has one relevance level
  per evaluator; its ``recip_rank`` has no cutoff): its ``evaluate`` calls alone, the dicts it
  reads built beforehand, and those dicts built from the same frames plus ``evaluate``.

Every compiled kernel is called once before it is timed. Each of ``--repeat`` rounds runs
nDCG@10 alone and the set in turn (so the machine's drift slows both alike); wall time and the
process's CPU time (every thread) are each the least of the rounds. Steps are the least of
the rounds too. The ratios printed are the set over nDCG@10 alone (CPU, wall) and
pytrec_eval's wall over the set's. Then the per-query values of the set are compared with
pytrec_eval's on the queries both score (RR@10 against ``recip_rank`` cut at 10: 0 below 1/10).

``--per-measure``: ``score_ranked`` (the measures' pass on its own, bounds included) on the
lists ``ranked_blocks`` makes of the set's blocks, for each of the set's other measures alone
and for the three together, best of ``--repeat``: which measure the pass spends its time on;
then the NDCG kernel's pass with each of them as the spec's one other measure, beside it alone.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.generate import CANDIDATES, DATA, SEED, data_paths, generate, size_rows  # noqa: E402
from evaluation_pipeline.metric import ndcg  # noqa: E402
from evaluation_pipeline.metric.hashing import judgment_blocks, pool_blocks  # noqa: E402
from evaluation_pipeline.spec import profile  # noqa: E402

TREC_DL = ["nDCG@10", "RR(rel=2)@10", "AP(rel=2)@100", "R@100"]
# pytrec_eval's name of each measure of the set, and its relevance level.
PYTREC = {"nDCG@10": ("ndcg_cut_10", 1), "RR(rel=2)@10": ("recip_rank", 2),
          "AP(rel=2)@100": ("map_cut_100", 2), "R@100": ("recall_100", 1)}


def clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def since(start: tuple[float, float]) -> tuple[float, float]:
    return time.perf_counter() - start[0], time.process_time() - start[1]


class Steps:
    """Wall and CPU time of named functions of the scoring path, per call, while installed:
    each is replaced in its module by a wrapper that times it (imports made inside the
    functions that call them read the module's attribute at the call, so they see it)."""

    def __init__(self) -> None:
        self.places = [
            ("measures' arguments (_measure_arguments)", ndcg, "_measure_arguments"),
            ("NDCG kernel (_score_halves, 2 threads)", ndcg, "_score_halves"),
            ("output frame (_assemble)", ndcg, "_assemble"),
        ]
        self.seen: dict[str, list[float]] = {}

    def __enter__(self) -> Steps:
        self.originals = [getattr(module, name) for _, module, name in self.places]
        for (label, module, name), original in zip(self.places, self.originals):
            setattr(module, name, self._timed(label, original))
        return self

    def __exit__(self, *exc) -> None:
        for (_, module, name), original in zip(self.places, self.originals):
            setattr(module, name, original)

    def _timed(self, label: str, function):
        def timed(*args, **kwargs):
            start = clock()
            try:
                return function(*args, **kwargs)
            finally:
                wall, cpu = since(start)
                self.seen[label][0] += wall
                self.seen[label][1] += cpu
        return timed

    def reset(self) -> None:
        self.seen = {label: [0.0, 0.0] for label, _, _ in self.places}


def timed_rounds(repeat: int, calls: dict, steps: Steps | None = None):
    """{label: ((wall, CPU), {step: (wall, CPU)})}: each call run once per round, in turn, the
    least of the rounds of each figure."""
    best: dict = {label: [float("inf"), float("inf"), {}] for label in calls}
    for _ in range(repeat):
        for label, call in calls.items():
            if steps is not None:
                steps.reset()
            start = clock()
            call()
            wall, cpu = since(start)
            entry = best[label]
            entry[0], entry[1] = min(entry[0], wall), min(entry[1], cpu)
            if steps is not None:
                for step, (s_wall, s_cpu) in steps.seen.items():
                    old = entry[2].get(step, (float("inf"), float("inf")))
                    entry[2][step] = (min(old[0], s_wall), min(old[1], s_cpu))
    return {label: ((w, c), s) for label, (w, c, s) in best.items()}


def pytrec_dicts(run: pl.DataFrame, judgments: pl.DataFrame):
    qrels: dict = {}
    for q, d, g in judgments.filter(pl.col("grade_status") == "graded").select(
            "query_id", "doc_id", "grade").iter_rows():
        qrels.setdefault(q, {})[d] = int(g)
    runs: dict = {}
    for q, d, s in run.select("query_id", "doc_id", "score").iter_rows():
        runs.setdefault(q, {})[d] = float(s)
    return qrels, runs


def pytrec_evaluate(qrels: dict, runs: dict) -> tuple[dict, dict]:
    import pytrec_eval

    level_1 = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"})
    level_2 = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "map_cut.100"},
                                             relevance_level=2)
    return level_1.evaluate(runs), level_2.evaluate(runs)


def agreement(ours: pl.DataFrame, theirs: dict) -> list[str]:
    """Per measure of the set: the largest absolute difference over the queries both score."""
    lines = []
    for measure, (name, _) in PYTREC.items():
        mine = ours.filter(pl.col("measure") == measure).select("query_id", "value").drop_nulls()
        other = {q: v[name] for q, v in theirs.items() if name in v}
        if name == "recip_rank":  # RR@10: the first relevant place past 10 counts 0
            other = {q: (v if v >= 0.1 else 0.0) for q, v in other.items()}
        frame = pl.DataFrame({"query_id": list(other), "theirs": list(other.values())},
                             schema={"query_id": pl.String, "theirs": pl.Float64})
        both = mine.join(frame, on="query_id")
        diff = (both["value"] - both["theirs"]).abs().max() if both.height else float("nan")
        lines.append(f"  {measure:<14} vs pytrec_eval {name:<12} max abs diff {diff:.1e} "
                     f"over {both.height:,} queries ({mine.height - both.height:,} only ours, "
                     f"{len(other) - both.height:,} only theirs)")
    return lines


def per_measure(blocks, index, spec, repeat: int) -> list[str]:
    """score_ranked's time for each of ``spec``'s other measures alone and for all of them, on
    the lists ``ranked_blocks`` makes; then the NDCG kernel's pass (``_score_halves``) with
    each as the one other measure, and with none."""
    from evaluation_pipeline.metric.kernels.loading import read_only
    from evaluation_pipeline.metric.measures.kernels import Judged, Ranked
    from evaluation_pipeline.metric.measures.plan import score_ranked
    from evaluation_pipeline.metric.measures.ranking import ranked_blocks

    kept = {}
    original = ndcg._score_halves

    def keep(kernel, arguments, more=()):
        kept["arguments"] = arguments
        return original(kernel, arguments, more)

    ndcg._score_halves = keep
    try:
        ndcg.score_candidates(blocks, index, spec)
    finally:
        ndcg._score_halves = original
    candidates, judgments, rules = kept["arguments"]
    grades = read_only(index.grades["grade"].to_numpy().astype("float64"))
    arrays = ranked_blocks(candidates, judgments._replace(gain=grades), rules)
    ranked, judged = Ranked(*arrays[:4]), Judged(*arrays[4:])
    others = [str(m) for m in spec.other_measures]
    lists = {name: [name] for name in others}
    lists["all three"] = others
    measured = timed_rounds(repeat, {
        name: (lambda names=names: score_ranked(ranked, judged, names, spec,
                                                top_grade=index.top_grade))
        for name, names in lists.items()})
    lines = [f"  score_ranked, {name:<31} wall {wall:7.3f} s   CPU {cpu:7.3f} s"
             for name, ((wall, cpu), _) in measured.items()]
    specs = {"none": spec.replace(measures=["nDCG@10"])}
    specs.update({name: spec.replace(measures=["nDCG@10", name]) for name in others})
    specs["all three"] = spec
    kernels = {}
    for name, one in specs.items():
        kernels[name] = (lambda one=one: ndcg._score_halves(
            *_kernel_call(kept["arguments"], index, one)))
        kernels[name]()  # compiled, or loaded, before it is timed
    measured = timed_rounds(repeat, kernels)
    lines += [f"  NDCG kernel's pass, other measures: {name:<17} wall {wall:7.3f} s   "
              f"CPU {cpu:7.3f} s" for name, ((wall, cpu), _) in measured.items()]
    return lines


def _kernel_call(arguments, index, spec):
    """``_score_halves``' arguments as ``score_candidates`` makes them for ``spec``."""
    from evaluation_pipeline.metric.kernels.dcg import score_blocks
    from evaluation_pipeline.metric.measures.kernels import score_blocks_and_measures

    if not spec.other_measures:
        return score_blocks, arguments
    return (score_blocks_and_measures, arguments,
            ndcg._measure_arguments(arguments, index, spec))


def one_size(rows: int, args: argparse.Namespace, specs: dict) -> None:
    """Every figure at one size."""
    judgments_path, run_path = data_paths(rows, args.out)
    if not (judgments_path.exists() and run_path.exists()):
        generate(rows, CANDIDATES, SEED, args.out)
    run, judgments = pl.read_parquet(run_path), pl.read_parquet(judgments_path)
    blocks = pool_blocks(run)
    indexes = {label: ndcg.index_judgments(judgment_blocks(judgments), spec)
               for label, spec in specs.items()}
    results = {}
    for label, spec in specs.items():  # compiles every kernel, or loads the cache
        results[label] = ndcg.score(run, judgments, spec)
        ndcg.score_candidates(blocks, indexes[label], spec)
    print(f"{rows:,} rows, {blocks.n_blocks:,} (ranker, query) blocks, trec_eval profile, "
          f"best of {args.repeat}; load average {os.getloadavg()[0]:.1f} at the start")
    whole = timed_rounds(args.repeat, {
        label: (lambda spec=spec: ndcg.score(run, judgments, spec))
        for label, spec in specs.items()})
    with Steps() as steps:
        inner = timed_rounds(args.repeat, {
            label: (lambda spec=spec, label=label: ndcg.score_candidates(
                blocks, indexes[label], spec))
            for label, spec in specs.items()}, steps)
    for path, measured in (("ndcg.score", whole), ("score_candidates", inner)):
        for label in specs:
            (wall, cpu), parts = measured[label]
            print(f"  {path + ', ' + label:<40} wall {wall:7.3f} s   CPU {cpu:7.3f} s")
            for step, (s_wall, s_cpu) in parts.items():
                if s_cpu > 0 or s_wall > 0:
                    print(f"      {step:<40} wall {s_wall:7.3f} s   CPU {s_cpu:7.3f} s")
        (a_wall, a_cpu), _ = measured["nDCG@10 alone"]
        (s_wall, s_cpu), _ = measured["TREC DL set"]
        print(f"  {path}: the set over nDCG@10 alone: CPU {s_cpu / a_cpu:.2f}x, "
              f"wall {s_wall / a_wall:.2f}x (target: CPU at most 1.3x)")
    if args.per_measure:
        print("\n".join(per_measure(blocks, indexes["TREC DL set"], specs["TREC DL set"],
                                    args.repeat)))
    if not args.no_pytrec_eval:
        dicts = {}

        def build():
            dicts["qrels"], dicts["runs"] = pytrec_dicts(run, judgments)

        build()
        first, second = pytrec_evaluate(dicts["qrels"], dicts["runs"])
        theirs = {q: {**first.get(q, {}), **second.get(q, {})}
                  for q in first.keys() | second.keys()}
        measured = timed_rounds(args.repeat, {
            "evaluate": lambda: pytrec_evaluate(dicts["qrels"], dicts["runs"]),
            "dicts": build,
        })
        (e_wall, e_cpu), _ = measured["evaluate"]
        (d_wall, d_cpu), _ = measured["dicts"]
        print(f"  {'pytrec_eval, TREC DL set, evaluate':<40} wall {e_wall:7.3f} s   "
              f"CPU {e_cpu:7.3f} s")
        print(f"  {'pytrec_eval, its dicts from the frames':<40} wall {d_wall:7.3f} s   "
              f"CPU {d_cpu:7.3f} s")
        for path, measured_path in (("ndcg.score", whole), ("score_candidates", inner)):
            (s_wall, _), _ = measured_path["TREC DL set"]
            print(f"  pytrec_eval's wall over {path}'s, the set: {e_wall / s_wall:.2f}x "
                  f"(evaluate alone), {(e_wall + d_wall) / s_wall:.2f}x (dicts and "
                  "evaluate) (target: at least 5x)")
        print("\n".join(agreement(results["TREC DL set"], theirs)))
    print(f"  load average {os.getloadavg()[0]:.1f} at the end", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=size_rows, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=DATA)
    parser.add_argument("--no-pytrec-eval", action="store_true")
    parser.add_argument("--per-measure", action="store_true")
    args = parser.parse_args(argv)
    base = profile("trec_eval")
    specs = {"nDCG@10 alone": base.replace(measures=["nDCG@10"]),
             "TREC DL set": base.replace(measures=TREC_DL)}
    for rows in args.rows:
        one_size(rows, args, specs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
