"""Aggregate rows per (ranker, measure, slice) (contract section 4) with lineage (section 5)."""

from __future__ import annotations

import pandera.polars as pa
import polars as pl

from schemas.columns import NDCG_AGGREGATE_COLUMNS, is_spec_ndcg_row

# A mean of NDCG (and of any measure in [0, 1]) lies in [0, 1]; DCG@K's does not, so the
# ``*_value`` columns are held to their sign alone and the spec's nDCG@K rows to [0, 1].
_UNIT = {"ge": 0, "le": 1 + 1e-12, "nullable": True}
_SIGN = {"ge": 0, "nullable": True}


class Aggregates(pa.DataFrameModel):
    ranker: str
    cutoff: pl.Int64 = pa.Field(ge=1, nullable=True)  # null for a measure without a cutoff
    measure: str  # canonical name: nDCG@10, RR(rel=2)@10, Rprec
    slice_column: str  # "all" for the whole pool
    slice_value: str
    n_queries: pl.Int64 = pa.Field(ge=0)
    n_with_number: pl.Int64 = pa.Field(ge=0)
    macro_value: pl.Float64 = pa.Field(**_SIGN)
    # Intervals and the weighted mean: optional columns, added by aggregate_with_intervals.
    macro_value_low: pl.Float64 | None = pa.Field(**_SIGN)
    macro_value_high: pl.Float64 | None = pa.Field(**_SIGN)
    weighted_value: pl.Float64 | None = pa.Field(**_SIGN)
    weighted_value_low: pl.Float64 | None = pa.Field(**_SIGN)
    weighted_value_high: pl.Float64 | None = pa.Field(**_SIGN)
    n_scored: pl.Int64 = pa.Field(ge=0)
    n_no_positive: pl.Int64 = pa.Field(ge=0)
    n_incomplete: pl.Int64 = pa.Field(ge=0)
    n_not_judged: pl.Int64 = pa.Field(ge=0)
    n_missing_from_run: pl.Int64 = pa.Field(ge=0)
    mean_judged_at_k: pl.Float64 = pa.Field(ge=0, le=1 + 1e-12, nullable=True)
    mean_candidate_recall: pl.Float64 = pa.Field(ge=0, le=1 + 1e-12, nullable=True)
    # The macro mean's bounds over every grading of the holes, over the n_bounded rows.
    n_bounded: pl.Int64 | None = pa.Field(ge=0, nullable=True)
    macro_value_min: pl.Float64 | None = pa.Field(**_SIGN)
    macro_value_max: pl.Float64 | None = pa.Field(**_SIGN)
    # The spec's nDCG@K rows under the names they had before the other measures
    # (schemas.columns.NDCG_AGGREGATE_COLUMNS): null on the other measures' rows.
    macro_ndcg: pl.Float64 | None = pa.Field(**_UNIT)
    macro_ndcg_low: pl.Float64 | None = pa.Field(**_UNIT)
    macro_ndcg_high: pl.Float64 | None = pa.Field(**_UNIT)
    weighted_ndcg: pl.Float64 | None = pa.Field(**_UNIT)
    weighted_ndcg_low: pl.Float64 | None = pa.Field(**_UNIT)
    weighted_ndcg_high: pl.Float64 | None = pa.Field(**_UNIT)
    macro_ndcg_min: pl.Float64 | None = pa.Field(**_UNIT)
    macro_ndcg_max: pl.Float64 | None = pa.Field(**_UNIT)
    judgment_version: str
    judgments_sha256: str = pa.Field(str_matches=r"^[0-9a-f]{64}$")
    candidate_pool: str
    pool_sha256: str = pa.Field(str_matches=r"^[0-9a-f]{64}$")
    spec_id: str
    project_version: str

    @pa.dataframe_check(error="the macro_ndcg columns equal their macro_value columns on the "
                        "spec's nDCG@K rows and are null on the other measures' rows")
    @classmethod
    def ndcg_columns_mirror_values(cls, data: pa.PolarsData) -> pl.LazyFrame:
        names = data.lazyframe.collect_schema().names()
        spec_ndcg = is_spec_ndcg_row().fill_null(False)
        return data.lazyframe.select(pl.all_horizontal(
            pl.when(spec_ndcg).then(pl.col(ndcg).eq_missing(pl.col(value)))
            .otherwise(pl.col(ndcg).is_null())
            for ndcg, value in NDCG_AGGREGATE_COLUMNS.items()
            if ndcg in names and value in names).alias("ok"))

    class Config:
        strict = False
        unique = ["ranker", "cutoff", "measure", "slice_column", "slice_value"]
