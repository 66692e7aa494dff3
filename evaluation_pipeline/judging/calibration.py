"""What the gate measures the judge on: people's ratings of the version a worklist was made
from, and documents they graded that the judge grades too (contract section 1, Judge ratings:
the gate). A hole is by definition a document no person graded, so a judge that graded only
holes has nothing in common with people to be measured on.
"""

from __future__ import annotations

import hashlib

import polars as pl

from evaluation_pipeline.judging.gate import HUMAN
from evaluation_pipeline.judging.pairs import LINE
from schemas.columns import GRADED, JUDGMENT_KEY, RATER, RATER_KIND

# Documents people graded that the judge grades too, by default: enough whole queries (16 on
# the example week) for the rankers' order over them to mean something, well above the least
# overlap (NDCG_EVAL_GATE_MIN_OVERLAP, 30).
DEFAULT_CALIBRATION = 300


def people_ratings(base: pl.DataFrame, base_version: str) -> pl.DataFrame:
    """The base version's ratings as people's: a version without raters is one person's, named
    by the version; a rating without a kind is a person's."""
    if RATER not in base.columns:
        base = base.with_columns(pl.lit(base_version).alias(RATER))
    if RATER_KIND not in base.columns:
        base = base.with_columns(pl.lit(HUMAN).alias(RATER_KIND))
    return base.with_columns(pl.col(RATER_KIND).fill_null(HUMAN))


def calibration_pairs(people: pl.DataFrame, known: pl.DataFrame, queries: pl.DataFrame,
                      documents: pl.DataFrame, count: int) -> pl.DataFrame:
    """About ``count`` documents people graded, not in ``known``, whose texts the judge can
    read: every such document of whole queries, the queries in the order of the SHA-256 of
    their id (the same on a rerun), until ``count`` are taken. Whole queries, because the
    gate's Kendall's tau orders the rankers by their NDCG over these documents: a query with
    one graded document orders nothing."""
    if count <= 0:
        return known.head(0)
    graded = (people.filter((pl.col(RATER_KIND) == HUMAN) & (pl.col("grade_status") == GRADED))
              .select(*JUDGMENT_KEY).unique()
              .join(known.select(*JUDGMENT_KEY), on=list(JUDGMENT_KEY), how="anti")
              .join(queries.filter(pl.col("query_text").str.strip_chars().str.len_bytes() > 0)
                    .select("query_id"), on="query_id", how="semi")
              .join(documents.filter(pl.col("text").str.strip_chars().str.len_bytes() > 0)
                    .select("doc_id"), on="doc_id", how="semi"))
    order = {q: hashlib.sha256(q.encode()).hexdigest()
             for q in graded["query_id"].unique().to_list()}
    ranked = graded.with_columns(
        pl.col("query_id").replace_strict(order, return_dtype=pl.String).alias("_order")
    ).sort("_order", "doc_id")
    # The queries before the one that reaches ``count``, and that one whole.
    before = ranked.with_columns(pl.int_range(pl.len()).alias("_row"))
    last = before.filter(pl.col("_row") == min(count, before.height) - 1)["_order"]
    chosen = before.filter(pl.col("_order") <= last.item()) if last.len() else before.head(0)
    return chosen.select(*JUDGMENT_KEY).with_columns(pl.lit(0, pl.Int64).alias(LINE))
