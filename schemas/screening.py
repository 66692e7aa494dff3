"""Each table's rules (``schemas.rules``) as one polars pass, to spare clean input pandera.

``screen`` says whether the model would accept a frame: it evaluates the very rules the model is
made of (there, typed, no nulls, each rule's expression, one safe name per file, unique keys),
each as an aggregate, in one lazy select. A frame that passes is returned as it is; one that
fails (or a model without a screen) goes to pandera, whose message names the file, column,
rule and rows. A test holds each screen to its model on generated frames, so the screen can
only be faster, never more lenient.

``check_keys=False`` leaves key uniqueness to a caller that finds duplicates anyway (the
scoring blocks put each block's rows in doc_id order, where repeats sit side by side).
"""

from __future__ import annotations

import importlib

import polars as pl

from schemas.columns import RATER, STATUSES, is_spec_ndcg_row
from schemas.keys import unique_rows
from schemas.rules.document_rules import DOCUMENTS
from schemas.rules.judgment_rules import JUDGMENTS, RATED_JUDGMENTS
from schemas.rules.pool_rules import CANDIDATE_POOL
from schemas.rules.query_rules import QUERIES
from schemas.rules.rule import DTYPE, KEY, NOT_NULLABLE, ONE_NAME, REQUIRED_COLUMN, Table

TABLES = {t.name: t for t in (CANDIDATE_POOL, JUDGMENTS, RATED_JUDGMENTS, QUERIES, DOCUMENTS)}


def validate(
    model,
    frame: pl.DataFrame,
    source: str,
    *,
    line_numbers: pl.Series | None = None,
    row_label: str = "row",
    check_keys: bool = True,
) -> pl.DataFrame:
    """``frame`` if it keeps every rule of ``model`` (a model class or its name); otherwise raise
    :class:`schemas.errors.InputError` listing every failure (``schemas.validation.validate``)."""
    name = rated_model(model if isinstance(model, str) else model.__name__, frame)
    if screen(name, frame, check_keys=check_keys):
        return frame
    from schemas import validation

    model_class = getattr(importlib.import_module("schemas"), name)
    return validation.validate(model_class, frame, source, line_numbers=line_numbers,
                               row_label=row_label)


def rated_model(name: str, frame: pl.DataFrame) -> str:
    """A judgment version with a ``rater`` column is held to the model of rated versions."""
    return "RatedJudgments" if name == "Judgments" and RATER in frame.columns else name


def screen(name: str, frame: pl.DataFrame, *, check_keys: bool = True) -> bool:
    """True if the model called ``name`` accepts ``frame``; False if it may not (or has no
    screen)."""
    name = rated_model(name, frame)
    if name in TABLES:
        return screen_table(TABLES[name], frame, check_keys=check_keys)
    rules = _SCREENS.get(name)
    return rules is not None and rules(frame, check_keys)


def screen_table(table: Table, frame: pl.DataFrame, *, check_keys: bool = True) -> bool:
    """True if ``frame`` keeps every rule of ``table``."""
    schema = frame.schema
    for column in table.columns:
        if column.name not in schema:
            if column.required:
                return False
        elif schema[column.name] != column.dtype:
            return False
    if table.strict and set(schema) != set(table.dtypes):
        return False
    if frame.height == 0:
        return True
    aggregates, rows, key = [], [], None
    for rule in table.rules:
        if rule.kind in (REQUIRED_COLUMN, DTYPE) or not set(rule.reads) <= set(schema):
            continue  # an optional column that is absent: its rules do not apply
        if rule.kind == KEY:
            key = rule
        elif rule.kind == NOT_NULLABLE:
            aggregates.append(pl.col(rule.column).null_count() == 0)
        elif rule.kind == ONE_NAME:
            # The first name as a literal: about a third faster than against first().
            first = frame.select(pl.col(rule.column).first()).item()
            rows.append(pl.col(rule.column) == pl.lit(first, pl.String))
        elif rule.screen is not None:
            aggregates.append(rule.screen())
        else:
            rows.append(rule.holds())
    # The row rules as one: a row breaks it when it breaks one of them (a null, as in pandera's
    # checks, breaks nothing), and one aggregate runs about twice as fast as one per rule. A
    # null aggregate (a name rule on a null first name) is the null rule's to refuse.
    if rows:
        aggregates.append(pl.all_horizontal(rows).all())
    if aggregates and not _holds(frame, pl.all_horizontal(aggregates).fill_null(True)):
        return False
    return not (check_keys and key is not None) or _keys_unique(frame, list(key.reads))


