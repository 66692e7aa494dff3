"""A judgment version's pandera models, made from its rules (``schemas.rules.judgment_rules``)."""

from __future__ import annotations

from schemas.rules.judgment_rules import JUDGMENTS, RATED_JUDGMENTS
from schemas.rules.to_pandera import model_of

Judgments = model_of(JUDGMENTS, __name__)
# A version with several raters per document: one rating per (query_id, doc_id, rater).
RatedJudgments = model_of(RATED_JUDGMENTS, __name__)
