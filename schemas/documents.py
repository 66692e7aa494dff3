"""The documents' pandera model, made from their rules (``schemas.rules.document_rules``)."""

from __future__ import annotations

from schemas.rules.document_rules import DOCUMENTS
from schemas.rules.to_pandera import model_of

Documents = model_of(DOCUMENTS, __name__)
