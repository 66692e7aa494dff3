"""The rules of a run's ``rank`` column when the spec orders ties by it (``ties: rank``).

Otherwise ``rank`` is display only and any integer passes. Under ``ties: rank`` equal scores are
put in the order of the ranker's own ranks, so every row needs one and no two rows of a (ranker,
query) may share one: a repeat would leave that tie order to chance. Checked by every reader of
runs (the in-memory readers, the streaming engine's batches, the Spark engine's aggregations)
before anything is written.
"""

from __future__ import annotations

import polars as pl

from schemas.columns import POOL_KEY, RANK
from schemas.errors import InputError, RuleViolation, violation

RANK_REQUIRED = ("required column is missing: ties: rank orders equal scores by the run's own "
                 "rank (TREC column 4, or a rank column)")
RANK_PRESENT = "must not be empty (null): ties: rank orders equal scores by it"
RANK_UNIQUE = ("(ranker, query_id, rank) must be unique: ties: rank orders equal scores by the "
               "ranker's own rank, and a repeated rank leaves that order undecided")
# A run's (ranker, query) block: the key without doc_id.
_BLOCK = list(POOL_KEY[:-1])


def rank_violations(frame: pl.DataFrame, lines: pl.Series | None = None) -> list[RuleViolation]:
    """The ``ties: rank`` rules ``frame`` breaks (none: an empty list). Rows are numbered by
    ``lines`` (each row's file line) when given, else from 1."""
    if RANK not in frame.columns:
        return [violation(RANK, RANK_REQUIRED, [])]
    rank = pl.col(RANK)
    found = frame.lazy().select(
        rank.is_null().alias("null"),
        (rank.is_duplicated().over(_BLOCK) & rank.is_not_null()).alias("repeat"),
    ).collect()
    out = []
    for column, rule in (("null", RANK_PRESENT), ("repeat", RANK_UNIQUE)):
        bad = found[column]
        if bad.any():
            index = bad.arg_true()
            rows = (lines.gather(index) if lines is not None else index + 1).to_list()
            shown = frame.select(*_BLOCK, RANK).gather(index[:5]).rows()
            out.append(violation(RANK, rule, rows, [" ".join(map(str, r)) for r in shown]))
    return out


def check_ranks(frame: pl.DataFrame, source: str, lines: pl.Series | None = None,
                row_label: str | None = None) -> None:
    """Raise :class:`InputError` naming ``source`` if ``frame`` breaks a ``ties: rank`` rule."""
    found = rank_violations(frame, lines)
    if found:
        label = row_label or ("line" if lines is not None else "row")
        raise InputError(source, found, row_label=label)
