"""A candidate pool: ranked output of one or more rankers with scores (contract section 1)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl
from pandera.api.polars.types import PolarsData

from schemas.keys import unique_rows
from schemas.names import NAME_LIMITS_RULE, SAFE_NAME_PATTERN, name_within_limits


class CandidatePool(pa.DataFrameModel):
    """One row per (ranker, query_id, doc_id); the score orders candidates and is never a grade."""

    candidate_pool: str = pa.Field(str_matches=SAFE_NAME_PATTERN)
    ranker: str = pa.Field(str_length={"min_value": 1})
    query_id: str = pa.Field(str_length={"min_value": 1})
    doc_id: str = pa.Field(str_length={"min_value": 1})
    score: pl.Float64 = pa.Field()
    rank: pl.Int64 | None = pa.Field(nullable=True)  # display only; order comes from score

    class Config:
        strict = False
        # Uniqueness of (ranker, query_id, doc_id) is `unique_candidates` below: pandera's
        # own multi-column check costs several seconds per 10M rows.

    @pa.dataframe_check(
        error="[ranker, query_id, doc_id] (ranker, query_id, doc_id) must be unique: duplicate rows"
    )
    def unique_candidates(cls, data: PolarsData) -> pl.LazyFrame:
        return unique_rows(data.lazyframe, ["ranker", "query_id", "doc_id"])

    @pa.check("candidate_pool", error=NAME_LIMITS_RULE)
    def candidate_pool_within_limits(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(name_within_limits(data.key))

    @pa.check("score", error="score must be a finite number (no NaN or infinity)")
    def score_is_finite(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col(data.key).is_finite())

    @pa.dataframe_check(error="[candidate_pool] one candidate pool per file: candidate_pool has several values")
    def one_pool(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col("candidate_pool") == pl.col("candidate_pool").first())
