"""Aggregate rows per (ranker, cutoff, slice) (contract section 4) with lineage (section 5)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl


class Aggregates(pa.DataFrameModel):
    ranker: str
    cutoff: pl.Int64 = pa.Field(ge=1)
    slice_column: str  # "all" for the whole pool
    slice_value: str
    n_queries: pl.Int64 = pa.Field(ge=0)
    n_with_number: pl.Int64 = pa.Field(ge=0)
    macro_ndcg: pl.Float64 = pa.Field(ge=0, le=1 + 1e-12, nullable=True)
    # Intervals and the weighted mean: optional columns, added by aggregate_with_intervals.
    macro_ndcg_low: pl.Float64 | None = pa.Field(ge=0, le=1 + 1e-12, nullable=True)
    macro_ndcg_high: pl.Float64 | None = pa.Field(ge=0, le=1 + 1e-12, nullable=True)
    weighted_ndcg: pl.Float64 | None = pa.Field(ge=0, le=1 + 1e-12, nullable=True)
    weighted_ndcg_low: pl.Float64 | None = pa.Field(ge=0, le=1 + 1e-12, nullable=True)
    weighted_ndcg_high: pl.Float64 | None = pa.Field(ge=0, le=1 + 1e-12, nullable=True)
    n_scored: pl.Int64 = pa.Field(ge=0)
    n_no_positive: pl.Int64 = pa.Field(ge=0)
    n_incomplete: pl.Int64 = pa.Field(ge=0)
    n_not_judged: pl.Int64 = pa.Field(ge=0)
    n_missing_from_run: pl.Int64 = pa.Field(ge=0)
    mean_judged_at_k: pl.Float64 = pa.Field(ge=0, le=1 + 1e-12, nullable=True)
    mean_candidate_recall: pl.Float64 = pa.Field(ge=0, le=1 + 1e-12, nullable=True)
    # The macro mean's bounds over every grading of the holes, over the n_bounded rows.
    n_bounded: pl.Int64 | None = pa.Field(ge=0, nullable=True)
    macro_ndcg_min: pl.Float64 | None = pa.Field(ge=0, le=1 + 1e-12, nullable=True)
    macro_ndcg_max: pl.Float64 | None = pa.Field(ge=0, le=1 + 1e-12, nullable=True)
    judgment_version: str
    judgments_sha256: str = pa.Field(str_matches=r"^[0-9a-f]{64}$")
    candidate_pool: str
    pool_sha256: str = pa.Field(str_matches=r"^[0-9a-f]{64}$")
    spec_id: str
    project_version: str

    class Config:
        strict = False
        unique = ["ranker", "cutoff", "slice_column", "slice_value"]
