"""The evaluation history: every evaluation's aggregate rows side by side, night after night.

One row per (candidate_pool, judgment_version, spec_id, ranker, cutoff, slice, slice_value);
``slice`` is null on the overall row. Rows come from an evaluation's aggregates frame (the one
written to aggregates.parquet) with the night's ready time, when it was evaluated, whether its
version is the night's headline, and, on overall rows, the comparison with the previous night
and the attribution. Upserting an evaluation replaces its rows, so a rerun never duplicates.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from evaluation_pipeline.io.datasets import read_dataset
from evaluation_pipeline.io.locations import Location
from evaluation_pipeline.nightly.verdicts import parse_time
from schemas.columns import (
    EVALUATION_KEY,
    HISTORY_COLUMNS,
    HISTORY_DTYPES,
    HISTORY_KEY,
    HISTORY_NIGHTLY,
    STATUS_COUNT_COLUMNS,
)
from schemas.errors import EvaluationError

OVERALL = "all"  # the aggregates' slice_column of the pooled rows

# aggregates.parquet column -> history column, where the names differ.
FROM_AGGREGATES = {
    "macro_ndcg": "ndcg",
    "macro_ndcg_low": "ndcg_low",
    "macro_ndcg_high": "ndcg_high",
    "macro_ndcg_min": "ndcg_min",
    "macro_ndcg_max": "ndcg_max",
}
SHARED = (
    "ranker", "cutoff", "weighted_ndcg", "weighted_ndcg_low", "weighted_ndcg_high",
    "n_queries", "n_with_number", *STATUS_COUNT_COLUMNS, "mean_judged_at_k",
    "mean_candidate_recall", "n_bounded",
)
# Nightly comparison field -> history column (the comparisons of report.json's ``nightly``).
FROM_COMPARISON = ("verdict", "mean_diff", "ci_low", "ci_high", "p_adjusted", "diff_min",
                   "diff_max", "holds_for_every_grading")
FROM_ATTRIBUTION = ("previous_judgment_version", "from_judgments", "from_pool")


def empty_history() -> pl.DataFrame:
    return pl.DataFrame(schema=HISTORY_DTYPES).select(HISTORY_COLUMNS)


def history_rows(
    aggregates: pl.DataFrame,
    *,
    ready_at: str,
    evaluated_at: str,
    headline: bool,
    nightly: Mapping | None = None,
) -> pl.DataFrame:
    """The history rows of one evaluation from its aggregates frame (with lineage columns).

    ``nightly`` is report.json's nightly section of this evaluation (or None): its verdicts and
    attribution go onto the overall rows of their ranker and cutoff.
    """
    overall = pl.col("slice_column") == OVERALL
    rows = aggregates.select(
        *EVALUATION_KEY,
        *SHARED,
        *(pl.col(source).alias(target) for source, target in FROM_AGGREGATES.items()),
        pl.when(overall).then(None).otherwise(pl.col("slice_column")).alias("slice"),
        pl.when(overall).then(None).otherwise(pl.col("slice_value")).alias("slice_value"),
        *(c for c in HISTORY_COLUMNS if c in aggregates.columns and c not in EVALUATION_KEY
          and c not in SHARED and c != "slice_value"),
    ).with_columns(
        pl.lit(headline).alias("headline"),
        pl.lit(parse_time(ready_at)).alias("ready_at"),
        pl.lit(parse_time(evaluated_at)).alias("first_evaluated_at"),
        pl.lit(parse_time(evaluated_at)).alias("evaluated_at"),
    )
    # Joined on a flag, not on the null slice: nulls never match in a join.
    flag = pl.col("slice").is_null().alias("__overall")
    rows = rows.with_columns(flag).join(
        _nightly_frame(nightly).with_columns(flag).drop("slice"),
        on=["ranker", "cutoff", "__overall"], how="left",
    )
    return _conform(rows)


def _nightly_frame(nightly: Mapping | None) -> pl.DataFrame:
    """The nightly columns per (ranker, cutoff) for the overall rows (slice null)."""
    schema = {"ranker": pl.String, "cutoff": pl.Int64, "slice": pl.String,
              **{c: HISTORY_DTYPES[c] for c in HISTORY_NIGHTLY}}
    if not nightly:
        return pl.DataFrame(schema=schema)
    attribution = {(a["ranker"], a["cutoff"]): a for a in nightly.get("attribution") or []}
    records = []
    for c in nightly["comparisons"]:
        parts = attribution.get((c["ranker"], c["cutoff"]), {})
        records.append({
            "ranker": c["ranker"], "cutoff": c["cutoff"], "slice": None,
            "previous_pool": nightly["previous_pool"],
            **{f: c[f] for f in FROM_COMPARISON},
            **{f: parts.get(f) for f in FROM_ATTRIBUTION},
        })
    return pl.DataFrame(records, schema=schema)


def _conform(frame: pl.DataFrame) -> pl.DataFrame:
    """Every history column in its declared order and dtype (missing ones null)."""
    return frame.select(
        (pl.col(c) if c in frame.columns else pl.lit(None)).cast(HISTORY_DTYPES[c]).alias(c)
        for c in HISTORY_COLUMNS
    )


def upsert(history: pl.DataFrame | None, rows: pl.DataFrame) -> pl.DataFrame:
    """``history`` with the evaluations of ``rows`` replaced by ``rows``.

    A rerun keeps the evaluation's ``first_evaluated_at``: a night's headline version is
    decided by when its pool was first evaluated, not by the latest rerun.
    """
    history = empty_history() if history is None else _conform(history)
    rows = _conform(rows)
    earlier = (
        history.join(rows.select(EVALUATION_KEY).unique(), on=EVALUATION_KEY, how="semi")
        .group_by(EVALUATION_KEY)
        .agg(pl.col("first_evaluated_at").min().alias("__first"))
    )
    rows = (
        rows.join(earlier, on=EVALUATION_KEY, how="left")
        .with_columns(pl.coalesce("__first", "first_evaluated_at").alias("first_evaluated_at"))
        .drop("__first")
    )
    kept = history.join(rows.select(EVALUATION_KEY).unique(), on=EVALUATION_KEY, how="anti")
    return sort_history(pl.concat([kept, rows.select(HISTORY_COLUMNS)]))


def sort_history(history: pl.DataFrame) -> pl.DataFrame:
    """Nights in order (ready time, then pool), then the key; overall rows first."""
    return history.sort(["ready_at", *HISTORY_KEY], nulls_last=False)


def check_unique(history: pl.DataFrame) -> None:
    """Refuse a history with two rows for one key (the table's invariant)."""
    repeated = history.group_by(HISTORY_KEY).len().filter(pl.col("len") > 1)
    if repeated.height:
        raise ValueError(f"history holds {repeated.height} repeated keys, e.g. "
                         f"{repeated.drop('len').row(0, named=True)}")


# --- reading the history back --------------------------------------------------------------------


def overall(history: pl.DataFrame) -> pl.DataFrame:
    return history.filter(pl.col("slice").is_null())


def overall_means(history: pl.DataFrame, pool: str, version: str,
                  spec_id: str) -> dict[tuple[str, int], float | None]:
    """(ranker, cutoff) -> macro NDCG of one evaluation's overall rows (empty if absent)."""
    rows = overall(history).filter(
        (pl.col("candidate_pool") == pool) & (pl.col("judgment_version") == version)
        & (pl.col("spec_id") == spec_id)
    )
    return {(r, k): v for r, k, v in rows.select("ranker", "cutoff", "ndcg").iter_rows()}


def aggregate_means(aggregates: pl.DataFrame) -> dict[tuple[str, int], float | None]:
    """(ranker, cutoff) -> macro NDCG of an aggregates frame's overall rows."""
    rows = aggregates.filter(pl.col("slice_column") == OVERALL)
    return {(r, k): v for r, k, v in rows.select("ranker", "cutoff", "macro_ndcg").iter_rows()}


def ready_times(history: pl.DataFrame) -> dict[str, str]:
    """pool -> its ready time (ISO), as recorded in the history."""
    rows = history.group_by("candidate_pool").agg(pl.col("ready_at").min())
    return {p: t.isoformat() for p, t in rows.iter_rows()}


def first_evaluated(history: pl.DataFrame, pool: str) -> str | None:
    """When ``pool`` was first evaluated (any version or spec), or None if never."""
    rows = history.filter(pl.col("candidate_pool") == pool)
    return rows["first_evaluated_at"].min().isoformat() if rows.height else None


def headline_of(history: pl.DataFrame, pool: str, spec_id: str) -> str | None:
    """The headline judgment version recorded for ``pool`` under ``spec_id``."""
    rows = history.filter(
        (pl.col("candidate_pool") == pool) & (pl.col("spec_id") == spec_id) & pl.col("headline")
    )
    versions = rows["judgment_version"].unique().to_list()
    return versions[0] if len(versions) == 1 else None


def headline_trend(history: pl.DataFrame, spec_id: str | None = None) -> pl.DataFrame:
    """Overall rows of each night's headline evaluation, nights in order."""
    rows = overall(history).filter(pl.col("headline"))
    if spec_id is not None:
        rows = rows.filter(pl.col("spec_id") == spec_id)
    return sort_history(rows)


def numeric_metadata(aggregates: pl.DataFrame) -> dict[str, float]:
    """``ndcg@K/<ranker>`` -> macro NDCG (overall rows): numeric metadata Dagster plots."""
    return {
        f"ndcg@{cutoff}/{ranker}": float(value)
        for (ranker, cutoff), value in sorted(aggregate_means(aggregates).items())
        if value is not None
    }


def read_history(where: Location) -> pl.DataFrame | None:
    """The history at ``where`` (None: none yet); a file that is not readable Parquet (cut
    short by a full disk, changed by hand) is named with what to do, never read as empty."""
    if not where.exists():
        return None
    try:
        return read_dataset(where)
    except Exception as exc:  # polars' and pyarrow's errors of a damaged file alike
        raise EvaluationError(
            f"{where}: the evaluation history is not a readable Parquet file ({exc}). Restore it "
            "from a backup, or move it aside: the next evaluation starts a new history (every "
            "evaluation's numbers stay in its report.json)") from None
