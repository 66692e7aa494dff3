"""One evaluation's step of the nightly watch: its comparison with the previous night, whether
it is its night's headline, its attribution, and its rows in the history.

The caller (the report asset) reads the inputs and writes the outputs; everything decided in
between is here, in two calls: :func:`watch_evaluation` before the report is written (its
section goes into report.json), :func:`record_evaluation` after (the history rows).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from evaluation_pipeline.nightly import history as hist
from evaluation_pipeline.nightly import verdicts as nightly
from evaluation_pipeline.stats.family import DEFAULT as DEFAULT_FAMILY
from evaluation_pipeline.stats.family import Family


@dataclass(frozen=True)
class WatchSettings:
    """The watch's configuration: verdict thresholds, a pinned baseline, the statistics."""

    alpha: float = nightly.DEFAULT_ALPHA
    min_effect: float = nightly.DEFAULT_MIN_EFFECT
    power: float = nightly.DEFAULT_POWER
    baseline_pool: str | None = None
    ci_level: float = 0.95
    n_bootstrap: int = 2000
    seed: int = 20261130


@dataclass(frozen=True)
class NightStep:
    """What the watch decided for one evaluation."""

    section: dict  # report.json's "nightly"
    headline: bool  # this version is the night's headline
    newest: bool  # the pool is the newest night (only then can it alert)
    ready_at: str


def compared_frames(previous_per_query: pl.DataFrame | None, per_query: pl.DataFrame,
                    settings: WatchSettings = WatchSettings(),
                    family: Family = DEFAULT_FAMILY) -> nightly.NightComparison | None:
    """The comparison of two nights' per-query rows (None on the first night), summed here;
    ``family``: the spec's multiple-comparison family (``Family.of(spec)``), with the
    measures whose verdicts alert."""
    if previous_per_query is None:
        return None
    return nightly.night_comparison_of_frames(
        previous_per_query, per_query, alpha=settings.alpha, min_effect=settings.min_effect,
        power=settings.power,
        ci_level=settings.ci_level, n_bootstrap=settings.n_bootstrap, seed=settings.seed,
        family=family)


def watch_evaluation(
    compared: nightly.NightComparison | None,
    *,
    candidate_pool: str,
    judgment_version: str,
    spec_id: str,
    ready_at: Mapping[str, str],
    published_at: Mapping[str, str],
    history: pl.DataFrame | None,
    now: str,
    settings: WatchSettings = WatchSettings(),
) -> NightStep:
    """The nightly step of ``candidate_pool`` x ``judgment_version`` x ``spec_id``.

    ``compared``: this evaluation against :func:`nightly.previous_night`'s under the same
    version and spec (None on the first night; :func:`compared_frames`, or the report's
    numbers). ``ready_at``: pool -> ready time of every registered pool; ``published_at``:
    judgment version -> publication time; ``history``: the table as it is before this
    evaluation; ``now``: this evaluation's time.
    """
    history = hist.empty_history() if history is None else history
    previous = nightly.previous_night(candidate_pool, ready_at, settings.baseline_pool)
    first = hist.first_evaluated(history, candidate_pool) or now
    headline = nightly.headline_version(first, published_at) == judgment_version
    comparisons, attribution = [], None
    if previous is not None and compared is not None:
        comparisons = compared.comparisons
        previous_headline = hist.headline_of(history, previous, spec_id)
        if headline and previous_headline not in (None, judgment_version):
            attribution = nightly.attribute(
                hist.overall_means(history, previous, previous_headline, spec_id),
                compared.previous_means, compared.current_means,
                previous_headline,
            )
    section = nightly.nightly_section(
        previous if compared is not None else None, judgment_version, comparisons,
        attribution, baseline_pinned=bool(settings.baseline_pool), alpha=settings.alpha,
        min_effect=settings.min_effect, power=settings.power,
    )
    return NightStep(section, headline, candidate_pool == nightly.newest_pool(ready_at),
                     ready_at[candidate_pool])


def record_evaluation(history: pl.DataFrame | None, aggregates: pl.DataFrame, step: NightStep,
                      *, evaluated_at: str, headline_measures: Sequence[str] | None = None
                      ) -> pl.DataFrame:
    """The history with this evaluation's rows upserted (a rerun replaces its rows);
    ``headline_measures``: the spec's, marked on the rows (None: its nDCG@K)."""
    rows = hist.history_rows(aggregates, ready_at=step.ready_at, evaluated_at=evaluated_at,
                             headline=step.headline, nightly=step.section,
                             headline_measures=headline_measures)
    return hist.upsert(history, rows)

