"""Per-query NDCG rows (contract section 3) with their lineage (contract section 5)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl
from pandera.api.polars.types import PolarsData

from schemas.columns import STATUSES


class PerQueryResults(pa.DataFrameModel):
    ranker: str
    query_id: str
    cutoff: pl.Int64 = pa.Field(ge=1)
    dcg: pl.Float64 = pa.Field(ge=0, nullable=True)
    ideal_dcg: pl.Float64 = pa.Field(ge=0, nullable=True)
    ndcg: pl.Float64 = pa.Field(ge=0, le=1 + 1e-12, nullable=True)
    status: str = pa.Field(isin=list(STATUSES))
    n_candidates: pl.Int64 = pa.Field(ge=0)
    n_graded: pl.Int64 = pa.Field(ge=0)
    n_unknown: pl.Int64 = pa.Field(ge=0)
    n_unjudged: pl.Int64 = pa.Field(ge=0)
    judged_at_k: pl.Float64 = pa.Field(ge=0, le=1 + 1e-12, nullable=True)
    candidate_recall: pl.Float64 = pa.Field(ge=0, le=1 + 1e-12, nullable=True)
    ndcg_min: pl.Float64 = pa.Field(ge=0, le=1 + 1e-12, nullable=True)
    ndcg_max: pl.Float64 = pa.Field(ge=0, le=1 + 1e-12, nullable=True)
    n_holes: pl.Int64 = pa.Field(ge=0)
    every_grading_scored: bool
    judgment_version: str
    judgments_sha256: str = pa.Field(str_matches=r"^[0-9a-f]{64}$")
    candidate_pool: str
    pool_sha256: str = pa.Field(str_matches=r"^[0-9a-f]{64}$")
    spec_id: str = pa.Field(str_length={"min_value": 1})
    project_version: str = pa.Field(str_length={"min_value": 1})

    class Config:
        strict = True
        unique = ["ranker", "query_id", "cutoff"]

    @pa.dataframe_check(error="a scored row has a number; incomplete and not_judged rows do not")
    def ndcg_matches_status(cls, data: PolarsData) -> pl.LazyFrame:
        status = pl.col("status")
        return data.lazyframe.select(
            pl.when(status == "scored")
            .then(pl.col("ndcg").is_not_null())
            .when(status.is_in(["incomplete", "not_judged"]))
            .then(pl.col("ndcg").is_null())
            .otherwise(True)
        )

    # The number under the policies may lie outside the bounds (exclusion moves places up);
    # only the number of a query without holes is held to them.
    @pa.dataframe_check(error="ndcg_min <= ndcg_max, both or neither, equal to ndcg without holes")
    def bounds_are_a_range(cls, data: PolarsData) -> pl.LazyFrame:
        low, high, ndcg = pl.col("ndcg_min"), pl.col("ndcg_max"), pl.col("ndcg")
        return data.lazyframe.select(
            (low.is_null() == high.is_null())
            & (low.is_null() | (low <= high + 1e-12))
            & ((pl.col("n_holes") > 0) | low.eq_missing(ndcg))
        )

    @pa.dataframe_check(error="a row scored under every grading has bounds")
    def scored_rows_have_bounds(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(
            ~pl.col("every_grading_scored") | pl.col("ndcg_min").is_not_null())
