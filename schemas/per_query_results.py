"""Per-query rows, one per (ranker, query, measure) (contract section 3), with their lineage
(contract section 5). ``value``, ``value_min`` and ``value_max`` hold every measure's number
and bounds; ``ndcg``, ``ndcg_min``, ``ndcg_max``, ``dcg`` and ``ideal_dcg`` are the spec's own
nDCG@K rows' (null on the other measures' rows), as files written before the measures had
them."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl
from pandera.api.polars.types import PolarsData

from schemas.columns import STATUSES, is_spec_ndcg_row


class PerQueryResults(pa.DataFrameModel):
    ranker: str
    query_id: str
    cutoff: pl.Int64 = pa.Field(ge=1, nullable=True)
    measure: str = pa.Field(str_length={"min_value": 1})
    value: pl.Float64 = pa.Field(nullable=True)
    value_min: pl.Float64 = pa.Field(nullable=True)
    value_max: pl.Float64 = pa.Field(nullable=True)
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
        unique = ["ranker", "query_id", "measure"]

    @pa.dataframe_check(error="a scored row has a number; incomplete and not_judged rows do not")
    def value_matches_status(cls, data: PolarsData) -> pl.LazyFrame:
        status = pl.col("status")
        return data.lazyframe.select(
            pl.when(status == "scored")
            .then(pl.col("value").is_not_null())
            .when(status.is_in(["incomplete", "not_judged"]))
            .then(pl.col("value").is_null())
            .otherwise(True)
        )

    @pa.dataframe_check(error="ndcg, ndcg_min and ndcg_max are value, value_min and value_max "
                              "on the spec's nDCG@K rows, null on the other measures' rows")
    def ndcg_is_the_ndcg_rows_value(cls, data: PolarsData) -> pl.LazyFrame:
        own = is_spec_ndcg_row()
        pairs = [("ndcg", "value"), ("ndcg_min", "value_min"), ("ndcg_max", "value_max")]
        return data.lazyframe.select(pl.all_horizontal(
            pl.when(own).then(pl.col(a).eq_missing(pl.col(b))).otherwise(pl.col(a).is_null())
            for a, b in pairs))

    # The number under the policies may lie outside the bounds (exclusion moves places up);
    # only the number of a query without holes is held to them.
    @pa.dataframe_check(error="value_min <= value_max, both or neither, equal to value without "
                              "holes")
    def bounds_are_a_range(cls, data: PolarsData) -> pl.LazyFrame:
        low, high, value = pl.col("value_min"), pl.col("value_max"), pl.col("value")
        return data.lazyframe.select(
            (low.is_null() == high.is_null())
            & (low.is_null() | (low <= high + 1e-12))
            & ((pl.col("n_holes") > 0) | low.eq_missing(value))
        )

    @pa.dataframe_check(error="a row scored under every grading has bounds")
    def scored_rows_have_bounds(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(
            ~pl.col("every_grading_scored") | pl.col("value_min").is_not_null())
