"""Grade -> gain under a spec (contract section 2, `gain`)."""

from __future__ import annotations

import numpy as np

from evaluation_pipeline.spec import MAX_EXPONENTIAL_GRADE, EvaluationSpec
from schemas.errors import EvaluationError


class GainError(EvaluationError):
    """A grade has no gain under the spec (gain map gap, or exponential overflow)."""


def gains_for_grades(grades: np.ndarray, spec: EvaluationSpec) -> np.ndarray:
    """Gains for an array of nonnegative integer grades.

    A gain map must cover every grade present: a missing grade is an error, never a gain of 0.
    """
    grades = np.asarray(grades, dtype=np.int64)
    if spec.gain == "linear":
        return grades.astype(np.float64)
    if spec.gain == "exponential":
        if grades.size and grades.max() > MAX_EXPONENTIAL_GRADE:
            raise GainError(
                f"grade {int(grades.max())} overflows exponential gain 2^g - 1; "
                "use linear gain or an explicit gain map"
            )
        return np.exp2(grades.astype(np.float64)) - 1.0
    mapped_grades = np.array([g for g, _ in spec.gain], dtype=np.int64)
    mapped_gains = np.array([v for _, v in spec.gain], dtype=np.float64)
    slot = np.searchsorted(mapped_grades, grades)
    slot_clipped = np.minimum(slot, len(mapped_grades) - 1)
    covered = mapped_grades[slot_clipped] == grades
    if not covered.all():
        missing = sorted({int(g) for g in np.unique(grades[~covered])})
        raise GainError(
            f"the gain map {spec.gain_label()!r} has no gain for grade(s) "
            f"{', '.join(map(str, missing))}; a gain map must cover every grade present"
        )
    return mapped_gains[slot_clipped]


def scale_gains(top: int, spec: EvaluationSpec) -> np.ndarray:
    """The gain of each grade 0..top that a hole may take (contract section 3, rule 7), for
    the bounds over the holes. Under ``linear`` and ``exponential`` every grade has one. An
    explicit map declares the scale's grades: a hole takes one of the grades it lists (TF-Ranking
    scores ``gain_fn = label / 2`` over the grades {0, 1, 3} its data has), so a grade the map
    leaves out is given the gain of the nearest listed grade below it (above it, for grades
    below the least listed): the gains a hole may take are then the listed ones, and the
    least and greatest of them, which the bounds read, are unchanged."""
    grades = np.arange(top + 1, dtype=np.int64)
    if isinstance(spec.gain, str):
        return gains_for_grades(grades, spec)
    listed = np.array([g for g, _ in spec.gain if g <= top], dtype=np.int64)
    if not len(listed):
        raise GainError(f"the gain map {spec.gain_label()!r} lists no grade from 0 to {top}, "
                        "the grades the bounds over unjudged documents give them")
    gains = dict(spec.gain)
    nearest = listed[np.maximum(np.searchsorted(listed, grades, side="right") - 1, 0)]
    return np.array([gains[int(g)] for g in nearest], dtype=np.float64)
