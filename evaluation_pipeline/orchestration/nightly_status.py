"""What the Dagster UI says about the nightly watch, read from the history: which evaluation is
a night's headline, and which regressions of the headline trend still stand.

A night (a candidate pool) is evaluated under every judgment version; one of them is its
headline (``nightly.verdicts.headline_version``), the one its alert and its trend are about.
The others are a backfill (an older pool under a newer version) or an older version. The
checks give a headline evaluation's regression ERROR severity and the others' WARN, and only a
headline evaluation's ``evaluation_history`` materialization carries the plotted numbers.

Plain functions over the history frame (``history/history.parquet``): no Dagster.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from evaluation_pipeline.nightly import history as hist
from evaluation_pipeline.nightly import verdicts as nightly
from schemas.columns import IMPROVED, REGRESSED, label_of


def night_headline(history: pl.DataFrame | None, pool: str, spec_id: str,
                   published_at: Mapping[str, str]) -> str | None:
    """The headline judgment version of night ``pool``: as recorded in the history, else the
    newest version published when the pool was first evaluated (its headline evaluation may
    come later in the same landing: an older version is evaluated first). None when the pool
    was never evaluated."""
    if history is None:
        return None
    recorded = hist.headline_of(history, pool, spec_id)
    if recorded is not None:
        return recorded
    first = hist.first_evaluated(history, pool)
    return nightly.headline_version(first, published_at) if first else None


def is_headline(history: pl.DataFrame | None, pool: str, version: str, spec_id: str) -> bool | None:
    """Whether the history records ``pool`` x ``version`` as its night's headline (None when
    the evaluation is not in the history)."""
    if history is None:
        return None
    rows = history.filter((pl.col("candidate_pool") == pool)
                          & (pl.col("judgment_version") == version)
                          & (pl.col("spec_id") == spec_id))
    return bool(rows["headline"].any()) if rows.height else None


def headline_nights(history: pl.DataFrame, spec_id: str) -> list[tuple[str, str]]:
    """(pool, headline version) of every night with a headline evaluation, nights in order."""
    rows = hist.headline_trend(history, spec_id).select("candidate_pool", "judgment_version")
    return list(dict.fromkeys(rows.iter_rows()))


def standing_regressions(history: pl.DataFrame, spec_id: str) -> list[dict]:
    """The regressions of the headline trend that still stand: per ranker and headline
    measure, the latest headline night whose verdict was ``regressed`` or ``improved``, when
    that verdict is ``regressed``. A regression stands until a later headline night improves
    that ranker on that measure; "no change" or "inconclusive" on the nights after it means the
    drop is still there.

    Each: ranker, cutoff, measure, the night (candidate_pool, judgment_version), previous_pool, the
    comparison's numbers, and ``nights_since`` (headline nights after it)."""
    trend = hist.headline_trend(history, spec_id)
    order = [pool for pool, _ in headline_nights(history, spec_id)]
    decided = trend.filter(pl.col("verdict").is_in([REGRESSED, IMPROVED]))
    standing = []
    for (ranker, measure), rows in sorted(decided.group_by(["ranker", "measure"]),
                                          key=lambda group: group[0]):
        last = rows.row(-1, named=True)  # the trend is in night order
        if last["verdict"] != REGRESSED:
            continue
        standing.append({
            "ranker": ranker, "cutoff": last["cutoff"], "measure": measure,
            "candidate_pool": last["candidate_pool"],
            "judgment_version": last["judgment_version"], "previous_pool": last["previous_pool"],
            **{field: last[field] for field in ("mean_difference", "difference_low",
                                                "difference_high", "p_value_holm")},
            "nights_since": len(order) - 1 - order.index(last["candidate_pool"]),
        })
    return standing


def describe_standing(regression: Mapping) -> str:
    """One line: ranker, K, the night it regressed, the drop and how long it has stood."""
    since = regression["nights_since"]
    stood = ("the newest night" if since == 0 else
             f"not recovered on the {since} headline night{'s' if since > 1 else ''} since")
    interval = ("" if regression["difference_low"] is None else
                f" [{regression['difference_low']:+.4f}, {regression['difference_high']:+.4f}]")
    return (f"{regression['ranker']} {label_of(regression)} regressed on "
            f"{regression['candidate_pool']} ({regression['judgment_version']}) against "
            f"{regression['previous_pool']}: {regression['mean_difference']:+.4f}{interval}, "
            f"Holm-adjusted p = {regression['p_value_holm']:.4g}; {stood}")
