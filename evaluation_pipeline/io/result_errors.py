"""The refusal of results that cannot be read or reported as asked, below the commands and
the Python API that both raise it."""

from __future__ import annotations

from schemas.errors import EvaluationError


class ResultsError(EvaluationError):
    """Results that cannot be reported as asked: no such file, no spec, a spec that did not
    produce the rows, results that do not measure the same thing. (Rows of mixed lineage are a
    ``evaluation.LineageError``.)"""
