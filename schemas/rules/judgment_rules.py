"""A judgment version's rules (contract section 1): graded (query_id, doc_id) pairs with
explicit unknowns, one version per file; with ``rater``, one rating per rater."""

from __future__ import annotations

import polars as pl

from schemas.columns import (
    GRADE_STATUSES,
    GRADED,
    JUDGMENT_DTYPES,
    JUDGMENT_KEY,
    RATED_JUDGMENT_KEY,
    RATER,
    RATER_KIND,
    UNKNOWN,
)
from schemas.errors import UNKNOWN_HINT
from schemas.rules.rule import (
    NOT_NULL,
    Column,
    Tally,
    at_least_zero,
    columns_of,
    non_empty,
    one_of,
    one_safe_name,
    per_row,
    table,
    unique_key,
)

_STATUS, _GRADE = pl.col("grade_status"), pl.col("grade")

_COLUMNS = columns_of(JUDGMENT_DTYPES, nullable=("grade",), null_words={"grade_status": (
    f"{NOT_NULL}: every row states 'graded' or 'unknown'; {UNKNOWN_HINT}")})

_RULES = (
    non_empty("query_id"),
    non_empty("doc_id"),
    at_least_zero("grade", f"grades are integers >= 0; {UNKNOWN_HINT}"),
    one_of("grade_status", GRADE_STATUSES),
    per_row("graded_rows_have_a_grade", "grade",
            f"a graded row needs a grade >= 0; {UNKNOWN_HINT}", ("grade_status", "grade"),
            lambda: ~((_STATUS == GRADED) & _GRADE.is_null()),
            lambda F: ~((F.col("grade_status") == GRADED) & F.col("grade").isNull())),
    per_row("unknown_rows_have_no_grade", "grade",
            "a row with grade_status 'unknown' must leave grade empty", ("grade_status", "grade"),
            lambda: ~((_STATUS == UNKNOWN) & _GRADE.is_not_null()),
            lambda F: ~((F.col("grade_status") == UNKNOWN) & F.col("grade").isNotNull())),
    *one_safe_name("judgment_version", "judgment version"),
)

# The Spark engine counts a row that breaks any of the grade rules once, in one sentence.
_GRADE_TALLY = Tally("grade, grade_status", "grade_status must be graded (with a grade >= 0) "
                     "or unknown (with no grade)",
                     ("grade_status_not_null", "grade_at_least_zero", "grade_status_one_of",
                      "graded_rows_have_a_grade", "unknown_rows_have_no_grade"))

JUDGMENTS = table("Judgments", _COLUMNS, (*_RULES, unique_key(JUDGMENT_KEY)),
                  spark_tallies=(_GRADE_TALLY,))

# A version with several raters per document (the Spark engine scores none: no Spark forms
# beyond the version's own).
RATED_JUDGMENTS = table(
    "RatedJudgments",
    (*_COLUMNS, Column(RATER, pl.String), Column(RATER_KIND, pl.String, required=False)),
    (non_empty(RATER),
     non_empty(RATER_KIND),  # human, llm or free text
     per_row("one_kind_per_rater", RATER_KIND, "one rater_kind per rater: a rater has several",
             (RATER, RATER_KIND), lambda: pl.col(RATER_KIND).n_unique().over(RATER) == 1),
     *_RULES,
     unique_key(RATED_JUDGMENT_KEY)),
    spark_tallies=(_GRADE_TALLY,))
