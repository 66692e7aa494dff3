"""Scoring published inputs through the storage: the engines take local paths (Spark aside), so
for an object store the files pass through a local scratch folder under the memory budget's
spill folder."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from evaluation_pipeline.engines import EngineResult
from evaluation_pipeline.ingest.external_sort import Budget
from evaluation_pipeline.io.storage import Place
from evaluation_pipeline.orchestration.resources import EvaluationStorage, ScoringEngine
from evaluation_pipeline.spec import EvaluationSpec


def score_published(storage: EvaluationStorage, scoring: ScoringEngine, budget: Budget,
                    judgments: Place, pool: Place, scores: Place,
                    spec: EvaluationSpec) -> EngineResult:
    """Score the published ``pool`` against ``judgments`` into ``scores``, through
    ``engines.score_files`` with the configured engine (``ScoringEngine.reads_urls``: Spark
    reads and writes URLs itself)."""
    if storage.is_local() or scoring.reads_urls():
        return scoring.score(str(storage.path(*judgments)), str(storage.path(*pool)), spec,
                             str(storage.path(*scores)), budget=budget)
    with budget.scratch("ndcg-eval-score-") as tmp:
        local = [Path(tmp) / place[-1] for place in (judgments, pool)]
        for place, copy in zip((judgments, pool), local):
            with storage.path(*place).open("rb") as source, open(copy, "wb") as target:
                shutil.copyfileobj(source, target)
        result = scoring.score(str(local[0]), str(local[1]), spec, str(Path(tmp) / scores[-1]),
                               budget=budget)
        written = storage.put_file(Path(result.per_query_path), *scores)
    return dataclasses.replace(result, per_query_path=written)
