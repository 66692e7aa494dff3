"""The documents table (contract section 1, Judge ratings): ``doc_id``, ``title``, ``text`` and
any further column, one row per document, as CSV or Parquet, validated by its model
(``schemas.rules.document_rules``): a refusal names the file, column, rule and rows."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from evaluation_pipeline.io.locations import location
from evaluation_pipeline.io.readers import read_table_file
from schemas import validate
from schemas.columns import DOCUMENT_DTYPES


def read_documents(path: str | Path) -> pl.DataFrame:
    """The documents of ``path`` (.csv or .parquet), validated."""
    path = location(path)
    frame, lines = read_table_file(path, "documents come as .csv or .parquet")
    # A Parquet file's text columns may be stored as categories or large strings: as text.
    frame = frame.with_columns(pl.col(c).cast(pl.String) for c in DOCUMENT_DTYPES
                               if c in frame.columns and frame.schema[c] in (
                                   pl.Categorical, pl.Enum))
    return validate("Documents", frame, str(path), line_numbers=lines)
