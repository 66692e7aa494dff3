"""Generated pools and judgments for the bounded-memory tests: shuffled ranker files with ids
built to test byte-wise ordering under a small budget, and a pool large enough that its sorts
spill (``large_pool_folder`` under ``SPILL_BUDGET``).

The fixtures here are registered for every test in tests/conftest.py.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from evaluation_pipeline.io.budget import Budget

POOL_KEY = ["ranker", "query_id", "doc_id"]
# DuckDB's share, 32 MB, is less than even one ranker's sort needs: it spills (see the tests
# of ingest). Some 48 MB of budget is too little for DuckDB to sort at all.
BUDGET = Budget.of("64MB")
QUERIES, CANDIDATES = 1500, 100


def candidates(rng: np.random.Generator) -> pl.DataFrame:
    """Every query's candidates, in key order; ids built to test byte-wise ordering."""
    q = np.repeat(np.arange(QUERIES), CANDIDATES)
    d = np.tile(np.arange(CANDIDATES), QUERIES)
    query_id = pl.Series([f"https://example.org/q/{n}" if n % 7 else f"é{n}"
                          for n in range(QUERIES)])[q]
    doc_id = pl.Series([f"https://example.org/docs/{n}" for n in range(CANDIDATES)])[d] + pl.Series(
        np.where(q % 5 == 0, "x", "")).cast(pl.String)
    return pl.DataFrame({"query_id": query_id, "doc_id": doc_id})


def shuffled(frame: pl.DataFrame, rng: np.random.Generator) -> pl.DataFrame:
    return frame[rng.permutation(frame.height)]


@pytest.fixture
def pool_folder(tmp_path):
    rng = np.random.default_rng(3)
    base = candidates(rng)
    folder = tmp_path / "landing" / "nightly"
    folder.mkdir(parents=True)
    for number, ranker in enumerate(["bm25", "dense", "hybrid"]):
        frame = base.with_columns(pl.Series("score", np.round(rng.normal(size=base.height), 1)))
        frame = shuffled(frame, rng)
        if number == 0:
            frame = frame.with_columns(pl.lit("bm25").alias("ranker"),
                                       pl.when(pl.int_range(pl.len()) == 5).then(-0.0)
                                       .otherwise(pl.col("score")).alias("score"))
            frame.write_parquet(folder / "first.parquet", row_group_size=20_000)
        elif number == 1:  # no ranker column: the file's stem names it
            frame.write_parquet(folder / f"{ranker}.parquet", row_group_size=20_000)
        else:  # text, read whole by its reader: 300 whole queries, one of them short of a row
            shown = frame.filter(pl.col("query_id").is_in(base["query_id"].unique().sort()
                                                          .head(300).implode())).slice(1)
            shown.with_columns(pl.lit(ranker).alias("ranker")).write_csv(folder / "hybrid.csv")
    return folder


# DuckDB's share of it is what a sort of 1M rows needs (``sort_floor``, some 82 MB): less than
# the rows of one ranker of ``large_pool_folder``, so its sorts spill.
SPILL_BUDGET = Budget.of("200MB")
LARGE_QUERIES = 10_000


@pytest.fixture
def large_pool_folder(tmp_path):
    """Two shuffled ranker files of 1M rows each (10,000 queries x 100), one without a ranker
    column."""
    rng = np.random.default_rng(8)
    q, d = np.repeat(np.arange(LARGE_QUERIES), 100), np.tile(np.arange(100), LARGE_QUERIES)
    base = pl.DataFrame({"query_id": pl.Series([f"q{i:06d}" for i in range(LARGE_QUERIES)])[q],
                         "doc_id": pl.Series([f"doc-{i:03d}" for i in range(100)])[d]})
    folder = tmp_path / "landing" / "large"
    folder.mkdir(parents=True)
    for ranker, named in (("bm25", True), ("dense", False)):
        frame = base.with_columns(pl.Series("score", np.round(rng.normal(size=base.height), 2)))
        if named:
            frame = frame.with_columns(pl.lit(ranker).alias("ranker"))
        shuffled(frame, rng).write_parquet(folder / f"{ranker}.parquet", row_group_size=100_000)
    return folder


# The names the scale tests land their pool and judgments under.
POOL, VERSION = "nightly", "grades-v1"


def land_judgments(candidates: pl.DataFrame, rng, tmp_path, row_group_size: int):
    """A landed judgment version of 30% of ``candidates`` (query_id, doc_id), shuffled."""
    judged = candidates.select("query_id", "doc_id").sample(fraction=0.3, seed=5)
    judgments = judged.with_columns(
        pl.Series("grade", rng.integers(0, 4, size=judged.height)),
        pl.lit("graded").alias("grade_status"), pl.lit(VERSION).alias("judgment_version"))
    path = tmp_path / "landing" / "judgments" / f"{VERSION}.parquet"
    path.parent.mkdir(parents=True)
    shuffled(judgments, rng).write_parquet(path, row_group_size=row_group_size)
    return path


@pytest.fixture
def large_inputs(large_pool_folder, tmp_path):
    """(judgments file, pool folder): the large pool as landed, and 30% of its candidates
    judged, shuffled."""
    rng = np.random.default_rng(12)
    folder = tmp_path / "landing" / "pools" / POOL
    folder.parent.mkdir(parents=True)
    large_pool_folder.rename(folder)
    (folder / "_READY").touch()
    return land_judgments(pl.read_parquet(folder / "dense.parquet"), rng, tmp_path,
                          row_group_size=100_000), folder
