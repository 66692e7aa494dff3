"""Random versions with several raters, and pools over their documents, for the rules, the
agreement statistics and the engines' tests: raters grade some documents and not others, and
some of their ratings are ``unknown``."""

from __future__ import annotations

import numpy as np
import polars as pl

RATED_SCHEMA = {"query_id": pl.String, "doc_id": pl.String, "rater": pl.String,
                "rater_kind": pl.String, "grade": pl.Int64, "grade_status": pl.String,
                "judgment_version": pl.String}


def rated_version(seed: int, n_queries: int = 25, raters=("h1", "h2", "llm"), max_grade=3,
                  p_rated: float = 0.75, p_unknown: float = 0.1, version="rated-v1"
                  ) -> pl.DataFrame:
    """Ratings over up to 8 documents per query; each rater rates a document with
    ``p_rated``, and a rating is unknown with ``p_unknown``. Grades are correlated across
    raters (a document's latent grade plus noise), so that agreement is not zero."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        for d in range(int(rng.integers(1, 9))):
            latent = rng.integers(0, max_grade + 1)
            for rater in raters:
                if rng.random() >= p_rated:
                    continue
                if rng.random() < p_unknown:
                    grade = None
                else:
                    grade = int(np.clip(latent + rng.integers(-1, 2) * (rng.random() < 0.4),
                                        0, max_grade))
                rows.append((f"q{q:02d}", f"d{d}", rater, "llm" if "llm" in rater else "human",
                             grade, "unknown" if grade is None else "graded", version))
    frame = pl.DataFrame(rows, schema=RATED_SCHEMA, orient="row")
    return frame.sample(fraction=1.0, shuffle=True, seed=seed)


def pool_over(version: pl.DataFrame, seed: int, rankers=("bm25", "dense", "hybrid"),
              pool="pool-r") -> pl.DataFrame:
    """Every ranker ranks every document of each query (and one document nobody rated),
    with ties now and then."""
    rng = np.random.default_rng(seed)
    docs = version.select("query_id", "doc_id").unique().sort("query_id", "doc_id")
    extra = docs.select("query_id").unique().with_columns(doc_id=pl.lit("unrated"))
    docs = pl.concat([docs, extra]).sort("query_id", "doc_id")
    frames = []
    for ranker in rankers:
        scores = np.round(rng.random(docs.height) * 10) / 2
        frames.append(docs.with_columns(candidate_pool=pl.lit(pool), ranker=pl.lit(ranker),
                                        score=pl.Series(scores)))
    return pl.concat(frames).select("candidate_pool", "ranker", "query_id", "doc_id", "score")
