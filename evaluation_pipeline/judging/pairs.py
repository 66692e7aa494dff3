"""The pairs to judge, each with what the judge reads: the worklist of ``ndcg-eval holes`` (or
any CSV or Parquet file with ``query_id`` and ``doc_id`` columns), in its order, joined with the
queries table's ``query_text`` and the documents table's ``title`` and ``text``.

A pair whose query has no text, or whose document is missing or has no text, is refused by
name before anything is sent: the judge would grade an empty prompt. A pair listed twice is
refused too (one rating per pair and rater).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from evaluation_pipeline.io.locations import location
from evaluation_pipeline.io.readers import read_table_file
from schemas import InputError
from schemas.columns import JUDGMENT_KEY, QUERY_TEXT
from schemas.errors import RuleViolation, violation

LINE = "_line"  # the file line of each pair, for the refusals


def read_pairs(path: str | Path) -> pl.DataFrame:
    """(query_id, doc_id, _line) of ``path`` in its order; other columns are dropped."""
    path = location(path)
    frame, lines = read_table_file(
        path, "pairs come as .csv (the worklist of ndcg-eval holes) or .parquet")
    parquet = lines is None
    if parquet:  # a pair's row number stands for its line
        lines = pl.Series(LINE, range(1, frame.height + 1))
    missing = [c for c in JUDGMENT_KEY if c not in frame.columns]
    if missing:
        raise InputError(str(path), [RuleViolation(column=c, rule="required column is missing")
                                     for c in missing])
    frame = frame.select(pl.col(c).cast(pl.String) for c in JUDGMENT_KEY).with_columns(
        lines.alias(LINE).cast(pl.Int64))
    problems = []
    for column in JUDGMENT_KEY:
        empty = frame.filter(pl.col(column).is_null() | (pl.col(column).str.len_bytes() == 0))
        if empty.height:
            problems.append(violation(column, "must be non-empty", empty[LINE].to_list(),
                                      count=empty.height))
    repeated = frame.filter(pl.struct(*JUDGMENT_KEY).is_duplicated())
    if repeated.height:
        problems.append(violation(
            ", ".join(JUDGMENT_KEY), "a pair is listed twice: each is judged once",
            repeated[LINE].to_list(), _named(repeated), count=repeated.height))
    if problems:
        raise InputError(str(path), problems, row_label="row" if parquet else "line")
    return frame


def with_texts(pairs: pl.DataFrame, queries: pl.DataFrame, documents: pl.DataFrame,
               source: str, queries_source: str, documents_source: str) -> pl.DataFrame:
    """``pairs`` with ``query_text``, ``title`` and ``text``; refuses, naming the pairs (their
    lines in ``source``), each pair the judge could not be asked about."""
    if QUERY_TEXT not in queries.columns:
        raise InputError(queries_source, [RuleViolation(
            column=QUERY_TEXT, rule="required column is missing: a judge reads each query's "
            "text")])
    joined = (pairs
              .join(queries.select("query_id", pl.col(QUERY_TEXT).cast(pl.String)),
                    on="query_id", how="left")
              .join(documents.select("doc_id", "title", "text").with_columns(
                  _present=pl.lit(True)), on="doc_id", how="left"))
    problems = []
    no_query = joined.filter(_blank(QUERY_TEXT))
    if no_query.height:
        problems.append(violation(
            "query_id", f"the query has no text in {queries_source} (column {QUERY_TEXT})",
            no_query[LINE].to_list(), _named(no_query), count=no_query.height))
    no_document = joined.filter(pl.col("_present").is_null())
    if no_document.height:
        problems.append(violation(
            "doc_id", f"the document is not in {documents_source}",
            no_document[LINE].to_list(), _named(no_document), count=no_document.height))
    no_text = joined.filter(pl.col("_present").is_not_null() & _blank("text"))
    if no_text.height:
        problems.append(violation(
            "doc_id", f"the document has no text in {documents_source} (column text)",
            no_text[LINE].to_list(), _named(no_text), count=no_text.height))
    if problems:
        raise InputError(source, problems, row_label="line")
    return joined.drop("_present")


def _blank(column: str) -> pl.Expr:
    return pl.col(column).is_null() | (pl.col(column).str.strip_chars().str.len_bytes() == 0)


def _named(frame: pl.DataFrame) -> list[str]:
    return [f"{q}/{d}" for q, d in frame.select(*JUDGMENT_KEY).iter_rows()]
