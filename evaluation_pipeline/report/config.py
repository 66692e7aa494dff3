"""What a report computes beyond the per-query rows: slices, intervals, comparisons."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import polars as pl

from evaluation_pipeline import settings
from schemas.errors import EvaluationError

# The resamples of a report whose spec does not declare them (spec field ``resamples``).
DEFAULT_RESAMPLES = 2000
# Free text and the key are never slices: a slice groups queries by a shared property.
NOT_SLICES = ("query_id", "query_text")


class ReportOptionError(EvaluationError):
    """A report option that cannot apply: a level outside (0, 1), no resamples, a slice column
    the queries table lacks, a baseline that is not one of the rankers."""


@dataclass(frozen=True)
class ReportConfig:
    """Report settings; every random draw derives from ``seed`` (recorded in report.json).

    ``slices`` None means every string column of the queries table except query_id and
    query_text. ``baseline`` None compares every pair of rankers.
    """

    slices: tuple[str, ...] | None = None
    ci_level: float = 0.95
    # None: the spec's ``resamples`` (``under``), else DEFAULT_RESAMPLES.
    n_bootstrap: int | None = None
    seed: int = 20261130
    baseline: str | None = None
    n_regressions: int = 10
    # The level each family's tests are held to and the power of their detectable effects:
    # the nightly watch's (NDCG_EVAL_ALPHA, NDCG_EVAL_POWER), so a report and its night agree.
    alpha: float = field(default_factory=settings.alpha)
    power: float = field(default_factory=settings.power)
    # The least change a verdict between two pools counts (NDCG_EVAL_MIN_EFFECT, the watch's).
    min_effect: float = field(default_factory=settings.min_effect)
    # Whether n_bootstrap was left to the spec (``under``).
    from_spec: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.n_bootstrap is None:
            object.__setattr__(self, "from_spec", True)
            object.__setattr__(self, "n_bootstrap", DEFAULT_RESAMPLES)
        if not 0 < self.ci_level < 1:
            raise ReportOptionError(f"ci_level must be in (0, 1), got {self.ci_level}")
        if self.n_bootstrap < 1:
            raise ReportOptionError(f"n_bootstrap must be >= 1, got {self.n_bootstrap}")
        if self.slices is not None:
            object.__setattr__(self, "slices", tuple(self.slices))

    def under(self, spec) -> ReportConfig:
        """These options under an evaluation spec: resamples left unset take the spec's
        ``resamples`` when it declares them."""
        if self.from_spec and getattr(spec, "resamples", None):
            return replace(self, n_bootstrap=spec.resamples)
        return self

    def slice_columns(self, queries: pl.DataFrame | None) -> tuple[str, ...]:
        if queries is None:
            return ()
        if self.slices is not None:
            missing = [s for s in self.slices if s not in queries.columns]
            if missing:
                raise ReportOptionError(
                    f"slice column(s) {missing} are not in the queries table")
            return self.slices
        return tuple(
            name for name, dtype in queries.schema.items()
            if dtype == pl.String and name not in NOT_SLICES
        )

    def check_baseline(self, rankers: Sequence[str]) -> None:
        """Refuse a baseline that is not among ``rankers`` (the rankers to compare)."""
        if self.baseline is not None and self.baseline not in rankers:
            raise ReportOptionError(
                f"baseline ranker {self.baseline!r} is not among {sorted(rankers)}")
