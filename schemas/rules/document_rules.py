"""A documents table's rules (contract section 1, Judge ratings): one row per ``doc_id``, with
its ``title`` and ``text``, what a judge reads; any further column passes through."""

from __future__ import annotations

from schemas.columns import DOCUMENT_DTYPES, DOCUMENT_KEY
from schemas.rules.rule import columns_of, non_empty, table, unique_key

# A title or a text may be empty: a document without one is refused by the judge that needs it,
# naming the pairs it was to grade, not by the table (a scan without extracted text is still a
# document of the collection).
DOCUMENTS = table(
    "Documents",
    columns_of(DOCUMENT_DTYPES, nullable=("title", "text")),
    (unique_key(DOCUMENT_KEY, "values must be unique"),
     non_empty("doc_id")),
)
