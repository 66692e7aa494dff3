"""The memory budget of the pipeline's steps, as a resource: ingest sorts and scoring's sorts
spill to disk past it (``evaluation_pipeline.ingest.external_sort``)."""

from __future__ import annotations

import dagster as dg

from evaluation_pipeline import settings
from evaluation_pipeline.ingest.external_sort import Budget
from evaluation_pipeline.io.storage import SPILL_FOLDER
from evaluation_pipeline.orchestration.resources import EvaluationStorage


class MemoryBudget(dg.ConfigurableResource):
    """``memory_limit`` ("2GB", "512MB"; unset: ``NDCG_EVAL_MEMORY_LIMIT``, else 2 GB) and
    ``spill_dir`` (unset: ``NDCG_EVAL_SPILL_DIR``, else SPILL_FOLDER under a local storage, else
    the system's temporary folder)."""

    memory_limit: str | None = None
    spill_dir: str | None = None

    def budget(self, storage: EvaluationStorage) -> Budget:
        """The budget, checked: a size that is not one, or a spill folder that cannot be
        written, fails the step before it reads anything."""
        folder = self.spill_dir or settings.SPILL_DIR.get() or (
            # Beside the published files: one file system, so a staged file is renamed in.
            storage.root() / SPILL_FOLDER if storage.is_local() else None)
        try:
            budget = Budget.of(self.memory_limit, folder)
            budget.check_spill_dir()
        except ValueError as exc:
            raise dg.Failure(str(exc)) from None
        return budget
