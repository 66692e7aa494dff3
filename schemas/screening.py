"""The rules of the pool and judgment models as one polars pass, to spare clean input pandera.

``screen`` says whether the model would accept a frame: the same dtypes, nulls, non-empty ids,
finite scores, grade rules, one safe name per file and unique keys. A frame that passes is
returned as it is; one that fails (or a model without a screen) goes to pandera, whose message
names the file, column, rule and rows. A test holds each screen to its model on generated
frames, so the screen can only be faster, never more lenient.

``check_keys=False`` leaves key uniqueness to a caller that finds duplicates anyway (the
scoring blocks put each block's rows in doc_id order, where repeats sit side by side).
"""

from __future__ import annotations

import importlib

import polars as pl

from schemas.columns import JUDGMENT_KEY, RATED_JUDGMENT_KEY, RATER, RATER_KIND, STATUSES
from schemas.keys import unique_rows
from schemas.names import is_safe_name


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
    rules = _SCREENS.get(rated_model(name, frame))
    return rules is not None and rules(frame, check_keys)


def _types(frame: pl.DataFrame, required: dict, optional: dict) -> bool:
    schema = frame.schema
    return all(schema.get(c) == t for c, t in required.items()) and all(
        schema[c] == t for c, t in optional.items() if c in schema)


def _no_nulls(frame: pl.DataFrame, columns) -> bool:
    # By expression, not frame[c]: that would materialize a literal column (one pool name).
    return sum(frame.select(pl.col(c).null_count() for c in columns).row(0)) == 0


def _one_safe_name(frame: pl.DataFrame, column: str) -> bool:
    if frame.height == 0:
        return True
    # By expression, not frame[column]: that would materialize a literal column (one name).
    first = frame.select(pl.col(column).first()).item()
    return is_safe_name(first) and _holds(frame, (pl.col(column) == first).all())


def _holds(frame: pl.DataFrame, rule: pl.Expr) -> bool:
    """``rule`` (a boolean aggregate) on ``frame``, lazily: the streaming engine runs such a
    pass over millions of rows about twice as fast as an eager select."""
    return bool(frame.lazy().select(rule).collect().item())


def _non_empty(*columns: str) -> pl.Expr:
    return pl.all_horizontal([pl.col(c).str.len_bytes() > 0 for c in columns]).all()


def _keys_unique(frame: pl.DataFrame, keys: list[str]) -> bool:
    return bool(unique_rows(frame.lazy(), keys).collect().to_series().all())


def _candidate_pool(frame: pl.DataFrame, check_keys: bool) -> bool:
    ids = ("ranker", "query_id", "doc_id")
    required = {c: pl.String for c in ("candidate_pool", *ids)} | {"score": pl.Float64}
    if not _types(frame, required, {"rank": pl.Int64}) or not _no_nulls(frame, required):
        return False
    if frame.height and not _holds(frame, _non_empty(*ids) & pl.col("score").is_finite().all()):
        return False
    return _one_safe_name(frame, "candidate_pool") and (
        not check_keys or _keys_unique(frame, ["ranker", "query_id", "doc_id"]))


def _judgments(frame: pl.DataFrame, check_keys: bool, rated: bool = False) -> bool:
    ids = ("query_id", "doc_id", *((RATER,) if rated else ()))
    strings = (*ids, "grade_status", "judgment_version")
    required = {c: pl.String for c in strings} | {"grade": pl.Int64}
    kind = (RATER_KIND,) if rated and RATER_KIND in frame.columns else ()
    if not _types(frame, required, dict.fromkeys(kind, pl.String)) or not _no_nulls(
            frame, (*strings, *kind)):
        return False
    status, grade = pl.col("grade_status"), pl.col("grade")
    rows_ok = (((status == "graded") & grade.is_not_null() & (grade >= 0))
               | ((status == "unknown") & grade.is_null())).all()
    one_kind = [(pl.col(RATER_KIND).n_unique().over(RATER) == 1).all()] if kind else []
    if frame.height and not _holds(frame, pl.all_horizontal(
            _non_empty(*ids, *kind) & rows_ok, *one_kind)):
        return False
    return _one_safe_name(frame, "judgment_version") and (
        not check_keys or _keys_unique(frame, list(RATED_JUDGMENT_KEY if rated
                                                   else JUDGMENT_KEY)))


def _rated_judgments(frame: pl.DataFrame, check_keys: bool) -> bool:
    return _judgments(frame, check_keys, rated=True)


_RESULT_STRINGS = ("ranker", "query_id", "status", "judgment_version", "judgments_sha256",
                   "candidate_pool", "pool_sha256", "spec_id", "project_version")
_RESULT_COUNTS = ("cutoff", "n_candidates", "n_graded", "n_unknown", "n_unjudged", "n_holes")
_RESULT_SHARES = ("ndcg", "judged_at_k", "candidate_recall", "ndcg_min", "ndcg_max")  # in [0, 1]
_RESULT_FLOATS = ("dcg", "ideal_dcg", *_RESULT_SHARES)
_RESULT_FLAGS = ("every_grading_scored",)


def _per_query_results(frame: pl.DataFrame, check_keys: bool) -> bool:
    required = ({c: pl.String for c in _RESULT_STRINGS} | {c: pl.Int64 for c in _RESULT_COUNTS}
                | {c: pl.Float64 for c in _RESULT_FLOATS} | {c: pl.Boolean for c in _RESULT_FLAGS})
    if set(frame.columns) != set(required) or not _types(frame, required, {}):
        return False  # strict: exactly these columns
    if not _no_nulls(frame, (*_RESULT_STRINGS, *_RESULT_COUNTS, *_RESULT_FLAGS)):
        return False
    if frame.height == 0:
        return True
    sha = r"^[0-9a-f]{64}$"
    status, ndcg = pl.col("status"), pl.col("ndcg")
    rows_ok = pl.all_horizontal(
        (pl.col("cutoff") >= 1).all(),
        *((pl.col(c) >= 0).all() for c in _RESULT_COUNTS[1:]),
        # NaN passes no screen (pandera's float checks decide about it).
        *((~pl.col(c).is_nan()).all() & (pl.col(c) >= 0).all() for c in _RESULT_FLOATS),
        *((pl.col(c) <= 1 + 1e-12).all() for c in _RESULT_SHARES),
        status.is_in(list(STATUSES)).all(),
        pl.col("judgments_sha256").str.contains(sha).all(),
        pl.col("pool_sha256").str.contains(sha).all(),
        (pl.col("spec_id").str.len_bytes() > 0).all(),
        (pl.col("project_version").str.len_bytes() > 0).all(),
        (pl.when(status == "scored").then(ndcg.is_not_null())
         .when(status.is_in(["incomplete", "not_judged"])).then(ndcg.is_null())
         .otherwise(True)).all(),
        _bounds_are_a_range().all(),
        (~pl.col("every_grading_scored") | pl.col("ndcg_min").is_not_null()).all(),
    )
    return _holds(frame, rows_ok) and (
        not check_keys or _keys_unique(frame, ["ranker", "query_id", "cutoff"]))


def _bounds_are_a_range() -> pl.Expr:
    """PerQueryResults.bounds_are_a_range, row by row."""
    low, high = pl.col("ndcg_min"), pl.col("ndcg_max")
    return ((low.is_null() == high.is_null()) & (low.is_null() | (low <= high + 1e-12))
            & ((pl.col("n_holes") > 0) | low.eq_missing(pl.col("ndcg"))))


_SCREENS = {"CandidatePool": _candidate_pool, "Judgments": _judgments,
            "RatedJudgments": _rated_judgments,
            "PerQueryResults": _per_query_results}
