"""A candidate pool's rules (contract section 1): one row per (ranker, query_id, doc_id), the
score orders candidates and is never a grade, one pool per file."""

from __future__ import annotations

import polars as pl

from schemas.columns import POOL_KEY, RANK, RUN_DTYPES
from schemas.rules.rule import (
    Column,
    columns_of,
    finite,
    non_empty,
    one_safe_name,
    table,
    unique_key,
)

CANDIDATE_POOL = table(
    "CandidatePool",
    # rank: display only (order comes from score), unless the spec orders ties by it
    # (``schemas.ranks``).
    (*columns_of(RUN_DTYPES), Column(RANK, pl.Int64, nullable=True, required=False)),
    (*one_safe_name("candidate_pool", "candidate pool"),
     non_empty("ranker"),
     non_empty("query_id"),
     non_empty("doc_id"),
     finite("score", "score must be a finite number (no NaN or infinity)"),
     unique_key(POOL_KEY)),
)
