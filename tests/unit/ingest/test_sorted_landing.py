"""A landed file already in key order is published without DuckDB's sort, to the same bytes."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from evaluation_pipeline.ingest import external_sort, publish
from evaluation_pipeline.ingest.inputs import BATCH_ROWS
from schemas.errors import InputError
from schemas.rules.pool_rules import CANDIDATE_POOL
from tests.support.refusals import violation


def _pool(queries: int = 60, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    rows = [(ranker, f"q{q}", f"d{q}-{d}", float(rng.integers(0, 5)))
            for ranker in ("a", "b") for q in range(queries)
            for d in range(int(rng.integers(1, 9)))]
    return pl.DataFrame(rows, schema=["ranker", "query_id", "doc_id", "score"], orient="row")


def _landing(tmp_path, name: str, pool: pl.DataFrame, order: str) -> object:
    folder = tmp_path / name / "pool-x"
    folder.mkdir(parents=True)
    for (ranker,), part in pool.group_by("ranker", maintain_order=True):
        if order == "sorted":
            part = part.sort("query_id", "doc_id")
        elif order == "grouped":  # q2 before q10
            part = part.sort(pl.col("query_id").str.slice(1).cast(pl.Int64), "doc_id")
        else:
            part = part.sample(fraction=1.0, shuffle=True, seed=1)
        part.drop("ranker").write_parquet(folder / f"{ranker}.parquet")  # ranker: the stem
    return folder


@pytest.fixture
def small_batches(monkeypatch):
    """Batches of a few rows, so that blocks cross batch boundaries (as 250k-row ones do)."""
    monkeypatch.setattr(publish, "BATCH_ROWS", 7)
    monkeypatch.setattr("evaluation_pipeline.ingest.inputs.BATCH_ROWS", 7)
    assert BATCH_ROWS > 7


@pytest.mark.parametrize("order", ["sorted", "grouped", "shuffled"])
def test_a_pool_in_key_order_skips_the_sort_and_publishes_the_same_bytes(tmp_path, order,
                                                                          small_batches,
                                                                          monkeypatch):
    pool = _pool()
    sorts = []
    real = external_sort.sorted_batches

    def counted(*args, **kwargs):
        sorts.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(publish, "sorted_batches", counted)
    lines: list[str] = []
    published = publish.publish_pool(_landing(tmp_path, order, pool, order),
                                     tmp_path / f"{order}.parquet", log=lines.append)
    reference = publish.publish_pool(_landing(tmp_path, "ref", pool, "shuffled"),
                                     tmp_path / "ref.parquet")
    assert (tmp_path / f"{order}.parquet").read_bytes() == (tmp_path / "ref.parquet").read_bytes()
    assert published.sha256 == reference.sha256 and published.rankers == reference.rankers
    assert published.candidate_sets == reference.candidate_sets
    # The shuffled reference and the unsorted landing were sorted, ranker by ranker.
    assert len(sorts) == (2 if order == "sorted" else 4)
    said = "2 of 2 already in key order, not sorted" in " ".join(lines)
    assert said == (order == "sorted")


def test_judgments_in_key_order_skip_the_sort(tmp_path, small_batches):
    rows = [(f"q{q}", f"d{d}", (q * d) % 4, "graded") for q in range(30) for d in range(5)]
    frame = pl.DataFrame(rows, schema=["query_id", "doc_id", "grade", "grade_status"],
                         orient="row").with_columns(judgment_version=pl.lit("v1"))
    frame = frame.with_columns(pl.when(pl.col("doc_id") == "d3").then(None)
                               .otherwise("grade").alias("grade"),
                               pl.when(pl.col("doc_id") == "d3").then(pl.lit("unknown"))
                               .otherwise("grade_status").alias("grade_status"))
    frame.sort("query_id", "doc_id").write_parquet(tmp_path / "v1.parquet")
    frame.sample(fraction=1.0, shuffle=True, seed=4).write_parquet(
        tmp_path / "v1-shuffled.parquet")
    lines: list[str] = []
    one = publish.publish_judgments(tmp_path / "v1.parquet", tmp_path / "a.parquet",
                                    log=lines.append)
    two = publish.publish_judgments(tmp_path / "v1-shuffled.parquet", tmp_path / "b.parquet",
                                    version="v1")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    assert json.dumps(one.grade_distribution) == json.dumps(two.grade_distribution)
    assert one.sha256 == two.sha256 and "already in key order" in " ".join(lines)


def test_a_repeat_in_a_sorted_file_is_still_refused(tmp_path, small_batches):
    pool = _pool(queries=10)
    folder = _landing(tmp_path, "dup", pool, "sorted")
    frame = pl.read_parquet(folder / "a.parquet")
    pl.concat([frame.head(4), frame.slice(3, 1), frame.slice(4)]).write_parquet(
        folder / "a.parquet")
    with pytest.raises(InputError) as refused:
        publish.publish_pool(folder, tmp_path / "out.parquet")
    violation(refused, "ranker, query_id, doc_id", CANDIDATE_POOL.key,
              source=folder / "a.parquet", rows=[4, 5])
    assert not (tmp_path / "out.parquet").exists()
