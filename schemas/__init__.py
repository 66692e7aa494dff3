"""pandera models for every table of the evaluation contract, one module per table; the input
tables' models (judgments, candidate pools, queries, documents) are made from their rules, each
declared once in ``schemas.rules``, as are the screen, the streaming checks and Spark's counts.

Validation goes through :func:`validate` (``schemas.screening``): a frame that breaks no rule
passes a one-pass polars screen of the same rules; any other frame goes to the pandera model,
whose failure cases become an :class:`schemas.errors.InputError` naming the file, column, rule
and example rows (``schemas.validation``). The models, and pandera with them, are imported when
first used: a clean input never pays for the import.
"""

from __future__ import annotations

import importlib

from schemas.errors import InputError, RuleViolation
from schemas.names import check_safe_name
from schemas.screening import validate

_MODELS = {
    "Aggregates": "schemas.aggregates",
    "CandidatePool": "schemas.candidate_pools",
    "Documents": "schemas.documents",
    "Judgments": "schemas.judgments",
    "PerQueryResults": "schemas.per_query_results",
    "Queries": "schemas.queries",
    "RatedJudgments": "schemas.judgments",
}


def __getattr__(name: str):
    if name in _MODELS:
        return getattr(importlib.import_module(_MODELS[name]), name)
    raise AttributeError(f"module 'schemas' has no attribute {name!r}")


__all__ = [
    "Aggregates",
    "CandidatePool",
    "Documents",
    "InputError",
    "Judgments",
    "PerQueryResults",
    "Queries",
    "RatedJudgments",
    "RuleViolation",
    "check_safe_name",
    "validate",
]
