"""Every table's column names, dtypes and statuses, declared once (docs/CONTRACT.md, sections
1 to 5).

This module imports nothing but polars, so the readers, the engines, the kernels and the pandera
models all take their names from it without loading pandera. Each tuple is in the order the
contract lists it, which is the order the files are written in.
"""

from __future__ import annotations

from collections.abc import Mapping

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
# A file may leave out the column that names its version: the reader fills it in (flag or stem).
JUDGMENT_NAME_COLUMNS = ("judgment_version",)
# Optional: who gave each rating (several raters per document), and what kind of rater that is
# (``human``, ``llm`` or free text). With ``rater`` the key is RATED_JUDGMENT_KEY.
RATER = "rater"
RATER_KIND = "rater_kind"
RATER_COLUMNS = (RATER, RATER_KIND)
RATER_KINDS = ("human", "llm")  # the usual kinds; any non-empty text is accepted
RATED_JUDGMENT_KEY = (*JUDGMENT_KEY, RATER)

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
# A file may leave out the columns that name its pool and ranker: the reader fills them in.
RUN_NAME_COLUMNS = ("candidate_pool", "ranker")
RANK = "rank"  # optional: the ranker's own position, display only unless the spec says so

# --- queries (contract section 1) -------------------------------------------------------------
QUERY_COLUMNS = ("query_id", "weight")  # any further string column is a slice
QUERY_DTYPES = {"query_id": pl.String, "weight": pl.Float64}  # weight: optional

# --- documents (contract section 1, Judge ratings) ---------------------------------------------
# What a judge reads of each document: its title (may be empty) and text; any further column
# passes through.
DOCUMENT_KEY = ("doc_id",)
DOCUMENT_DTYPES = {"doc_id": pl.String, "title": pl.String, "text": pl.String}
QUERY_TEXT = "query_text"  # the queries table's text of a query (optional; a judge needs it)

# --- a judge's ratings (contract section 1, Judge ratings) -------------------------------------
# The provenance of each rating ``ndcg-eval judge`` writes, beside the version's own columns and
# ``rater``/``rater_kind`` (optional columns of a version: read and passed through as text).
JUDGE_MODEL = "judge_model"
JUDGE_TEMPLATE = "judge_template"
JUDGE_TEMPLATE_SHA256 = "judge_template_sha256"
JUDGE_TEMPERATURE = "judge_temperature"
JUDGE_ANSWER = "judge_answer"
JUDGE_TOKENS = "judge_tokens"
JUDGE_REASON = "judge_reason"
JUDGE_CACHE_KEY = "judge_cache_key"
JUDGE_COLUMNS = (JUDGE_MODEL, JUDGE_TEMPLATE, JUDGE_TEMPLATE_SHA256, JUDGE_TEMPERATURE,
                 JUDGE_ANSWER, JUDGE_TOKENS, JUDGE_REASON, JUDGE_CACHE_KEY)
LLM = "llm"  # rater_kind of a judge's ratings

# --- per-query results (contract sections 3 and 5) --------------------------------------------
STATUSES = ("scored", "no_positive", "incomplete", "not_judged", "missing_from_run")
# A row is one (ranker, query, measure); the measure's cutoff (null for a measure without one)
# leads the measure in the rows' order, so the rows of the spec's nDCG@K keep the order they had
# when they were the only rows.
PER_QUERY_KEY = ("ranker", "query_id", "cutoff", "measure")
# The key of the spec's own nDCG@K rows (``spec_ndcg_rows``), the rows before other measures.
NDCG_KEY = ("ranker", "query_id", "cutoff")
MEASURE_COLUMNS = (
    "value",
    "value_min",
    "value_max",
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
    "ndcg_min",
    "ndcg_max",
    "n_holes",
    "every_grading_scored",
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
    "measure": pl.String,
    "value": pl.Float64,
    "value_min": pl.Float64,
    "value_max": pl.Float64,
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
    "ndcg_min": pl.Float64,
    "ndcg_max": pl.Float64,
    "n_holes": pl.Int64,
    "every_grading_scored": pl.Boolean,
    **dict.fromkeys(LINEAGE_COLUMNS, pl.String),
}



