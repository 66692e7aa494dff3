"""The queries' rules (contract section 1): one row per query, an optional traffic weight; any
further string column is a slice."""

from __future__ import annotations

from schemas.columns import QUERY_DTYPES
from schemas.rules.rule import at_least_zero, columns_of, finite, non_empty, table, unique_key

QUERIES = table(
    "Queries",
    columns_of(QUERY_DTYPES, optional=("weight",)),
    (unique_key(("query_id",), "values must be unique"),
     non_empty("query_id"),
     at_least_zero("weight"),
     finite("weight", "weight must be finite and >= 0 (e.g. a traffic count)")),
)
