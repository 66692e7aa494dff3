"""Seeded per-query results and a queries table for timing ``ndcg-eval report`` at any size.

    python benchmarks/report_data.py --queries 1_000_000 [--rankers 2] [--seed 7] [--out DIR]
    python -m evaluation_pipeline report DIR --queries DIR/queries.parquet

Scoring a pool of a million queries takes a while; the report reads only ``per_query.parquet``
and ``summary.json``, so this writes them directly: the rows an evaluation of ``--rankers``
rankers at cutoffs 10 and 100 would give (about 80% scored, the rest spread over the other
statuses), and a queries table with traffic weights (long-tailed, some queries weigh 0) and two
slice columns of 3 and 5 values, as in the nightly of the scaling issue; the scored rows carry
bounds over the gradings of their unknown and unjudged candidates. Sizes and seed fix the
bytes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evaluation_pipeline.evaluation import Lineage  # noqa: E402
from evaluation_pipeline.io.storage import PER_QUERY_FILE, QUERIES_FILE, SUMMARY_FILE  # noqa: E402
from evaluation_pipeline.spec import EvaluationSpec  # noqa: E402

CUTOFFS = (10, 100)
CANDIDATES = 100
STATUS_SHARES = {"scored": 0.8, "no_positive": 0.06, "incomplete": 0.04, "not_judged": 0.06,
                 "missing_from_run": 0.04}
DEVICES = ("desktop", "mobile", "tablet")
BANDS = ("head", "torso", "tail", "long_tail", "new")


def query_ids(n: int) -> pl.Series:
    return pl.select(
        pl.concat_str(pl.lit("q"), pl.int_range(n, eager=False).cast(pl.String).str.zfill(8))
    ).to_series().alias("query_id")


def per_query(n: int, rankers: int, rng: np.random.Generator, lineage: Lineage) -> pl.DataFrame:
    """Rows (ranker, query, cutoff) sorted like a scoring output; null NDCG where a status says."""
    ids = query_ids(n)
    statuses = list(STATUS_SHARES)
    # One status per query (judgments decide it), shared by every ranker and cutoff.
    status = rng.choice(len(statuses), size=n, p=list(STATUS_SHARES.values()))
    quality = rng.beta(2.0, 2.0, size=n)  # how easy the query is, shared by the rankers
    # The rankers rerank the same candidates: counts and candidate recall are the query's.
    counts = {name: rng.integers(low, high, size=n, dtype=np.int64)
              for name, low, high in (("n_graded", 0, 30), ("n_unknown", 0, 3),
                                      ("n_unjudged", 60, 100))}
    recall = np.where(status >= 1, np.nan, rng.uniform(0.5, 1.0, size=n))
    frames = []
    for r in range(rankers):
        skill = quality + rng.normal(0.02 * r, 0.08, size=n)
        for k in CUTOFFS:
            ndcg = np.clip(skill + (0.03 if k == 100 else 0.0), 0.0, 1.0)
            ndcg = np.where(status == 0, ndcg, np.where(status == 4, 0.0, np.nan))
            ideal = np.where(np.isnan(ndcg), np.nan, 3.0)
            # Bounds over the gradings of the unknown and unjudged candidates (every query has
            # some): a range around the number where it is scored under every grading, none for
            # the other statuses.
            bounded = status == 0
            spread = rng.uniform(0.0, 0.1, size=n)
            frames.append(pl.DataFrame({
                "ranker": pl.Series([f"ranker_{r}"] * n, dtype=pl.String),
                "query_id": ids,
                "cutoff": pl.Series([k] * n, dtype=pl.Int64),
                "dcg": ideal * ndcg,
                "ideal_dcg": ideal,
                "ndcg": ndcg,
                "status": pl.Series(np.array(statuses)[status], dtype=pl.String),
                "n_candidates": np.where(status == 4, 0, CANDIDATES).astype(np.int64),
                **counts,
                "judged_at_k": np.where(status == 3, np.nan, rng.uniform(0.3, 1.0, size=n)),
                "candidate_recall": recall,
                "ndcg_min": np.where(bounded, np.clip(ndcg - spread, 0.0, 1.0), np.nan),
                "ndcg_max": np.where(bounded, np.clip(ndcg + spread, 0.0, 1.0), np.nan),
                "n_holes": counts["n_unknown"] + counts["n_unjudged"],
                "every_grading_scored": bounded,
            }).with_columns(pl.col("dcg", "ideal_dcg", "ndcg", "judged_at_k", "candidate_recall",
                                   "ndcg_min", "ndcg_max").fill_nan(None)))
    return pl.concat(frames).sort("ranker", "query_id", "cutoff").with_columns(lineage.columns())


def queries(n: int, rng: np.random.Generator) -> pl.DataFrame:
    weight = np.floor(rng.lognormal(1.0, 1.5, size=n))  # traffic counts, about 25% are 0
    return pl.DataFrame({
        "query_id": query_ids(n),
        "weight": weight,
        "device": pl.Series(np.array(DEVICES)[rng.integers(0, len(DEVICES), n)]),
        "band": pl.Series(np.array(BANDS)[rng.integers(0, len(BANDS), n)]),
    })


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=lambda s: int(s.replace("_", "")), default=1_000_000)
    parser.add_argument("--rankers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    out = args.out or (Path(__file__).resolve().parent / "data"
                       / f"report_{args.queries}x{args.rankers}")
    out.mkdir(parents=True, exist_ok=True)
    spec = EvaluationSpec(cutoffs=CUTOFFS)
    lineage = Lineage("bench-v1", "a" * 64, "bench-pool", "b" * 64, spec.spec_id)
    rng = np.random.default_rng(args.seed)
    per_query(args.queries, args.rankers, rng, lineage).write_parquet(out / PER_QUERY_FILE)
    (out / SUMMARY_FILE).write_text(json.dumps({"spec": spec.to_dict()}, indent=2))
    queries(args.queries, rng).write_parquet(out / QUERIES_FILE)
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
