"""Queries: traffic weights and slice columns (contract section 1)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl
from pandera.api.polars.types import PolarsData


class Queries(pa.DataFrameModel):
    """One row per query; any further string columns are slices (equipment class, age band ...)."""

    query_id: str = pa.Field(str_length={"min_value": 1}, unique=True)
    weight: pl.Float64 | None = pa.Field(ge=0, nullable=False)

    class Config:
        strict = False

    @pa.check("weight", error="weight must be finite and >= 0 (e.g. a traffic count)")
    def weight_is_finite(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(pl.col(data.key).is_finite())