def _types(frame: pl.DataFrame, required: dict, optional: dict) -> bool:
    schema = frame.schema
    return all(schema.get(c) == t for c, t in required.items()) and all(
        schema[c] == t for c, t in optional.items() if c in schema)


def _no_nulls(frame: pl.DataFrame, columns) -> bool:
    # By expression, not frame[c]: that would materialize a literal column (one pool name).
    return sum(frame.select(pl.col(c).null_count() for c in columns).row(0)) == 0


def _holds(frame: pl.DataFrame, rule: pl.Expr) -> bool:
    """``rule`` (a boolean aggregate) on ``frame``, lazily: the streaming engine runs such a
    pass over millions of rows about twice as fast as an eager select."""
    return bool(frame.lazy().select(rule).collect().item())


def _keys_unique(frame: pl.DataFrame, keys: list[str]) -> bool:
    return bool(unique_rows(frame.lazy(), keys).collect().to_series().all())


_RESULT_STRINGS = ("ranker", "query_id", "measure", "status", "judgment_version",
                   "judgments_sha256", "candidate_pool", "pool_sha256", "spec_id",
                   "project_version")
_RESULT_COUNTS = ("n_candidates", "n_graded", "n_unknown", "n_unjudged", "n_holes")
_RESULT_SHARES = ("ndcg", "judged_at_k", "candidate_recall", "ndcg_min", "ndcg_max")  # in [0, 1]
_RESULT_FLOATS = ("dcg", "ideal_dcg", *_RESULT_SHARES)
_RESULT_VALUES = ("value", "value_min", "value_max")  # any measure's: no range
_RESULT_FLAGS = ("every_grading_scored",)


def _per_query_results(frame: pl.DataFrame, check_keys: bool) -> bool:
    required = ({c: pl.String for c in _RESULT_STRINGS}
                | {c: pl.Int64 for c in ("cutoff", *_RESULT_COUNTS)}
                | {c: pl.Float64 for c in (*_RESULT_FLOATS, *_RESULT_VALUES)}
                | {c: pl.Boolean for c in _RESULT_FLAGS})
    if set(frame.columns) != set(required) or not _types(frame, required, {}):
        return False  # strict: exactly these columns
    if not _no_nulls(frame, (*_RESULT_STRINGS, *_RESULT_COUNTS, *_RESULT_FLAGS)):
        return False
    if frame.height == 0:
        return True
    sha = r"^[0-9a-f]{64}$"
    status, value = pl.col("status"), pl.col("value")
    own = is_spec_ndcg_row()
    rows_ok = pl.all_horizontal(
        (pl.col("cutoff").is_null() | (pl.col("cutoff") >= 1)).all(),
        (pl.col("measure").str.len_bytes() > 0).all(),
        *((pl.col(c) >= 0).all() for c in _RESULT_COUNTS),
        *((~pl.col(c).is_nan()).all() for c in _RESULT_VALUES),
        # NaN passes no screen (pandera's float checks decide about it).
        *((~pl.col(c).is_nan()).all() & (pl.col(c) >= 0).all() for c in _RESULT_FLOATS),
        *((pl.col(c) <= 1 + 1e-12).all() for c in _RESULT_SHARES),
        status.is_in(list(STATUSES)).all(),
        pl.col("judgments_sha256").str.contains(sha).all(),
        pl.col("pool_sha256").str.contains(sha).all(),
        (pl.col("spec_id").str.len_bytes() > 0).all(),
        (pl.col("project_version").str.len_bytes() > 0).all(),
        (pl.when(status == "scored").then(value.is_not_null())
         .when(status.is_in(["incomplete", "not_judged"])).then(value.is_null())
         .otherwise(True)).all(),
        *(pl.when(own).then(pl.col(a).eq_missing(pl.col(b))).otherwise(pl.col(a).is_null())
          .all() for a, b in (("ndcg", "value"), ("ndcg_min", "value_min"),
                              ("ndcg_max", "value_max"))),
        _bounds_are_a_range().all(),
        (~pl.col("every_grading_scored") | pl.col("value_min").is_not_null()).all(),
    )
    return _holds(frame, rows_ok) and (
        not check_keys or _keys_unique(frame, ["ranker", "query_id", "measure"]))


def _bounds_are_a_range() -> pl.Expr:
    """PerQueryResults.bounds_are_a_range, row by row."""
    low, high = pl.col("value_min"), pl.col("value_max")
    return ((low.is_null() == high.is_null()) & (low.is_null() | (low <= high + 1e-12))
            & ((pl.col("n_holes") > 0) | low.eq_missing(pl.col("value"))))


_SCREENS = {"PerQueryResults": _per_query_results}
