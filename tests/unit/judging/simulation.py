"""A fully judged data set with holes punched in it, for the loop's simulation: queries whose
every candidate has a true grade and a passage of its own, three rankers far apart (good,
fair, poor), people's version with a share of the grades removed, and the hidden grade table
the test server answers from."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import polars as pl

from evaluation_pipeline.judging.prompt import passage

N_QUERIES, DOCS_PER_QUERY = 40, 12
GRADE_SHARES = [0.5, 0.25, 0.15, 0.10]
HOLE_SHARE = 0.3
RANKER_NOISE = {"good": 0.3, "fair": 1.2, "poor": 4.0}


@dataclass(frozen=True)
class Simulated:
    queries: pl.DataFrame  # query_id, query_text
    documents: pl.DataFrame  # doc_id, title, text
    candidates: pl.DataFrame  # a pool of three rankers
    truth: pl.DataFrame  # every candidate graded
    people: pl.DataFrame  # truth with holes punched: a version with raters (human)
    grades: dict  # (query text, passage) -> the true grade


def _unit(*parts: str) -> float:
    digest = hashlib.sha256("\0".join(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def simulate(seed: int = 7) -> Simulated:
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(N_QUERIES):
        for d in range(DOCS_PER_QUERY):
            rows.append({"query_id": f"q{q:02d}", "doc_id": f"q{q:02d}-d{d:02d}",
                         "grade": int(rng.choice(4, p=GRADE_SHARES))})
    truth = pl.DataFrame(rows).with_columns(grade_status=pl.lit("graded"),
                                            judgment_version=pl.lit("truth"))
    queries = pl.DataFrame({"query_id": [f"q{q:02d}" for q in range(N_QUERIES)],
                            "query_text": [f"fault {q} on unit {q * 7 % 13} of line {q % 5}"
                                           for q in range(N_QUERIES)],
                            "weight": [1.0] * N_QUERIES})
    documents = truth.select(
        "doc_id", pl.format("Record {}", "doc_id").alias("title"),
        pl.format("Notes of record {}: findings and actions.", "doc_id").alias("text"))
    candidates = pl.concat([truth.select(
        pl.lit("sim").alias("candidate_pool"), pl.lit(ranker).alias("ranker"), "query_id",
        "doc_id", (pl.col("grade") + pl.Series(rng.normal(0, noise, truth.height))).alias(
            "score")) for ranker, noise in RANKER_NOISE.items()])
    kept = truth.filter(pl.struct("query_id", "doc_id").map_elements(
        lambda r: _unit(str(seed), r["query_id"], r["doc_id"]) >= HOLE_SHARE,
        return_dtype=pl.Boolean))
    people = kept.with_columns(rater=pl.lit("maint"), rater_kind=pl.lit("human"),
                               judgment_version=pl.lit("people"))
    text = dict(queries.select("query_id", "query_text").iter_rows())
    passages = {doc: passage(title, body) for doc, title, body in documents.iter_rows()}
    grades = {(text[q], passages[d]): g for q, d, g in truth.select(
        "query_id", "doc_id", "grade").iter_rows()}
    return Simulated(queries, documents, candidates, truth, people, grades)
