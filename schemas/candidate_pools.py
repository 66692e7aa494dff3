"""A candidate pool's pandera model, made from its rules (``schemas.rules.pool_rules``)."""

from __future__ import annotations

from schemas.rules.pool_rules import CANDIDATE_POOL
from schemas.rules.to_pandera import model_of

CandidatePool = model_of(CANDIDATE_POOL, __name__)
