"""The in-memory engine: read and validate whole inputs, score, write (as ``ndcg-eval score``)."""

from __future__ import annotations

from pathlib import Path

from evaluation_pipeline.core.evaluation import Lineage, evaluate
from evaluation_pipeline.io.atomic import write_parquet
from evaluation_pipeline.io.readers import read_candidates, read_judgments
from evaluation_pipeline.spec import EvaluationSpec


def score_local(
    judgments_path: Path,
    run_path: Path,
    spec: EvaluationSpec,
    out_path: Path,
    *,
    judgment_version: str | None = None,
    pool: str | None = None,
    ranker: str | None = None,
) -> tuple[Lineage, int]:
    """Per-query rows with lineage at ``out_path``; returns the lineage and the row count."""
    judgments = read_judgments(judgments_path, version=judgment_version)
    candidates = read_candidates(run_path, pool=pool, ranker=ranker)
    per_query, lineage = evaluate(judgments, candidates, spec)
    write_parquet(per_query, out_path)
    return lineage, per_query.height
