"""The merge of the streaming engine: the judgment rows that meet each batch of a ranker's run.

Both inputs are sorted by query_id (the run within each ranker), so the judgments are read once
per ranker, front to back, and each batch of the run takes the rows of its query range (a merge
join); the rows of queries the ranker skipped are handed out on their own, a batch at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import polars as pl

from evaluation_pipeline.engines.streaming.reading import Groups
from schemas.columns import JUDGMENT_DTYPES


class JudgmentWindows:
    """Judgment rows of whole queries, handed out by increasing query_id bound.

    ``groups``: batches of whole queries; ``on_batch`` turns each into the rows handed out (the
    checks, the casts). ``key``: the column the bounds are of and the rows are sorted by
    (query_id; a run grouped but not sorted: its position of the query, ``grouping``)."""

    def __init__(self, groups: Iterator[Groups], on_batch: Callable[[Groups], pl.DataFrame],
                 key: str = "query_id") -> None:
        self._groups = groups
        self._on_batch = on_batch
        self._key = key
        self._pending: pl.DataFrame | None = None

    def _next(self) -> pl.DataFrame | None:
        group = next(self._groups, None)
        return None if group is None else self._on_batch(group)

    def before(self, query: str | int) -> Iterator[pl.DataFrame]:
        """Judgment rows of the queries that sort before ``query``, a batch at a time: queries
        a ranker did not return, which a window would otherwise hold all at once (a run that
        starts late in the judgments' order)."""
        yield from self._take(query, "left")

    def upto(self, bound: str | int) -> pl.DataFrame:
        parts = list(self._take(bound, "right"))
        return pl.concat(parts) if parts else pl.DataFrame(schema=JUDGMENT_DTYPES)

    def _take(self, query: str | int, side: str) -> Iterator[pl.DataFrame]:
        """Rows of queries before ``query`` (side "left") or up to it ("right"), batch by batch,
        until a batch holds later queries: they stay pending."""
        while True:
            if self._pending is None:
                self._pending = self._next()
                if self._pending is None:
                    return
            n = self._pending[self._key].search_sorted(query, side=side)
            if n:
                yield self._pending.slice(0, n)
            if n < self._pending.height:
                self._pending = self._pending.slice(n)
                return
            self._pending = None

    def close(self) -> None:
        """Stop reading (and the read-ahead thread behind it)."""
        self._groups.close()

    def rest(self) -> Iterator[pl.DataFrame]:
        if self._pending is not None:
            yield self._pending
            self._pending = None
        while (frame := self._next()) is not None:
            yield frame
