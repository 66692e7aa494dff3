"""The documents table and the pairs to judge: read, validated, refused naming the file, the
column, the rule and the rows; the bundled example's table has every document of its data."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from evaluation_pipeline.io.readers import read_candidates, read_judgments
from evaluation_pipeline.judging.document_reader import read_documents
from evaluation_pipeline.judging.pairs import read_pairs
from evaluation_pipeline.orchestration.example_week import generator
from schemas import InputError

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "data"


def refusal(path: Path, read) -> set[tuple[str, str, tuple]]:
    with pytest.raises(InputError) as refused:
        read(path)
    assert refused.value.source == str(path)
    return {(v.column, v.rule, v.rows) for v in refused.value.violations}


def test_the_bundled_documents_cover_the_example_data(tmp_path):
    documents = read_documents(EXAMPLE / "documents.csv")
    assert documents.columns[:3] == ["doc_id", "title", "text"]
    assert documents["text"].str.len_chars().min() > 20
    needed = set()
    for version in (EXAMPLE / "landing" / "judgments").glob("*.csv"):
        needed |= set(read_judgments(version)["doc_id"])
    needed |= set(read_judgments(EXAMPLE / "raters" / "maint-raters.csv")["doc_id"])
    # The week make run plays is generated, not committed: made here as make run makes it.
    gen = generator()
    gen.generate_nightly(tmp_path)
    for pool in [*(EXAMPLE / "landing" / "pools").iterdir(),
                 *(tmp_path / gen.NIGHTLY_DIR / "pools").iterdir()]:
        needed |= set(read_candidates(pool)["doc_id"])
    assert needed <= set(documents["doc_id"])


def test_a_documents_table_breaking_its_rules_is_refused_by_rule_and_row(tmp_path):
    path = tmp_path / "documents.csv"
    path.write_text("doc_id,title,text\nd1,A,x\nd1,B,y\n,C,z\n", encoding="utf-8")
    said = refusal(path, read_documents)
    assert ("doc_id", "values must be unique", (2, 3)) in said
    assert ("doc_id", "must not be empty (null)", (4,)) in said


def test_a_documents_table_without_its_text_column_is_refused(tmp_path):
    path = tmp_path / "documents.csv"
    path.write_text("doc_id,title\nd1,A\n", encoding="utf-8")
    assert ("text", "required column is missing", ()) in refusal(path, read_documents)


def test_documents_as_parquet_with_an_empty_title(tmp_path):
    path = tmp_path / "documents.parquet"
    pl.DataFrame({"doc_id": ["d1"], "title": [None], "text": ["x"]},
                 schema_overrides={"title": pl.String}).write_parquet(path)
    assert read_documents(path)["title"].to_list() == [None]


def test_pairs_listed_twice_or_without_ids_are_refused_by_line(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("query_id,doc_id\nq1,d1\nq1,\nq1,d1\n", encoding="utf-8")
    said = refusal(path, read_pairs)
    assert ("doc_id", "must be non-empty", (3,)) in said
    assert ("query_id, doc_id", "a pair is listed twice: each is judged once", (2, 4)) in said


def test_pairs_keep_their_order(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("doc_id,query_id,note\nd9,q2,x\nd1,q1,y\n", encoding="utf-8")
    pairs = read_pairs(path)
    assert pairs.select("query_id", "doc_id").rows() == [("q2", "d9"), ("q1", "d1")]
