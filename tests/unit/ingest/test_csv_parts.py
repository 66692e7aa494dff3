"""A CSV file is ingested a part at a time: the parts hold the rows the reader parses from the
whole file, the published file is the same bytes whatever the parts, and a refusal is the
reader's message to the byte, whichever part holds the broken rule."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

from evaluation_pipeline.ingest.publish import publish_judgments, publish_pool
from evaluation_pipeline.io import readers
from evaluation_pipeline.io.formats.csv_reader import read_csv_table
from evaluation_pipeline.io.readers import csv_parts, read_judgments, read_pool
from schemas.errors import InputError
from tests.support.pools import BUDGET
from tests.support.refusals import refusal_fields

TEXTS = {
    "plain": "query_id,doc_id,grade\nq1,d1,1\nq1,d2,0\nq2,d1,3\n",
    "no final line break": "query_id,doc_id,grade\nq1,d1,1\nq2,d1,3",
    "crlf and a byte-order mark": "\ufeffquery_id , doc_id,grade\r\nq1,d1,1\r\nq2,d1,3\r\n",
    "quoted commas, quotes and line breaks": (
        'query_id,doc_id,note\nq1,"d,1","a ""quoted"" word"\n'
        'q1,d2,"two\nlines"\n"q\n2","d\r\n3",\n"q3",d4,""\n'),
    "a quoted header": '"query_id","doc\nid",grade\nq1,d1,1\n',
    "blank lines": "query_id,doc_id\nq1,d1\n\nq2,d2\n\n",
    "unicode": "query_id,doc_id\né1,d€1\n日本,ü\n",
}


@pytest.mark.parametrize("text", TEXTS.values(), ids=TEXTS.keys())
@pytest.mark.parametrize("part_bytes", [1, 7, 64, 10_000])
def test_the_parts_are_the_rows_of_the_whole_file(tmp_path, text, part_bytes):
    path = tmp_path / "v.csv"
    path.write_bytes(text.encode())
    whole, _ = read_csv_table(path)
    parts = list(csv_parts(path, part_bytes))
    assert all(part.columns == whole.columns for part in parts)
    assert pl.concat(parts).equals(whole)


def _grades(rows: int, seed: int = 1) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    grade = rng.integers(0, 4, rows)
    unknown = rng.random(rows) < 0.1
    return pl.DataFrame({
        "query_id": [f"q{q}" for q in rng.integers(0, 300, rows)],
        "doc_id": [f"d,{d}" if d % 7 == 0 else f"d{d}" for d in range(rows)],  # some quoted
        "grade": pl.Series(np.where(unknown, -1, grade)).replace(-1, None),
        "grade_status": np.where(unknown, "unknown", "graded"),
        "judge": [f"j{j}" for j in rng.integers(0, 5, rows)],
    })


@pytest.fixture
def small_parts(monkeypatch):
    """Parts of a few hundred bytes: a handful of rows each."""
    monkeypatch.setattr(readers, "CSV_PART_BYTES", 300)


def _publish(source, target, tmp_path):
    return publish_judgments(source, target, budget=dataclasses.replace(BUDGET,
                                                                        spill_dir=tmp_path))


def test_judgments_in_parts_publish_the_bytes_of_the_whole_file(tmp_path, monkeypatch):
    source = tmp_path / "v1.csv"
    _grades(5000).write_csv(source)
    whole = _publish(source, tmp_path / "whole.parquet", tmp_path)
    monkeypatch.setattr(readers, "CSV_PART_BYTES", 300)
    parts = _publish(source, tmp_path / "parts.parquet", tmp_path)
    assert parts.sha256 == whole.sha256 and parts.rows == 5000
    assert parts.grade_distribution == whole.grade_distribution
    assert (tmp_path / "parts.parquet").read_bytes() == (tmp_path / "whole.parquet").read_bytes()
    expected = read_judgments(source).sort("query_id", "doc_id")
    assert pl.read_parquet(tmp_path / "parts.parquet").equals(expected)


def test_a_pool_run_file_in_parts_equals_the_in_memory_path(tmp_path, small_parts):
    folder = tmp_path / "pool-a"
    folder.mkdir()
    rng = np.random.default_rng(2)
    pl.DataFrame({"query_id": [f"q{q}" for q in rng.integers(0, 50, 2000)],
                  "doc_id": [f"d{d}" for d in range(2000)],
                  "score": np.round(rng.normal(size=2000), 2), "rank": np.arange(2000),
                  "snippet": "some text, quoted"}).write_csv(folder / "bm25.csv")
    published = publish_pool(folder, tmp_path / "pool.parquet",
                             budget=dataclasses.replace(BUDGET, spill_dir=tmp_path))
    expected = read_pool(folder).sort("ranker", "query_id", "doc_id")
    assert pl.read_parquet(tmp_path / "pool.parquet").equals(expected)
    assert published.rankers == [{"ranker": "bm25", "n_queries": expected["query_id"].n_unique(),
                                  "n_candidates": 2000}]


@pytest.mark.parametrize("broken", [
    pl.col("grade").cast(pl.String).replace("2", "2.5"),  # a cell the reader refuses
    pl.when(pl.int_range(pl.len()) == 4990).then(pl.lit("high"))
    .otherwise(pl.col("grade").cast(pl.String)),
])
def test_a_broken_row_in_a_late_part_is_worded_as_the_reader(tmp_path, small_parts, broken):
    source = tmp_path / "v1.csv"
    _grades(5000).with_columns(broken.alias("grade")).write_csv(source)
    with pytest.raises(InputError) as expected:
        read_judgments(source)
    with pytest.raises(InputError) as raised:
        _publish(source, tmp_path / "out.parquet", tmp_path)
    assert refusal_fields(raised) == refusal_fields(expected)
    assert not (tmp_path / "out.parquet").exists()


def test_a_rater_with_two_kinds_in_different_parts_is_worded_as_the_reader(tmp_path,
                                                                         small_parts):
    rows = 600
    frame = pl.DataFrame({"query_id": [f"q{i // 3}" for i in range(rows)],
                          "doc_id": [f"d{i}" for i in range(rows)],
                          "rater": "h1", "rater_kind": ["human"] * (rows - 1) + ["llm"],
                          "grade": 1, "grade_status": "graded"})
    source = tmp_path / "rated-v1.csv"
    frame.write_csv(source)
    with pytest.raises(InputError) as expected:
        read_judgments(source)
    with pytest.raises(InputError) as raised:
        _publish(source, tmp_path / "out.parquet", tmp_path)
    assert refusal_fields(raised) == refusal_fields(expected)
