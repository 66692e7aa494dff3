"""The holes a query owes to the whole pool (docs/CONTRACT.md, section 3, rule 7).

Under ``ideal: all_judged`` a document some ranker returns and the version has no row for is a
hole of every ranker of its pool, not only of the rankers that return it: once graded it joins
the version, so the ideal of every ranker of the query. For a ranker that does not return it
it is a hole outside the candidates, which can only raise the ideal, as the query's ``unknown``
rows outside them are. The kernel needs one number per query for that: the distinct documents
of the query that the pool's rankers return and the version lacks; a block's own unjudged
candidates are among them, and the rest are its holes outside the candidates.

Under ``ideal: candidates`` another ranker's document never enters a ranker's ideal, and a pool
of one ranker has no other ranker's documents: then nothing is counted.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from evaluation_pipeline.spec import EvaluationSpec

COLUMN = "n_pool_unjudged"
_KEYS = ["query_id", "doc_id"]


def needed(spec: EvaluationSpec, n_rankers: int) -> bool:
    """Whether another ranker's documents can be holes of a ranker: under ``all_judged``, in a
    pool of more than one ranker."""
    return spec.ideal == "all_judged" and n_rankers > 1


def pool_unjudged(candidates: pl.DataFrame | pl.LazyFrame,
                  version: pl.DataFrame | pl.LazyFrame) -> pl.LazyFrame:
    """Per ``query_id``, :data:`COLUMN`: the distinct ``doc_id`` of ``candidates`` (every
    ranker's) without a row in ``version`` (its ``query_id``, ``doc_id``); queries without one
    are left out. Lazy, so that a caller may run it on polars' streaming engine. The rows with
    a row in the version (most) are dropped first, so that only the unjudged pairs are made
    distinct."""
    found = candidates.lazy().select(_KEYS).join(
        version.lazy().select(_KEYS), on=_KEYS, how="anti")
    return found.unique().group_by("query_id").agg(pl.len().cast(pl.Int64).alias(COLUMN))


def of_pool(candidates: pl.DataFrame, n_rankers: int, version: pl.DataFrame,
            spec: EvaluationSpec) -> pl.DataFrame | None:
    """:func:`pool_unjudged` of candidates that hold every ranker's rows of their queries (a
    pool, or its queries' part of it), when :func:`needed` (``n_rankers``: the whole pool's,
    which a missing query's rows count too); else None."""
    if not needed(spec, n_rankers):
        return None
    return pool_unjudged(candidates, version).collect()


def per_block(keys: pl.DataFrame, table: pl.DataFrame | None) -> np.ndarray:
    """The kernel's ``pool_unjudged`` of blocks with ``keys`` (their ``query_id``): the count
    of each block's query, 0 for a query without one; empty without a table (nothing to add)."""
    if table is None:
        return np.zeros(0, np.int64)
    return keys.select("query_id").join(table, on="query_id", how="left",
                                        maintain_order="left")[COLUMN].fill_null(0).to_numpy()
