"""The judge's ratings as a judgment version (contract section 1): one row per pair with the
judge's id as ``rater`` and ``llm`` as ``rater_kind``, and each rating's provenance (Judge
ratings): the model, the template's name and SHA-256, the temperature, the raw answer, the
tokens it took, why a rating is ``unknown``, and the cache key of its question.

The frame is validated as the readers validate a version, then written as CSV by
``io.atomic``: the file appears whole or not at all.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from evaluation_pipeline.io.atomic import atomic_write
from evaluation_pipeline.judging.prompt import Template
from evaluation_pipeline.judging.run import Judged
from schemas import validate
from schemas.columns import (
    GRADED,
    JUDGE_ANSWER,
    JUDGE_CACHE_KEY,
    JUDGE_MODEL,
    JUDGE_REASON,
    JUDGE_TEMPERATURE,
    JUDGE_TEMPLATE,
    JUDGE_TEMPLATE_SHA256,
    JUDGE_TOKENS,
    LLM,
    RATER,
    RATER_KIND,
    UNKNOWN,
)


def default_rater(model: str, template: Template) -> str:
    """The judge's id: its model and its template's hash (``qwen2.5:7b@bf30a76e4bc5``), so
    that two versions judged under two prompts differ in their content hash, which counts each
    rating's rater (contract section 1, Content hashes)."""
    return f"{model}@{template.sha256[:12]}"


def judgment_frame(judged: list[Judged], *, version: str, rater: str, model: str,
                   template: Template, temperature: float) -> pl.DataFrame:
    frame = pl.DataFrame({
        "query_id": [j.query_id for j in judged],
        "doc_id": [j.doc_id for j in judged],
        "grade": [j.grade for j in judged],
        "grade_status": [GRADED if j.grade is not None else UNKNOWN for j in judged],
        "judgment_version": [version] * len(judged),
        RATER: [rater] * len(judged),
        RATER_KIND: [LLM] * len(judged),
        JUDGE_MODEL: [model] * len(judged),
        JUDGE_TEMPLATE: [template.name] * len(judged),
        JUDGE_TEMPLATE_SHA256: [template.sha256] * len(judged),
        JUDGE_TEMPERATURE: [float(temperature)] * len(judged),
        JUDGE_ANSWER: [j.reply.content for j in judged],
        JUDGE_TOKENS: [j.reply.tokens for j in judged],
        JUDGE_REASON: [j.reason for j in judged],
        JUDGE_CACHE_KEY: [j.key for j in judged],
    }, schema_overrides={"grade": pl.Int64, JUDGE_TOKENS: pl.Int64, JUDGE_REASON: pl.String,
                         "query_id": pl.String, "doc_id": pl.String})
    return frame.sort("query_id", "doc_id")


def write_version(frame: pl.DataFrame, out: Path) -> Path:
    """``frame`` checked as a version with raters, then written to ``out`` atomically."""
    validate("Judgments", frame, str(out))
    return atomic_write(out, lambda tmp: frame.write_csv(tmp))
