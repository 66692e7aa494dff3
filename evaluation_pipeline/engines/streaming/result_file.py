"""The streaming engine's output: the per-query rows written as they are scored, without
lineage, then copied with their lineage columns once the content hashes are known; and the
progress said on stderr while it runs."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
from upath import UPath

from evaluation_pipeline.engines.defaults import PER_QUERY_ROW_GROUP_ROWS
from evaluation_pipeline.evaluation import Lineage
from evaluation_pipeline.io.atomic import naming
from evaluation_pipeline.metric.ndcg import RESULT_SCHEMA
from schemas.columns import PER_QUERY_KEY

PROGRESS_SECONDS = 5.0


class ResultFile:
    """The per-query rows as they are scored, without lineage (the hashes come at the end),
    in the scratch folder beside the output: a write that fails there (a full disk) names the
    output, the file the user asked for."""

    def __init__(self, path: Path, output: Path | UPath) -> None:
        self.path, self.output = path, output
        self.rows = 0
        with naming(output):
            self._writer = pq.ParquetWriter(
                path, pl.DataFrame(schema=RESULT_SCHEMA).to_arrow().schema)

    def write(self, frame: pl.DataFrame) -> None:
        if frame.height:
            with naming(self.output):
                self._writer.write_table(frame.to_arrow())
            self.rows += frame.height

    def close(self) -> None:
        with naming(self.output):
            self._writer.close()


class Progress:
    """Candidate rows scored, said on stderr every ``PROGRESS_SECONDS`` when ``shown``."""

    def __init__(self, shown: bool) -> None:
        self.shown = shown
        self.candidates = 0
        self.started = self._last = time.perf_counter()

    def add(self, rows: int) -> None:
        self.candidates += rows
        if self.shown and time.perf_counter() - self._last > PROGRESS_SECONDS:
            self._last = time.perf_counter()
            elapsed = self._last - self.started
            print(f"ndcg-eval: {self.candidates:,} candidate rows scored in {elapsed:.0f}s "
                  f"({self.candidates / elapsed:,.0f} rows/s)", file=sys.stderr)


def with_lineage_file(body: Path, target: Path, lineage: Lineage, in_order: bool = False
                       ) -> None:
    """Copy the per-query rows, adding the lineage columns now that the hashes are known;
    ``in_order``: sorted first (a grouped run's rows come in its order of queries).

    polars' streaming sink holds a few row groups at a time and uses every core: twice as fast
    here as a batch-by-batch copy through pyarrow (0.7 s against 1.5 s for 2M rows). Rows past
    ``SORT_PART_ROWS`` are sorted in parts (``_sorted_parts``), not whole."""
    rows = pl.scan_parquet(body, glob=False)
    parts = _sorted_parts(body, rows) if in_order else []
    if parts:
        rows = pl.scan_parquet(parts, glob=False)
    elif in_order:
        rows = rows.sort(list(PER_QUERY_KEY))
    try:
        rows.with_columns(lineage.columns()).sink_parquet(
            target, compression="zstd", row_group_size=PER_QUERY_ROW_GROUP_ROWS)
    finally:
        for part in parts:
            part.unlink(missing_ok=True)


# The most rows a grouped run's copy sorts in memory at once: nDCG@K alone at 100M rows sorts
# 1M, within the stream's own peak; the TREC DL set's 4M sorted whole rose 1.1 GB above it
# (benchmarks/README.md, "The TREC DL set beside nDCG@10 alone").
SORT_PART_ROWS = 1_000_000
# One key in this many is read to place the parts' bounds.
_SAMPLE_EVERY = 64
_RANGE = ("ranker", "query_id")


def _sorted_parts(body: Path, rows: pl.LazyFrame) -> list[Path]:
    """The rows of ``body`` cut by ranges of (ranker, query_id) into about ``SORT_PART_ROWS``
    each (bounds from a sample of the keys), each range sorted on its own into a file beside
    it, in key order: each range is one read of the body holding its rows alone, and the
    parts read one after another are the whole sorted. Empty when one part would do."""
    n_rows = pq.read_metadata(body).num_rows
    n_parts = -(-n_rows // SORT_PART_ROWS)
    if n_parts < 2:
        return []
    sample = rows.select(_RANGE).gather_every(_SAMPLE_EVERY).unique().sort(_RANGE).collect()
    bounds = [sample.row(i * sample.height // n_parts) for i in range(1, n_parts)]
    edges = [None, *dict.fromkeys(bounds), None]
    parts = []
    for number, (low, high) in enumerate(zip(edges[:-1], edges[1:])):
        within = pl.lit(True)
        if low is not None:
            within &= _from(low)
        if high is not None:
            within &= ~_from(high)
        part = body.with_name(f"{body.stem}.part{number}.parquet")
        rows.filter(within).sort(list(PER_QUERY_KEY)).sink_parquet(part)
        parts.append(part)
    return parts


def _from(key: tuple) -> pl.Expr:
    """Rows at or after ``key`` (ranker, query_id), strings compared byte-wise as sorted."""
    ranker, query_id = key
    return (pl.col("ranker") > ranker) | (
        (pl.col("ranker") == ranker) & (pl.col("query_id") >= query_id))
