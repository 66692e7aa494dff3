"""Frames are scored where they are: ``evaluate()`` on DataFrames, Arrow tables and dicts writes
no file (nothing in the temporary folder, no Parquet written at all), and gives the per-query
rows and lineage of the same rows read from files named as the frames are."""

from __future__ import annotations

import tempfile

import polars as pl
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

from evaluation_pipeline import evaluate
from tests.support.paths import P28, V2


def pool_frame() -> pl.DataFrame:
    return pl.concat([pl.read_parquet(p) for p in sorted(P28.glob("*.parquet"))],
                     how="diagonal_relaxed")


def grades_frame() -> pl.DataFrame:
    return pl.read_csv(V2, schema_overrides={"query_id": pl.String, "doc_id": pl.String})


@pytest.fixture
def no_writes(tmp_path, monkeypatch):
    """An empty temporary folder that must stay empty, and Parquet writers that refuse."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    for name in ("TMPDIR", "TEMP", "TMP"):
        monkeypatch.setenv(name, str(scratch))

    def refused(*args, **kwargs):
        raise AssertionError("an in-memory input was written to a file")

    monkeypatch.setattr(pq, "write_table", refused)
    monkeypatch.setattr(pl.DataFrame, "write_parquet", refused)
    monkeypatch.setattr(pl.LazyFrame, "sink_parquet", refused)
    return scratch


@pytest.mark.parametrize("kind", ["polars", "pandas", "arrow"])
def test_frames_are_scored_without_writing_a_file(no_writes, kind):
    convert = {"polars": lambda f: f, "pandas": lambda f: f.to_pandas(),
               "arrow": lambda f: f.to_arrow()}[kind]
    result = evaluate(convert(grades_frame()), convert(pool_frame()))
    assert result.engine == "local" and result.per_query.height > 0
    assert list(no_writes.iterdir()) == []


def test_a_dict_is_scored_without_writing_a_file(no_writes):
    result = evaluate({"q1": {"a": 2, "b": 0}}, {"q1": {"a": 1.0, "b": 0.5}})
    assert result.per_query["status"].unique().to_list() == ["scored"]
    assert list(no_writes.iterdir()) == []


def test_a_frame_gives_the_rows_and_lineage_of_the_same_rows_as_a_file(tmp_path):
    """Named alike (judgments.parquet, pool/run.parquet), a file and a frame are one input:
    the same rows to the last bit, the same lineage (names and content hashes)."""
    grades = grades_frame().drop("judgment_version")
    pool = pool_frame().drop("candidate_pool", "ranker").filter(pl.col("score").is_not_null())
    pool = pool.unique(["query_id", "doc_id"], keep="first", maintain_order=True)
    (tmp_path / "pool").mkdir()
    grades.write_parquet(tmp_path / "judgments.parquet")
    pool.write_parquet(tmp_path / "pool" / "run.parquet")
    from_files = evaluate(tmp_path / "judgments.parquet", tmp_path / "pool" / "run.parquet")
    in_memory = evaluate(grades, pool)
    assert_frame_equal(in_memory.per_query, from_files.per_query, check_exact=True)
    assert in_memory.lineage == from_files.lineage
    assert (in_memory.lineage.judgment_version, in_memory.lineage.candidate_pool,
            in_memory.per_query["ranker"].unique().to_list()) == ("judgments", "pool", ["run"])


def test_a_refusal_names_the_frame_as_given(no_writes):
    from schemas.errors import InputError

    bad = grades_frame().with_columns(grade=pl.lit(2.5))
    with pytest.raises(InputError) as raised:
        evaluate(bad, pool_frame())
    assert raised.value.source == "judgments (polars DataFrame)"
    assert [v.column for v in raised.value.violations] == ["grade"]
    assert list(no_writes.iterdir()) == []
