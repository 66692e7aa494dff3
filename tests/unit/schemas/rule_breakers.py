"""Each table's rules, listed once for the tests: a clean frame per table and, for every rule id
of ``schemas.rules``, a frame of it that breaks that rule alone."""

from __future__ import annotations

import math

import polars as pl

from schemas.rules.document_rules import DOCUMENTS
from schemas.rules.judgment_rules import JUDGMENTS, RATED_JUDGMENTS
from schemas.rules.pool_rules import CANDIDATE_POOL
from schemas.rules.query_rules import QUERIES
from schemas.rules.rule import DTYPE, NOT_NULLABLE, REQUIRED_COLUMN, Table

POOL = pl.DataFrame({
    "candidate_pool": ["p1"] * 4,
    "ranker": ["bm25", "bm25", "bm25", "dense"],
    "query_id": ["q1", "q1", "q2", "q1"],
    "doc_id": ["d1", "d2", "d1", "d1"],
    "score": [2.0, 1.0, 0.5, 3.0],
    "rank": [1, 2, 1, 1],
})
JUDGMENTS_FRAME = pl.DataFrame({
    "query_id": ["q1", "q1", "q2", "q2"],
    "doc_id": ["d1", "d2", "d1", "d9"],
    "grade": [2, 0, None, 1],
    "grade_status": ["graded", "graded", "unknown", "graded"],
    "judgment_version": ["v1"] * 4,
})
RATED = JUDGMENTS_FRAME.with_columns(rater=pl.Series(["h1", "h2", "h1", "llm"]),
                                     rater_kind=pl.Series(["human", "human", "human", "llm"]))
QUERIES_FRAME = pl.DataFrame({"query_id": ["q1", "q2"], "weight": [3.0, 0.0], "site": ["a", "b"]})
DOCUMENTS_FRAME = pl.DataFrame({"doc_id": ["d1", "d2"], "title": ["Pump seal", None],
                                "text": ["Replace the seal.", "Inspect the tubes."],
                                "source": ["manual", "work order"]})

CLEAN = {"CandidatePool": POOL, "Judgments": JUDGMENTS_FRAME, "RatedJudgments": RATED,
         "Queries": QUERIES_FRAME, "Documents": DOCUMENTS_FRAME}
TABLES = {t.name: t for t in (CANDIDATE_POOL, JUDGMENTS, RATED_JUDGMENTS, QUERIES, DOCUMENTS)}


def _set(column: str, row: int, value):
    def edit(frame: pl.DataFrame) -> pl.DataFrame:
        values = frame[column].to_list()
        values[row] = value
        return frame.with_columns(pl.Series(column, values, dtype=frame.schema[column]))
    return edit


def _repeat_first(frame: pl.DataFrame) -> pl.DataFrame:
    return pl.concat([frame, frame.head(1)])


# The rules each table declares beyond those its columns imply (there, typed, not null).
DECLARED = {
    "CandidatePool": {
        "candidate_pool_is_safe": lambda f: f.with_columns(candidate_pool=pl.lit("p 1")),
        "candidate_pool_within_limits": lambda f: f.with_columns(candidate_pool=pl.lit("..")),
        "one_candidate_pool": _set("candidate_pool", 3, "p2"),
        "ranker_non_empty": _set("ranker", 3, ""),
        "query_id_non_empty": _set("query_id", 1, ""),
        "doc_id_non_empty": _set("doc_id", 1, ""),
        "score_is_finite": _set("score", 2, math.inf),
        "unique_key": _repeat_first,
    },
    "Judgments": {
        "query_id_non_empty": _set("query_id", 1, ""),
        "doc_id_non_empty": _set("doc_id", 1, ""),
        "grade_at_least_zero": _set("grade", 0, -1),
        "grade_status_one_of": _set("grade_status", 0, "Graded"),
        "graded_rows_have_a_grade": _set("grade", 0, None),
        "unknown_rows_have_no_grade": _set("grade", 2, 1),
        "judgment_version_is_safe": lambda f: f.with_columns(judgment_version=pl.lit("v 1")),
        "judgment_version_within_limits":
            lambda f: f.with_columns(judgment_version=pl.lit("x" * 201)),
        "one_judgment_version": _set("judgment_version", 3, "v2"),
        "unique_key": _repeat_first,
    },
    "Queries": {
        "query_id_non_empty": _set("query_id", 1, ""),
        "unique_key": _set("query_id", 1, "q1"),
        "weight_at_least_zero": _set("weight", 1, -1.0),
        "weight_is_finite": _set("weight", 1, math.nan),
    },
    "Documents": {
        "unique_key": _set("doc_id", 1, "d1"),
        "doc_id_non_empty": _set("doc_id", 1, ""),
    },
}
DECLARED["RatedJudgments"] = {
    **DECLARED["Judgments"],
    "rater_non_empty": _set("rater", 0, ""),
    "rater_kind_non_empty": lambda f: f.with_columns(  # every row of the rater: one kind
        rater_kind=pl.when(pl.col("rater") == "h1").then(pl.lit("")).otherwise("rater_kind")),
    "one_kind_per_rater": _set("rater_kind", 0, "llm"),
    "unique_key": _repeat_first,
}


def _wrong_type(column: str, dtype: pl.DataType):
    other = pl.Categorical if dtype == pl.String else pl.String
    return lambda f: f.with_columns(pl.col(column).cast(other))


def breakers(table: Table) -> dict:
    """Rule id -> how to break that rule alone on the table's clean frame."""
    out = {}
    for rule in table.rules:
        column = table.column(rule.column) if rule.column in table.dtypes else None
        if rule.kind == REQUIRED_COLUMN:
            out[rule.id] = lambda f, c=rule.column: f.drop(c)
        elif rule.kind == DTYPE:
            out[rule.id] = _wrong_type(column.name, column.dtype)
        elif rule.kind == NOT_NULLABLE:
            out[rule.id] = _set(column.name, 1, None)
    return {**out, **DECLARED[table.name]}


def broken(table: Table, rule_id: str) -> pl.DataFrame:
    return breakers(table)[rule_id](CLEAN[table.name])
