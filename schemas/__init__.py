"""pandera models for every table of the evaluation contract, one module per table.

Validation goes through :func:`schemas.validation.validate`, which turns pandera's failure cases
into an :class:`schemas.errors.InputError` naming the file, column, rule and example rows.
"""

from schemas.aggregates import Aggregates
from schemas.candidate_pools import CandidatePool
from schemas.errors import InputError, RuleViolation
from schemas.judgments import Judgments
from schemas.names import check_safe_name
from schemas.per_query_results import PerQueryResults
from schemas.queries import Queries
from schemas.validation import validate

__all__ = [
    "Aggregates",
    "CandidatePool",
    "InputError",
    "Judgments",
    "PerQueryResults",
    "Queries",
    "RuleViolation",
    "check_safe_name",
    "validate",
]
