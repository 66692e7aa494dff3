"""Every table's column names, dtypes and statuses, declared once (docs/CONTRACT.md, sections 1 to 5).

This module imports nothing but polars, so the readers, the engines, the kernels and the pandera
models all take their names from it without loading pandera. Each tuple is in the order the
contract lists it, which is the order the files are written in.
"""

from __future__ import annotations

import polars as pl

# --- judgments (contract section 1) ----------------------------------------------------------
JUDGMENT_KEY = ("query_id", "doc_id")
JUDGMENT_COLUMNS = ("query_id", "doc_id", "grade", "grade_status", "judgment_version")
JUDGMENT_DTYPES = {
    "query_id": pl.String,
    "doc_id": pl.String,
    "grade": pl.Int64,
    "grade_status": pl.String,
    "judgment_version": pl.String,
}
GRADED = "graded"
UNKNOWN = "unknown"
GRADE_STATUSES = (GRADED, UNKNOWN)

# --- candidate pools (contract section 1) -----------------------------------------------------
POOL_KEY = ("ranker", "query_id", "doc_id")
RUN_COLUMNS = ("candidate_pool", "ranker", "query_id", "doc_id", "score")
RUN_DTYPES = {
    "candidate_pool": pl.String,
    "ranker": pl.String,
    "query_id": pl.String,
    "doc_id": pl.String,
    "score": pl.Float64,
}
RANK = "rank"  # optional: the ranker's own position, display only unless the spec says so

# --- queries (contract section 1) -------------------------------------------------------------
QUERY_COLUMNS = ("query_id", "weight")  # any further string column is a slice

# --- per-query results (contract sections 3 and 5) --------------------------------------------
STATUSES = ("scored", "no_positive", "incomplete", "not_judged", "missing_from_run")
PER_QUERY_KEY = ("ranker", "query_id", "cutoff")
MEASURE_COLUMNS = (
    "dcg",
    "ideal_dcg",
    "ndcg",
    "status",
    "n_candidates",
    "n_graded",
    "n_unknown",
    "n_unjudged",
    "judged_at_k",
    "candidate_recall",
)
LINEAGE_COLUMNS = (
    "judgment_version",
    "judgments_sha256",
    "candidate_pool",
    "pool_sha256",
    "spec_id",
    "project_version",
)
PER_QUERY_COLUMNS = (*PER_QUERY_KEY, *MEASURE_COLUMNS, *LINEAGE_COLUMNS)
PER_QUERY_DTYPES = {
    "ranker": pl.String,
    "query_id": pl.String,
    "cutoff": pl.Int64,
    "dcg": pl.Float64,
    "ideal_dcg": pl.Float64,
    "ndcg": pl.Float64,
    "status": pl.String,
    "n_candidates": pl.Int64,
    "n_graded": pl.Int64,
    "n_unknown": pl.Int64,
    "n_unjudged": pl.Int64,
    "judged_at_k": pl.Float64,
    "candidate_recall": pl.Float64,
    **dict.fromkeys(LINEAGE_COLUMNS, pl.String),
}

# --- aggregates (contract section 4) ----------------------------------------------------------
AGGREGATE_KEY = ("ranker", "cutoff", "slice_column", "slice_value")
STATUS_COUNT_COLUMNS = tuple(f"n_{status}" for status in STATUSES)
INTERVAL_COLUMNS = ("macro_ndcg_low", "macro_ndcg_high", "weighted_ndcg_low", "weighted_ndcg_high")
