"""What the engines of this machine share besides scoring: ingest in bounded memory, and a
report's numbers summed here (the local and streaming engines differ in how they score only)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from evaluation_pipeline.engines.protocol import Resources
from evaluation_pipeline.io.atomic import write_text
from evaluation_pipeline.io.locations import Location, location

if TYPE_CHECKING:
    from evaluation_pipeline.aggregation.sums import Numbers
    from evaluation_pipeline.report.build import ReportPlan
    from evaluation_pipeline.report.config import ReportConfig


class OnThisMachine:
    """Ingest and a report's sums on this machine."""

    reads_urls = False

    def publish(self, function: str, source: Location, target: Location,
                resources: Resources, **options) -> Any:
        """``ingest.publish``'s ``function`` here, its sort spilling under the budget it is
        given in ``options`` (``budget``)."""
        from evaluation_pipeline.ingest import publish as local_ingest

        return getattr(local_ingest, function)(source, target, **options)

    def report_numbers(self, scores: Location, previous: Location | None,
                       queries: pl.DataFrame | None, config: ReportConfig,
                       resources: Resources) -> tuple[ReportPlan, Numbers]:
        """Summed here: a chunk of queries in memory at a time for local files, from the
        columns the report reads for URLs."""
        from evaluation_pipeline.io.datasets import scan_dataset
        from evaluation_pipeline.io.locations import is_remote
        from evaluation_pipeline.report.build import local_numbers, scanned_numbers

        if not is_remote(scores):
            return scanned_numbers(scan_dataset(scores),
                                   None if previous is None else scan_dataset(previous),
                                   queries, config)
        per_query = _report_rows(scores)
        before = None if previous is None else _report_rows(previous)
        return local_numbers(per_query, queries, config, before)

    def write_text_at(self, where: Location, text: str, resources: Resources) -> None:
        """``text`` as the file ``where`` (local, or an object put whole), as every writer of
        this machine writes one (``io.atomic``)."""
        write_text(text, location(where))


def _report_rows(where: Location) -> pl.DataFrame:
    """The columns the report reads of per-query results on object storage: every measure's
    (``schemas.columns.ROW_COLUMNS``), or a file written before the measures had them its
    ``REPORT_COLUMNS`` (``aggregation.sums`` reads its ``ndcg`` as the values)."""
    from evaluation_pipeline.io.datasets import read_dataset
    from schemas.columns import REPORT_COLUMNS, ROW_COLUMNS

    columns = list(dict.fromkeys([*REPORT_COLUMNS, *ROW_COLUMNS]))
    try:
        return read_dataset(where, columns)
    except (pl.exceptions.ColumnNotFoundError, KeyError, ValueError):
        return read_dataset(where, list(REPORT_COLUMNS))
