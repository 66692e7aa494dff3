"""Two nights of per-query rows for the report's numbers: three rankers at two cutoffs,
every status, null recalls, a ranker whose candidate counts differ, a queries table with
weights, two slice columns and queries without a row."""

from __future__ import annotations

import numpy as np
import polars as pl

from evaluation_pipeline.report.config import ReportConfig
from evaluation_pipeline.spec import EvaluationSpec
from tests.support.frames import LINEAGE

N_QUERIES = 700
SPEC = EvaluationSpec(cutoffs=(5, 10))
CONFIG = ReportConfig(n_bootstrap=300, seed=11, n_regressions=4)


def night(seed: int, rankers: tuple[str, ...]) -> pl.DataFrame:
    """Per-query rows with every status, null recalls and a ranker that differs in size."""
    rng = np.random.default_rng(seed)
    frames = []
    for r, ranker in enumerate(rankers):
        for cutoff in SPEC.cutoffs:
            ndcg = np.clip(rng.normal(0.5 + 0.02 * r, 0.2, N_QUERIES), 0, 1)
            status = rng.choice(["scored", "no_positive", "incomplete", "not_judged",
                                 "missing_from_run"], N_QUERIES, p=[0.8, 0.05, 0.05, 0.05, 0.05])
            recall = np.where(rng.uniform(size=N_QUERIES) < 0.05, np.nan,
                              np.round(rng.uniform(size=N_QUERIES), 1))
            frames.append(pl.DataFrame({
                "ranker": ranker, "query_id": [f"q{i:04d}" for i in range(N_QUERIES)],
                "cutoff": cutoff,
                "ndcg": np.where(status == "scored", ndcg, np.nan),
                "status": status, "judged_at_k": rng.uniform(size=N_QUERIES),
                "candidate_recall": recall,
                "n_candidates": 100 - (r == 2) * (np.arange(N_QUERIES) % 50 == 0),
            }).with_columns(pl.col("ndcg", "candidate_recall").fill_nan(None)))
    return pl.concat(frames).with_columns(LINEAGE.columns())


QUERIES = pl.DataFrame({
    "query_id": [f"q{i:04d}" for i in range(0, N_QUERIES, 1) if i % 9],  # some have no row
    "weight": [float(i % 5) for i in range(N_QUERIES) if i % 9],
    "device": [("desktop", "mobile", "tablet")[i % 3] for i in range(N_QUERIES) if i % 9],
    "band": [("head", "tail", None)[i % 4 % 3] for i in range(N_QUERIES) if i % 9],
})
