"""A pool whose unjudged documents are mostly returned by one ranker only (contract section 3,
rule 7: under ``ideal: all_judged`` each is a hole of every ranker of its query), written as
the engines read it: one sorted Parquet file per ranker, and a sorted judgment version."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

RANKERS = ("bm25", "dense", "hybrid")


def unshared_pool(folder: Path, seed: int = 7, n_queries: int = 40, raters: bool = False
                  ) -> tuple[Path, Path]:
    """(judgments file, pool folder) under ``folder``: per query 20 documents, each ranker
    returning 4 to 12 of them, the version grading about half, ``unknown`` on a few and a few
    judged documents no ranker returns; some queries are not judged, and each ranker misses a
    few queries. ``raters``: the version has two raters, ``h1`` and ``h2``, ``h2`` rating
    some documents ``h1`` did not (unjudged under ``rater:h1``)."""
    rng = np.random.default_rng(seed)
    runs, rows = [], []
    for q in range(n_queries):
        qid = f"q{q:03d}"
        docs = [f"{qid}-d{i:02d}" for i in range(20)]
        if q % 9 != 4:  # every ninth query, from the fifth, is not judged
            for doc in docs:
                kind = rng.choice(["graded", "graded", "unknown", "none", "none"])
                if kind != "none":
                    grade = int(rng.integers(0, 4)) if kind == "graded" else None
                    rows.append((qid, doc, grade, kind, "h1"))
                if raters and rng.random() < 0.3:  # beside h1's rating, or alone
                    rows.append((qid, doc, int(rng.integers(0, 4)), "graded", "h2"))
            rows.append((qid, f"{qid}-out", None, "unknown", "h1"))
        for ranker in RANKERS:
            if rng.random() < 0.1:
                continue  # missing from this ranker's run
            for doc in rng.choice(docs, size=int(rng.integers(4, 13)), replace=False):
                runs.append((ranker, qid, str(doc), float(rng.integers(0, 6))))
    judgments = pl.DataFrame(rows, schema={"query_id": pl.String, "doc_id": pl.String,
                                           "grade": pl.Int64, "grade_status": pl.String,
                                           "rater": pl.String}, orient="row")
    if not raters:
        judgments = judgments.drop("rater")
    judgments_path = folder / "version.parquet"
    judgments.with_columns(pl.lit("v1").alias("judgment_version")).sort(
        "query_id", "doc_id").write_parquet(judgments_path)
    pool = folder / "pool"
    pool.mkdir()
    run = pl.DataFrame(runs, schema=["ranker", "query_id", "doc_id", "score"], orient="row")
    for ranker in RANKERS:
        run.filter(pl.col("ranker") == ranker).with_columns(
            pl.lit("pool").alias("candidate_pool")).sort(
            "query_id", "score", descending=[False, True]).write_parquet(pool / f"{ranker}.parquet")
    return judgments_path, pool
