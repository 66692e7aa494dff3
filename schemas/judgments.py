"""A judgment version: immutable reference grades with explicit unknowns (contract section 1)."""

from __future__ import annotations

from typing import Optional

import pandera.polars as pa
import polars as pl
from pandera.api.polars.types import PolarsData

from schemas.columns import RATED_JUDGMENT_KEY, RATER, RATER_KIND
from schemas.errors import UNKNOWN_HINT
from schemas.names import NAME_LIMITS_RULE, SAFE_NAME_PATTERN, name_within_limits


class Judgments(pa.DataFrameModel):
    """Graded (query_id, doc_id) pairs of one judgment version; optional columns pass through."""

    query_id: str = pa.Field(str_length={"min_value": 1})
    doc_id: str = pa.Field(str_length={"min_value": 1})
    grade: pl.Int64 = pa.Field(ge=0, nullable=True)
    grade_status: str = pa.Field(isin=["graded", "unknown"])
    judgment_version: str = pa.Field(str_matches=SAFE_NAME_PATTERN)

    class Config:
        strict = False  # judge, rubric, judged_at ... pass through
        unique = ["query_id", "doc_id"]

    @pa.check("judgment_version", error=NAME_LIMITS_RULE)
    def judgment_version_within_limits(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(name_within_limits(data.key))

    @pa.dataframe_check(error=f"[grade] a graded row needs a grade >= 0; {UNKNOWN_HINT}")
    def graded_rows_have_a_grade(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(
            ~((pl.col("grade_status") == "graded") & pl.col("grade").is_null())
        )

    @pa.dataframe_check(error="[grade] a row with grade_status 'unknown' must leave grade empty")
    def unknown_rows_have_no_grade(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(
            ~((pl.col("grade_status") == "unknown") & pl.col("grade").is_not_null())
        )

    @pa.dataframe_check(error="[judgment_version] one judgment version per file: judgment_version has several values")
    def one_version(cls, data: PolarsData) -> pl.LazyFrame:
        return data.lazyframe.select(
            pl.col("judgment_version") == pl.col("judgment_version").first()
        )


class RatedJudgments(Judgments):
    """A version with several raters per document: one rating per (query_id, doc_id, rater)."""

    rater: str = pa.Field(str_length={"min_value": 1})
    rater_kind: Optional[str] = pa.Field(str_length={"min_value": 1})  # human, llm or free text

    class Config:
        strict = False
        unique = list(RATED_JUDGMENT_KEY)

    @pa.dataframe_check(error="[rater_kind] one rater_kind per rater: a rater has several")
    def one_kind_per_rater(cls, data: PolarsData) -> pl.LazyFrame:
        if RATER_KIND not in data.lazyframe.collect_schema().names():
            return data.lazyframe.select(pl.lit(True))
        return data.lazyframe.select(pl.col(RATER_KIND).n_unique().over(RATER) == 1)
