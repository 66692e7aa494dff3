"""A grouped run's rows are copied in key order in parts (``result_file._sorted_parts``), and
the file is the one sorting them whole writes, byte for byte."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow.parquet as pq

from evaluation_pipeline.engines.streaming import result_file
from evaluation_pipeline.evaluation import Lineage
from evaluation_pipeline.metric.ndcg import RESULT_SCHEMA
from schemas.columns import PER_QUERY_KEY

LINEAGE = Lineage(judgment_version="v1", judgments_sha256="a" * 64, candidate_pool="pool",
                  pool_sha256="b" * 64, spec_id="c" * 16)


def grouped_body(path, n_queries: int = 700) -> None:
    """Per-query rows of two rankers, queries in numeric order (not key order), four measures
    each, written in batches as the stream writes them."""
    rng = np.random.default_rng(3)
    measures = ["AP(rel=2)@100", "RR(rel=2)@10", "nDCG@10", "R@100"]
    cutoffs = [None, None, 10, None]
    rows = [(ranker, f"q{q}", cutoffs[m], measures[m], float(rng.random()))
            for ranker in ("r2", "r1") for q in range(n_queries) for m in range(4)]
    frame = pl.DataFrame(rows, schema=["ranker", "query_id", "cutoff", "measure", "value"],
                         orient="row")
    frame = pl.DataFrame(schema=RESULT_SCHEMA).vstack(
        frame.with_columns(pl.lit(None).alias(c) for c in RESULT_SCHEMA
                           if c not in frame.columns).select(
            pl.col(c).cast(t) for c, t in RESULT_SCHEMA.items()))
    with pq.ParquetWriter(path, frame.to_arrow().schema) as writer:
        for start in range(0, frame.height, 333):
            writer.write_table(frame.slice(start, 333).to_arrow())


def test_the_parts_write_the_bytes_of_the_whole_sort(tmp_path, monkeypatch):
    body = tmp_path / "body.parquet"
    grouped_body(body)
    whole, in_parts = tmp_path / "whole.parquet", tmp_path / "parts.parquet"
    result_file.with_lineage_file(body, whole, LINEAGE, in_order=True)
    monkeypatch.setattr(result_file, "SORT_PART_ROWS", 1_000)
    monkeypatch.setattr(result_file, "_SAMPLE_EVERY", 7)
    assert len(result_file._sorted_parts(body, pl.scan_parquet(body))) == 6
    for part in tmp_path.glob("body.part*"):
        part.unlink()
    result_file.with_lineage_file(body, in_parts, LINEAGE, in_order=True)
    assert in_parts.read_bytes() == whole.read_bytes()
    rows = pl.read_parquet(in_parts)
    assert rows.height == 2 * 700 * 4
    assert rows.select(PER_QUERY_KEY).equals(rows.select(PER_QUERY_KEY).sort(PER_QUERY_KEY))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "body.parquet", "parts.parquet", "whole.parquet"]  # the parts are removed