def ndcg_name(cutoff: int) -> str:
    """The canonical name of the spec's own nDCG@K (``measure`` on its rows)."""
    return f"nDCG@{cutoff}"


def measure_label(measure: str, cutoff: int | None) -> str:
    """How tables and sentences name a measure: the spec's own nDCG@K as ``NDCG@K``, as
    reports named it before the other measures, any other by its canonical name."""
    return f"NDCG@{cutoff}" if cutoff is not None and measure == ndcg_name(cutoff) else measure


def measure_of(entry: Mapping) -> str:
    """The measure of a comparison, regression or result entry (a dict with ``cutoff`` and,
    written since the other measures, ``measure``): one written before is the spec's nDCG@K."""
    return entry.get("measure") or ndcg_name(entry["cutoff"])


def label_of(entry: Mapping) -> str:
    """``measure_label`` of such an entry."""
    return measure_label(measure_of(entry), entry["cutoff"])


def is_spec_ndcg_row() -> pl.Expr:
    """Whether a per-query row is the spec's own nDCG@K (its ``measure`` is ``nDCG@<cutoff>``);
    null where the row has no cutoff."""
    return pl.col("measure") == pl.format("nDCG@{}", pl.col("cutoff"))


def spec_ndcg_rows(per_query: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    """The rows of the spec's own nDCG@K (``measure`` is ``nDCG@<cutoff>``): what the
    aggregates, the comparisons, the history and the nightly watch read today. A file written
    before the other measures holds no other row (and no ``measure`` column)."""
    if "measure" not in per_query.collect_schema().names():
        return per_query
    return per_query.filter(is_spec_ndcg_row())


# The measures' columns of a row of the spec's nDCG@K, from the columns files written before the
# measures had: ``with_measure_columns`` adds them to such a file's rows as it is read.
_FORMER = {"value": "ndcg", "value_min": "ndcg_min", "value_max": "ndcg_max"}


def with_measure_columns(per_query: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    """Per-query rows (a frame, or a scan) with ``measure``, ``value``, ``value_min`` and
    ``value_max``: a file written before them holds the spec's nDCG@K rows alone, so
    ``measure`` is ``nDCG@<cutoff>`` and the values are its ``ndcg`` columns. Rows that have
    them are returned as they are."""
    names = per_query.collect_schema().names()
    if "measure" in names or "cutoff" not in names or "ndcg" not in names:
        return per_query
    added = [pl.format("nDCG@{}", pl.col("cutoff")).alias("measure"),
             *(pl.col(old).alias(new) for new, old in _FORMER.items() if old in names)]
    order = [c for c in PER_QUERY_COLUMNS if c in names or c == "measure"
             or (c in _FORMER and _FORMER[c] in names)]
    return per_query.with_columns(added).select(
        order + [c for c in names if c not in order])


# --- the per-query columns a report reads (aggregates, comparisons, the nightly watch) --------
# The rest of a row (dcg, ideal_dcg, the judged counts) is copied into the report, never held.
REPORT_COLUMNS = ("ranker", "query_id", "cutoff", "ndcg", "status", "judged_at_k",
                  "candidate_recall", "n_candidates", "ndcg_min", "ndcg_max",
                  "every_grading_scored")
REPORT_DTYPES = {column: PER_QUERY_DTYPES[column] for column in REPORT_COLUMNS}
# The rows the report's sums read, one per (ranker, query, measure): every measure's value and
# bounds under one name. A file written before the measures has the spec's nDCG@K alone, and
# its ``ndcg`` columns are read as the values (``aggregation.sums``).
ROW_COLUMNS = ("ranker", "query_id", "cutoff", "measure", "value", "status", "judged_at_k",
               "candidate_recall", "n_candidates", "value_min", "value_max",
               "every_grading_scored")
ROW_DTYPES = {column: PER_QUERY_DTYPES[column] for column in ROW_COLUMNS}
# Where a file written before the measures keeps each value column it lacks.
ROW_FORMER = _FORMER
# Columns a comparison's frames may lack (they are read for the aggregates alone), and the
# bounds, which files written before them lack: null then (no bounds stated).
REPORT_OPTIONAL_COLUMNS = ("judged_at_k", "n_candidates", "ndcg_min", "ndcg_max",
                           "value_min", "value_max", "every_grading_scored")
# Per-query NDCG differences within this are ties (float rounding, not a ranking change).
TIE_TOLERANCE = 1e-12

# --- aggregates (contract section 4) ----------------------------------------------------------
AGGREGATE_KEY = ("ranker", "cutoff", "measure", "slice_column", "slice_value")
STATUS_COUNT_COLUMNS = tuple(f"n_{status}" for status in STATUSES)
# The means of every measure, under one name (the row's ``measure`` says which).
INTERVAL_COLUMNS = ("macro_value_low", "macro_value_high", "weighted_value_low",
                    "weighted_value_high")
# The numbers of an aggregate row, in aggregates.parquet's order (the lineage columns follow).
AGGREGATE_DTYPES = {
    "ranker": pl.String, "cutoff": pl.Int64, "measure": pl.String, "slice_column": pl.String,
    "slice_value": pl.String, "n_queries": pl.Int64, "n_with_number": pl.Int64,
    "macro_value": pl.Float64, "macro_value_low": pl.Float64, "macro_value_high": pl.Float64,
    "weighted_value": pl.Float64, "weighted_value_low": pl.Float64,
    "weighted_value_high": pl.Float64,
    **dict.fromkeys(STATUS_COUNT_COLUMNS, pl.Int64),
    "mean_judged_at_k": pl.Float64, "mean_candidate_recall": pl.Float64,
    # The bounds of the macro mean over every grading of the holes (contract section 4).
    "n_bounded": pl.Int64, "macro_value_min": pl.Float64, "macro_value_max": pl.Float64,
}
# The spec's nDCG@K rows keep the names they had before the other measures: each of these
# equals its ``value`` column on those rows and is null on the other measures' rows.
NDCG_AGGREGATE_COLUMNS = {column.replace("value", "ndcg"): column
                          for column in AGGREGATE_DTYPES if "_value" in column}
NDCG_INTERVAL_COLUMNS = tuple(column.replace("value", "ndcg") for column in INTERVAL_COLUMNS)


def with_ndcg_aggregates(aggregates: pl.DataFrame) -> pl.DataFrame:
    """Aggregate rows with ``NDCG_AGGREGATE_COLUMNS`` after the numbers: the ``value`` ones on
    the spec's nDCG@K rows, null on the others."""
    spec_ndcg = is_spec_ndcg_row().fill_null(False)
    return aggregates.with_columns(
        pl.when(spec_ndcg).then(pl.col(value)).otherwise(None).alias(name)
        for name, value in NDCG_AGGREGATE_COLUMNS.items())

# --- evaluation history (history/history.parquet) ------------------------------------------
# One evaluation is one (pool, version, spec); a history row is one of its aggregate rows.
# ``slice`` and ``slice_value`` are null on the overall row.
EVALUATION_KEY = ("candidate_pool", "judgment_version", "spec_id")
# The history's columns of every measure's numbers, and the ndcg column each mirrors on the
# spec's nDCG@K rows (a history written before the measures has the ndcg ones alone).
HISTORY_VALUES = {"value": "ndcg", "value_low": "ndcg_low", "value_high": "ndcg_high",
                  "weighted_value": "weighted_ndcg", "weighted_value_low": "weighted_ndcg_low",
                  "weighted_value_high": "weighted_ndcg_high", "value_min": "ndcg_min",
                  "value_max": "ndcg_max"}
HISTORY_KEY = (*EVALUATION_KEY, "ranker", "cutoff", "measure", "slice", "slice_value")
HISTORY_MEASURES = (
    "ndcg",
    "ndcg_low",
    "ndcg_high",
    "weighted_ndcg",
    "weighted_ndcg_low",
    "weighted_ndcg_high",
    "n_queries",
    "n_with_number",
    *STATUS_COUNT_COLUMNS,
    "mean_judged_at_k",
    "mean_candidate_recall",
    # The macro mean's bounds over every grading of the holes, over n_bounded queries.
    "n_bounded",
    "ndcg_min",
    "ndcg_max",
    # Every measure's numbers under one name (the ndcg columns above: the spec's nDCG@K rows
    # alone, null on the other measures' rows).
    *HISTORY_VALUES,
)
# The comparison with the previous night and the attribution (overall rows only, else null).
HISTORY_NIGHTLY = (
    "previous_pool",
    "verdict",
    "mean_difference",
    "difference_low",
    "difference_high",
    "p_value",
    "p_value_holm",
    # The tests p_value_holm is adjusted over, in words (the spec's family).
    "holm_family",
    # The sign-flip resamples behind p_value (its floor is 1 / (1 + test_resamples)).
    "test_resamples",
    # The interval at the level the family holds the test to (it excludes 0 exactly when
    # p_value_holm < alpha), and the least change the test finds at that level and the power.
    "adjusted_level",
    "difference_low_adjusted",
    "difference_high_adjusted",
    "detectable_effect",
    "difference_min",
    "difference_max",
    "holds_for_every_grading",
    "previous_judgment_version",
    "from_judgments",
    "from_pool",
)
# ``headline``: this version is the night's headline (the newest published when the pool was
# first evaluated); ``first_evaluated_at`` survives reruns, ``evaluated_at`` is the latest.
# ``headline_measure``: the row's measure is one of the spec's headline measures (its
# verdicts alert; the trend draws these).
HISTORY_TIMES = ("headline", "headline_measure", "ready_at", "first_evaluated_at",
                 "evaluated_at")
HISTORY_COLUMNS = (
    *HISTORY_KEY,
    *HISTORY_MEASURES,
    *HISTORY_NIGHTLY,
    *HISTORY_TIMES,
    *(c for c in LINEAGE_COLUMNS if c not in EVALUATION_KEY),
)
_INTEGER = ("cutoff", "n_queries", "n_with_number", *STATUS_COUNT_COLUMNS, "n_bounded",
            "test_resamples")
_TEXT = (*HISTORY_KEY, "previous_pool", "verdict", "holm_family", "previous_judgment_version",
         *LINEAGE_COLUMNS)
_TIMES = ("ready_at", "first_evaluated_at", "evaluated_at")


def _history_dtype(column: str) -> pl.DataType:
    if column in _INTEGER:
        return pl.Int64
    if column in _TEXT:
        return pl.String
    if column in _TIMES:
        return pl.Datetime("us", "UTC")
    return pl.Boolean if column in ("headline", "headline_measure",
                                    "holds_for_every_grading") else pl.Float64


HISTORY_DTYPES = {column: _history_dtype(column) for column in HISTORY_COLUMNS}

# --- the nightly comparison's verdicts -----------------------------------------------------------
# (nightly.verdicts decides, nightly.alerts and report read)
REGRESSED = "regressed"
IMPROVED = "improved"
NO_CHANGE = "no_change"
# Neither a change nor its absence is shown: the adjusted interval reaches past min_effect.
INCONCLUSIVE = "inconclusive"
VERDICTS = (REGRESSED, IMPROVED, NO_CHANGE, INCONCLUSIVE)
