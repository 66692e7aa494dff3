"""From measure names and a spec to the kernel's arrays, and the one call that scores them.

Every check a user can fail is made here, before the kernel runs: a name that does not parse,
a measure the spec's tie rule does not define, a grade above ERR's or RBP's ``max_rel``, a gain
map without a gain for a grade the holes may take.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from evaluation_pipeline.measures import kinds
from evaluation_pipeline.measures.declarations import NOT_PROVIDED
from evaluation_pipeline.measures.parse import (
    Measure,
    MeasureError,
    average_ties_refusal,
    parse_measure,
)
from evaluation_pipeline.metric import discounts
from evaluation_pipeline.metric.discounts import discount_table
from evaluation_pipeline.metric.gains import GainError, gains_for_grades, scale_gains
from evaluation_pipeline.metric.kernels.codes import (
    NO_POSITIVE_EXCLUDE,
    NO_POSITIVE_ONE,
    NO_POSITIVE_ZERO,
    TIES_AVERAGE,
    TIES_DOC_ASC,
    TIES_DOC_DESC,
    TIES_RANK,
)
from evaluation_pipeline.spec import MAX_EXPONENTIAL_GRADE, EvaluationSpec

_TIES = {"average": TIES_AVERAGE, "doc_id": TIES_DOC_ASC, "trec_eval": TIES_DOC_DESC,
         "rank": TIES_RANK}
_NO_POSITIVE = {"exclude": NO_POSITIVE_EXCLUDE, "zero": NO_POSITIVE_ZERO,
                "one": NO_POSITIVE_ONE}
_DCG_GAIN = {NOT_PROVIDED: kinds.GAIN_SPEC, "log2": kinds.GAIN_LINEAR,
             "exp-log2": kinds.GAIN_EXPONENTIAL}


class MeasureValues(NamedTuple):
    """Per (query, measure): the number (NaN: none), its status (``kinds.SCORED`` ...,
    ``schemas.columns.STATUSES`` order) and its least and greatest over the holes (NaN: none,
    or not computed)."""

    measures: tuple[Measure, ...]
    value: np.ndarray
    status: np.ndarray
    least: np.ndarray
    greatest: np.ndarray


def measures_of(names: Sequence[str | Measure]) -> tuple[Measure, ...]:
    """The measures named, parsed, each once, in the order first named."""
    parsed = [name if isinstance(name, Measure) else parse_measure(name) for name in names]
    return tuple(dict.fromkeys(parsed))


def plan_measures(measures: Sequence[Measure], spec: EvaluationSpec, whole: int):
    """The kernel's :class:`kernels.Plan`; ``whole``: the cutoff of a measure without one (the
    longest list the kernel will see)."""
    from evaluation_pipeline.metric.measures.kernels import Plan

    rows = []
    for measure in measures:
        declaration = measure.declaration
        refusal = average_ties_refusal(measure) if spec.ties == "average" else None
        if refusal:
            raise MeasureError(f"measure {refusal}")
        params = declaration.params
        rel = measure["rel"] if "rel" in params else 0
        rows.append((
            declaration.kernel,
            measure.cutoff or whole,
            0 if rel is NOT_PROVIDED else rel if declaration.kernel != kinds.KIND_ERR else 1,
            bool(measure["judged_only"]) if "judged_only" in params else False,
            _DCG_GAIN[measure["dcg"]] if "dcg" in params else kinds.GAIN_SPEC,
            measure["p"] if "p" in params else 0.0,
            measure["max_rel"] if "max_rel" in params else 1,
        ))
    columns = list(zip(*rows)) if rows else [()] * 7
    return Plan(np.array(columns[0], np.int64), np.array(columns[1], np.int64),
                np.array(columns[2], np.int64), np.array(columns[3], np.bool_),
                np.array(columns[4], np.int64), np.array(columns[5], np.float64),
                np.array(columns[6], np.int64))


def conventions_of(spec: EvaluationSpec, graded: np.ndarray, top_grade: int | None, reach: int,
                   discount: str | float = "log2"):
    """The kernel's :class:`kernels.Conventions`: ``graded``, the version's graded grades;
    ``top_grade``: the largest a hole may take (else the spec's ``max_grade``, else theirs)."""
    from evaluation_pipeline.metric.measures.kernels import Conventions

    largest = int(graded.max(initial=0))
    top = spec.max_grade if spec.max_grade is not None else (
        top_grade if top_grade is not None else largest)
    grades = np.arange(max(top, largest) + 1)
    try:
        # The holes' grades 0..top as the bounds see them (an explicit map's own grades), then
        # every graded grade, which the map must cover.
        spec_gains = np.full(len(grades), np.nan)
        spec_gains[:top + 1] = scale_gains(int(top), spec)
        present = np.unique(graded).astype(np.int64)
        spec_gains[present] = gains_for_grades(present, spec)
    except GainError as exc:
        raise GainError(f"{exc}; the bounds over unjudged documents grade them 0..{top} "
                        "(set max_grade in the spec to narrow that)") from None
    exponential = np.full(len(grades), np.inf)
    fits = grades <= MAX_EXPONENTIAL_GRADE
    exponential[fits] = np.exp2(grades[fits].astype(np.float64)) - 1.0
    gains = np.stack([spec_gains, grades.astype(np.float64), exponential])
    weights = discount_table(discount, reach)
    return Conventions(
        spec.ties == "average", _TIES[spec.ties], spec.unknown != "exclude",
        spec.unjudged != "exclude", spec.unknown == "incomplete", spec.unjudged == "incomplete",
        spec.ideal == "candidates", _NO_POSITIVE[spec.no_positive], int(top), gains, weights,
        np.r_[0.0, np.cumsum(weights)], discounts.prefix(discount, reach),
        discounts.kernel_denominators(discount, reach))


def check_grades(measures: Sequence[Measure], top: int, largest: int) -> None:
    """ERR and graded RBP read a grade as a share of ``max_rel``: no grade (nor a hole's top
    grade) may pass it."""
    for measure in measures:
        graded_rbp = measure.name == "RBP" and measure["rel"] is NOT_PROVIDED
        if measure.name == "ERR" or graded_rbp:
            if max(top, largest) > measure["max_rel"]:
                raise MeasureError(
                    f"measure {measure}: grades reach {max(top, largest)} (the version's "
                    f"largest {largest}, a hole's top grade {top}), above max_rel="
                    f"{measure['max_rel']}; write {measure.name}(max_rel={max(top, largest)})")
        if measure.name == "nDCG" or measure.name == "DCG":
            if measure["dcg"] == "exp-log2" and max(top, largest) > MAX_EXPONENTIAL_GRADE:
                raise GainError(f"measure {measure}: grade {max(top, largest)} overflows "
                                "2^g - 1")


def score_ranked(ranked, judged, names: Sequence[str | Measure], spec: EvaluationSpec, *,
                 top_grade: int | None = None, discount: str | float | None = None
                 ) -> MeasureValues:
    """Every measure named, for every query of ``ranked`` (:class:`kernels.Ranked`, already in
    the spec's tie order) against ``judged`` (:class:`kernels.Judged`), in one compiled pass.

    ``top_grade``: the version's largest graded grade when ``judged`` holds only part of it;
    ``discount``: DCG's and nDCG's (``metric.discounts``; None: the spec's)."""
    from evaluation_pipeline.metric.kernels.loading import read_only
    from evaluation_pipeline.metric.measures.kernels import score_measures

    measures = measures_of(names)
    graded = np.asarray(judged.grade, dtype=np.int64)
    candidate_grades = ranked.grade[ranked.grade_class == 0]
    lists = np.diff(ranked.starts)
    whole = max(int(lists.max(initial=1)), int(np.diff(judged.starts).max(initial=1))) + int(
        np.asarray(judged.outside_holes).max(initial=0))
    plan, conventions = measure_rules(measures, spec, np.r_[graded, candidate_grades],
                                      top_grade, whole, discount)
    value, status, least, greatest = score_measures(*read_only((ranked, judged, conventions,
                                                                 plan)))
    return MeasureValues(measures, value, status, least, greatest)


def measure_rules(measures: Sequence[Measure], spec: EvaluationSpec, graded: np.ndarray,
                  top_grade: int | None, whole: int, discount: str | float | None = None):
    """(:class:`kernels.Plan`, :class:`kernels.Conventions`) of ``measures`` under ``spec``,
    after the checks a user can fail. ``graded``: the graded grades of the queries scored (any
    repeats; the candidates' are among them); ``top_grade``: as :func:`score_ranked` takes it;
    ``whole``: at least the longest list, with a query's holes outside it, that the kernel will
    see (the cutoff of a measure without one)."""
    largest = int(graded.max(initial=0))
    top = spec.max_grade if spec.max_grade is not None else (
        top_grade if top_grade is not None else largest)
    check_grades(measures, top, largest)
    plan = plan_measures(measures, spec, whole)
    reach = max(whole, int(plan.cutoff.max(initial=1)))
    conventions = conventions_of(spec, graded, top, reach,
                                 spec.discount if discount is None else discount)
    return plan, conventions
