"""The queries' pandera model, made from their rules (``schemas.rules.query_rules``)."""

from __future__ import annotations

from schemas.rules.query_rules import QUERIES
from schemas.rules.to_pandera import model_of

Queries = model_of(QUERIES, __name__)
