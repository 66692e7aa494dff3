"""A document's ratings become its one grade under the spec's ``raters`` rule (contract
section 1, Several raters): one whole-column polars pass before the kernel.

Every rule skips an ``unknown`` rating as it skips a missing one; a document whose every
counted rating is ``unknown`` stays ``unknown``; a document no counted rater rated has no row
(it is unjudged). The output is a version without raters: query_id, doc_id, grade,
grade_status (and judgment_version when the input has it), sorted by query_id and doc_id.
"""

from __future__ import annotations

import polars as pl

from evaluation_pipeline.spec import EvaluationSpec, SpecError
from schemas import columns

_DOC = list(columns.JUDGMENT_KEY)
_GRADED = pl.col("grade_status") == columns.GRADED


class RatersError(SpecError):
    """A version with raters under a spec without a rule, or a rule naming raters that the
    version does not have."""


def is_rated(judgments: pl.DataFrame) -> bool:
    return columns.RATER in judgments.columns


def check_rule(spec: EvaluationSpec, rated: bool, raters: list[str] | None, source: str
               ) -> None:
    """Refuse, before anything is scored, a rule that cannot apply: a version with raters
    and no rule; ``rater:``/``prefer:`` on a version without raters or naming none of its
    raters (``raters``: the version's, when known)."""
    if rated and spec.raters is None:
        raise RatersError(f"{source}: the judgment version has a rater column: declare how its "
                          "ratings become one grade with the spec field 'raters' (e.g. "
                          "raters: majority:higher, or rater:<id>)")
    if spec.raters is None:
        return
    name, named = spec.rater_rule()
    if name not in ("rater", "prefer"):
        return
    if not rated:
        raise RatersError(f"{source}: spec field 'raters' is {spec.raters!r}, but the "
                          "judgment version has no rater column")
    if raters is not None and not set(named) & set(raters):
        raise RatersError(f"{source}: spec field 'raters' is {spec.raters!r}, but the "
                          f"version's raters are {', '.join(sorted(raters))}")


def counted_ratings(spec: EvaluationSpec) -> pl.Expr:
    """The ratings :func:`combine_ratings` reads under the spec's rule: a document keeps a row
    (graded or ``unknown``) exactly when it has one of them."""
    name, option = spec.rater_rule()
    if name in ("rater", "prefer"):
        return pl.col(columns.RATER).is_in(list(option))
    return pl.lit(True)


def combine_ratings(judgments: pl.DataFrame, spec: EvaluationSpec) -> pl.DataFrame:
    """The version's one grade per (query_id, doc_id) under ``spec.raters``. A version
    without raters is returned as it is (each document has its one rating, which every
    pooled rule keeps)."""
    rated = is_rated(judgments)
    check_rule(spec, rated, None, "judgments")
    if not rated:
        return judgments
    name, option = spec.rater_rule()
    ratings = judgments.lazy()
    if name == "rater":  # the rater's own rows, graded and unknown alike
        combined = ratings.filter(pl.col(columns.RATER) == option[0]).select(
            *_DOC, "grade", "grade_status")
    else:
        if name == "prefer":
            ratings = ratings.filter(pl.col(columns.RATER).is_in(list(option)))
            graded = _preferred(ratings, list(option))
        elif name == "majority":
            graded = _majority(ratings.filter(_GRADED), higher=option == ("higher",))
        else:
            graded = ratings.filter(_GRADED).group_by(_DOC).agg(_pooled(name, option))
        combined = _with_unknowns(graded.select(*_DOC, pl.col("grade").cast(pl.Int64)),
                                  ratings)
    if "judgment_version" in judgments.columns:
        combined = combined.with_columns(judgment_version=pl.lit(
            judgments["judgment_version"][0] if judgments.height else None, dtype=pl.String))
    return combined.sort(_DOC).collect()


def _pooled(name: str, option: tuple[str, ...]) -> pl.Expr:
    """The grade of a document's graded ratings (at least one), in integers throughout."""
    grade, n = pl.col("grade"), pl.len().cast(pl.Int64)
    total = grade.sum()
    if name == "mean":
        rounded = {"half_up": (2 * total + n) // (2 * n),
                   "half_down": (2 * total + n - 1) // (2 * n),
                   "floor": total // n, "ceil": (total + n - 1) // n}
        return rounded[option[0]].alias("grade")
    if name == "median":  # the lower middle grade of an even count, or the higher one
        middle = n // 2 if option == ("higher",) else (n - 1) // 2
        return grade.sort().get(middle).alias("grade")
    return (grade.max() if name == "max" else grade.min()).alias("grade")


def _majority(graded: pl.LazyFrame, higher: bool) -> pl.LazyFrame:
    """The most frequent grade; among equally frequent ones, the lower or the higher."""
    counts = graded.group_by(*_DOC, "grade").agg(pl.len().alias("count"))
    return counts.group_by(_DOC).agg(pl.col("grade").sort_by(
        ["count", "grade"], descending=[True, higher]).first())


def _preferred(ratings: pl.LazyFrame, order: list[str]) -> pl.LazyFrame:
    """The first rater of ``order`` who graded the document."""
    priority = pl.col(columns.RATER).replace_strict(order, list(range(len(order))),
                                                    default=None, return_dtype=pl.Int64)
    return (ratings.with_columns(priority.alias("priority"))
            .filter(pl.col("priority").is_not_null() & _GRADED)
            .group_by(_DOC).agg(pl.col("grade").sort_by("priority").first()))


def _with_unknowns(graded: pl.LazyFrame, ratings: pl.LazyFrame) -> pl.LazyFrame:
    """The graded documents, and an unknown row for each rated document with no grade."""
    unknown = (ratings.select(_DOC).unique().join(graded.select(_DOC), on=_DOC, how="anti")
               .with_columns(grade=pl.lit(None, dtype=pl.Int64),
                             grade_status=pl.lit(columns.UNKNOWN)))
    return pl.concat([graded.with_columns(grade_status=pl.lit(columns.GRADED)), unknown])
