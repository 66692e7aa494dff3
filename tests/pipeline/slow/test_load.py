"""Load: a generated pool of 1M candidate rows scored end to end through the Dagster assets,
with the streaming engine selected by configuration, equals the in-memory kernel."""

import json

import numpy as np
import polars as pl

from evaluation_pipeline.metric.ndcg import score
from tests.support.temporary_pipeline import make_pipeline, temporary_instance

N_QUERIES, PER_QUERY = 10_000, 100  # 1M candidate rows


def generated_inputs(seed: int = 7) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    query = np.repeat(np.arange(N_QUERIES), PER_QUERY)
    doc = rng.integers(0, 10**9, size=query.size)
    # Coarse scores: exact ties are common, as in real runs.
    scores = np.round(rng.normal(size=query.size), 1)
    candidates = pl.DataFrame({
        "candidate_pool": "load-pool",
        "ranker": "bm25-load",
        "query_id": pl.Series([f"q{q:05d}" for q in query]),
        "doc_id": pl.Series([f"d{q:05d}-{d}" for q, d in zip(query, doc)]),
        "score": scores,
    }).unique(["query_id", "doc_id"], keep="first", maintain_order=True)
    judged = candidates.sample(fraction=0.3, seed=seed)
    grade = rng.integers(0, 4, size=judged.height)
    unknown = rng.random(judged.height) < 0.01
    judgments = judged.select("query_id", "doc_id").with_columns(
        pl.Series("grade", grade).set(pl.Series(unknown), None),
        pl.Series("grade_status", np.where(unknown, "unknown", "graded")),
        pl.lit("load-v1").alias("judgment_version"),
    )
    return candidates, judgments


def test_one_million_rows_through_the_assets_with_the_streaming_engine(tmp_path):
    candidates, judgments = generated_inputs()
    assert candidates.height > 990_000
    with temporary_instance(tmp_path / "dagster_home") as instance:
        env = make_pipeline(tmp_path, instance, engine="streaming")
        pool_folder = env.landing / "pools" / "load-pool"
        pool_folder.mkdir()
        candidates.write_parquet(pool_folder / "bm25-load.parquet")
        (pool_folder / "_READY").touch()
        judgments.write_parquet(env.landing / "judgments" / "load-v1.parquet")
        env.runner.run_until_quiet()

        report = json.loads(env.report("load-pool", "load-v1").read_text())
    assert report["lineage"]["judgment_version"] == "load-v1"
    per_query = pl.read_parquet(env.report("load-pool", "load-v1").parent / "per_query.parquet")
    spec_columns = [c for c in per_query.columns if c in
                    ("ranker", "query_id", "cutoff", "dcg", "ideal_dcg", "ndcg", "status",
                     "n_candidates", "n_graded", "n_unknown", "n_unjudged", "judged_at_k",
                     "candidate_recall")]
    from evaluation_pipeline.definitions import pipeline_spec

    expected = score(candidates, judgments, pipeline_spec())
    assert per_query.select(spec_columns).sort("query_id", "cutoff").equals(
        expected.select(spec_columns).sort("query_id", "cutoff"))
