"""Generate the bundled example data for the maintenance-search NDCG evaluation.

The example is a maintenance document search: technicians, engineers and contractors search
work orders (``WO-18342``), equipment manuals (``MAN-PUMP-0042``) and standard operating
procedures (``SOP-113``) with queries such as ``pump-47`` ("centrifugal pump mechanical seal
leak"). Three rankers rerank the same retrieved candidates, and two judgment versions grade them.

Written under ``examples/data/`` (paths relative to this file):

``landing/judgments/maint-v1.csv``, ``landing/judgments/maint-v2.csv``
    Two judgment versions. Columns: query_id, doc_id, grade, grade_status, judgment_version,
    judge, rubric, judged_at. ``grade`` is an integer 0..3, empty exactly when ``grade_status``
    is ``unknown`` (the judge could not assess the document). ``maint-v2`` corrects some grades
    of ``maint-v1``, resolves some of its unknowns, judges documents that ``maint-v1`` left
    unjudged and adds two queries that ``maint-v1`` never judged.
``trec/maint-v1.qrels``
    ``maint-v1`` as TREC qrels (``qid iter docno rel``), with unknown written as rel -1.
``landing/pools/pool-2026-11-28/``, ``landing/pools/pool-2026-11-29/``
    Two candidate pools, one Parquet run file per ranker (``bm25-v3``, ``hybrid-v1``,
    ``dense-v2``) with columns candidate_pool, ranker, query_id, doc_id, score (float64),
    rank (int64), and an empty ``_READY`` marker written last. Within a pool all three rankers
    rank the same candidates per query, so the comparison between them is a pure reranker
    comparison. The second pool adds freshly created work orders that neither judgment version
    has seen, and brings back a few judged documents that the first pool missed, so comparing
    the two pools is not a pure reranker comparison.
``raters/maint-raters.csv``
    A version with three raters (columns of a version plus rater, rater_kind): two humans,
    ``h1`` and ``h2``, who regrade what ``maint-v2`` judged and disagree on some documents,
    and an LLM judge, ``llm-judge``, that grades every candidate of the first pool. It sits
    beside the landing folder, not in it: it is landed on purpose (docs/spec.md, "Several
    raters"; the pipeline's test of raters).
``queries.csv``
    query_id, query_text, weight (traffic count, skewed, integer-valued, >= 0) and the slice
    columns equipment_class, doc_age_band and permission_group.

Why the data looks the way it does: every convention of the evaluation contract should make a
visible difference on it. Hence

* ``hybrid-v1`` is the best ranker, ``bm25-v3`` is in the middle and ``dense-v2`` is good on
  recent documents but loses most of its signal on documents older than three years, so the
  ``doc_age_band`` slice tells a different story from the overall mean;
* ``bm25-v3`` scores are rounded to two decimals and templated work orders share exact scores,
  so the tie rule (average, doc_id, trec_eval) changes some results, including tie groups that
  straddle the cutoffs 5 and 10;
* some queries have only grade-0 judgments (``no_positive``), some have an ``unknown`` candidate
  (``incomplete`` under the default policy), one has an ``unknown`` row only outside the
  candidates (matters for the ``all_judged`` ideal only), many have candidates without any
  judgment row (``unjudged``) and judged documents outside the candidates (candidate recall
  below 1);
* one judged query with positive grades is missing from every run of the first pool
  (``missing_from_run``), and the two queries new in ``maint-v2`` are ``not_judged`` under
  ``maint-v1``;
* query weights are skewed (one query has weight 0), so macro and traffic-weighted means differ.

The output is deterministic: a fixed seed, a fixed order of random draws and sorted rows.
Re-running the script overwrites its own files and nothing else.

Usage: ``python examples/generate_example_data.py [--out-dir DIR]``

With ``--nightly`` it writes, instead, a week of nightly pools under ``DIR/nightly/`` (the same
queries and judgment versions; dense-v2 regresses on the fifth night, bm25-v3 moves within
noise, maint-v2 lands between the third and the fourth night), and ``--land-next LANDING``
lands the next of them (in ``arrivals.json`` order) into a landing folder.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from evaluation_pipeline.io.storage import READY_MARKER

SEED = 20261128

JUDGMENT_VERSION_1 = "maint-v1"
JUDGMENT_VERSION_2 = "maint-v2"
POOL_1 = "pool-2026-11-28"
POOL_2 = "pool-2026-11-29"
RANKERS = ("bm25-v3", "hybrid-v1", "dense-v2")

AGE_BANDS = ("<1y", "1-3y", ">3y")
PERMISSION_GROUPS = ("technicians", "engineers", "contractors")
JUDGES = ("judge-01", "judge-02", "judge-03", "judge-04", "judge-05")
RUBRIC_V1 = "maint-grading-1.0"
RUBRIC_V2 = "maint-grading-1.1"

# Query texts per equipment class; the number of texts is the number of queries of the class.
QUERY_TEXTS: dict[str, tuple[str, ...]] = {
    "pump": (
        "centrifugal pump mechanical seal leak",
        "pump cavitation noise at low suction pressure",
        "replace impeller on process water pump",
        "pump bearing temperature high alarm",
        "priming procedure for self-priming pump",
        "pump vibration after coupling alignment",
        "pump motor overload trip on startup",
        "seal flush plan 53B pressure setup",
        "diaphragm pump check valve replacement",
        "pump shaft sleeve wear tolerance",
    ),
    "valve": (
        "control valve hunting positioner calibration",
        "gate valve packing leak adjustment",
        "pressure relief valve test interval",
        "butterfly valve actuator torque setting",
        "valve stem seized lubrication",
        "solenoid valve coil burnout",
        "check valve slam water hammer",
        "ball valve seat replacement procedure",
    ),
    "compressor": (
        "screw compressor high discharge temperature",
        "air compressor oil carryover",
        "compressor unloader valve failure",
        "reciprocating compressor valve plate inspection",
        "compressed air dryer dew point alarm",
        "compressor intake filter change interval",
        "centrifugal compressor surge on startup",
    ),
    "conveyor": (
        "conveyor belt tracking adjustment",
        "conveyor belt splice procedure",
        "gearbox oil leak on conveyor drive",
        "idler roller bearing replacement",
        "pull cord emergency stop test",
        "conveyor belt slipping on head pulley",
    ),
    "boiler": (
        "boiler low water cutoff test",
        "burner flame failure lockout",
        "boiler tube leak inspection",
        "feedwater pump cavitation on boiler",
        "steam boiler blowdown procedure",
        "boiler stack temperature high",
    ),
    "chiller": (
        "chiller low refrigerant pressure trip",
        "chiller condenser tube cleaning",
        "chiller oil pressure differential fault",
        "evaporator freeze protection setpoint",
        "chiller compressor short cycling",
    ),
}
# Query numbers kept fixed because the contract's worked case G uses them.
FIXED_QUERY_NUMBERS = {("pump", 0): 47, ("valve", 0): 62}
# Queries first judged in the second version: (equipment class, index in QUERY_TEXTS).
NEW_IN_V2 = (("compressor", 6), ("chiller", 4))
# A judged query that the first pool lost (an indexing outage for boiler documents).
MISSING_FROM_POOL_1 = ("boiler", 2)

N_NO_POSITIVE = 4  # queries whose judged documents all have grade 0 in maint-v1
N_UNKNOWN_CANDIDATE = 7  # queries with an unknown-grade candidate in maint-v1
N_BM25_TIES = 10  # queries with a deliberate bm25 tie group

GENERAL_SOPS = (
    "lockout tagout",
    "confined space entry",
    "hot work permit",
    "working at height",
    "pressure system isolation",
    "chemical handling",
    "permit to work",
    "rotating equipment guarding",
    "electrical isolation",
    "spill response",
    "manual handling",
    "shift handover",
)


@dataclass(frozen=True)
class Document:
    doc_id: str
    doc_type: str  # work_order, manual, procedure
    equipment_class: str | None  # None for site-wide procedures
    age_band: str


@dataclass
class Query:
    query_id: str
    query_text: str
    equipment_class: str
    doc_age_band: str
    permission_group: str
    weight: int
    role: set[str] = field(default_factory=set)
    # Retrieved by the first pool; relevance is the grade a careful judge would give.
    candidates: list[str] = field(default_factory=list)
    relevance: dict[str, int] = field(default_factory=dict)
    # Judged documents that the first pool did not retrieve.
    outside_candidates: list[str] = field(default_factory=list)
    pool_2_additions: list[str] = field(default_factory=list)


def build_corpus(rng: np.random.Generator) -> dict[str, Document]:
    """Work orders, manuals and procedures per equipment class, plus site-wide procedures."""
    corpus: dict[str, Document] = {}
    work_order_numbers = iter(rng.choice(np.arange(10000, 29999), size=600, replace=False))
    sop_numbers = iter(rng.choice(np.arange(100, 999), size=150, replace=False))
    for equipment_class in QUERY_TEXTS:
        manual_numbers = sorted(rng.choice(np.arange(1, 200), size=12, replace=False))
        for number in manual_numbers:
            doc_id = f"MAN-{equipment_class.upper()}-{number:04d}"
            # Manuals are mostly old scans; work orders are mostly recent.
            age = str(rng.choice(AGE_BANDS, p=[0.15, 0.35, 0.50]))
            corpus[doc_id] = Document(doc_id, "manual", equipment_class, age)
        for _ in range(60):
            doc_id = f"WO-{next(work_order_numbers)}"
            age = str(rng.choice(AGE_BANDS, p=[0.45, 0.35, 0.20]))
            corpus[doc_id] = Document(doc_id, "work_order", equipment_class, age)
        for _ in range(16):
            doc_id = f"SOP-{next(sop_numbers)}"
            age = str(rng.choice(AGE_BANDS, p=[0.25, 0.40, 0.35]))
            corpus[doc_id] = Document(doc_id, "procedure", equipment_class, age)
    for _ in GENERAL_SOPS:
        doc_id = f"SOP-{next(sop_numbers)}"
        age = str(rng.choice(AGE_BANDS, p=[0.20, 0.40, 0.40]))
        corpus[doc_id] = Document(doc_id, "procedure", None, age)
    return corpus


def build_queries(rng: np.random.Generator) -> list[Query]:
    """Query ids like ``pump-47``, slice attributes and a skewed traffic weight."""
    queries: list[Query] = []
    for equipment_class, texts in QUERY_TEXTS.items():
        numbers = [int(n) for n in rng.choice(np.arange(10, 100), size=len(texts), replace=False)]
        for (fixed_class, index), number in FIXED_QUERY_NUMBERS.items():
            if fixed_class == equipment_class:
                if number in numbers:
                    numbers[numbers.index(number)] = numbers[index]
                numbers[index] = number
        for index, text in enumerate(texts):
            queries.append(
                Query(
                    query_id=f"{equipment_class}-{numbers[index]}",
                    query_text=text,
                    equipment_class=equipment_class,
                    doc_age_band=str(rng.choice(AGE_BANDS, p=[0.30, 0.40, 0.30])),
                    permission_group=str(rng.choice(PERMISSION_GROUPS, p=[0.55, 0.30, 0.15])),
                    # Traffic counts: a few head queries carry most of the volume.
                    weight=int(round(rng.lognormal(mean=3.2, sigma=1.2))),
                )
            )
    by_key = {
        (q.equipment_class, QUERY_TEXTS[q.equipment_class].index(q.query_text)): q for q in queries
    }
    for key in NEW_IN_V2:
        by_key[key].role.add("new_in_v2")
    by_key[NEW_IN_V2[-1]].weight = 0  # launched after the traffic window closed
    by_key[MISSING_FROM_POOL_1].role.add("missing_from_pool_1")

    # pump-47 and valve-62 stay ordinary scored queries, as in the contract's worked case.
    eligible = [
        q
        for q in queries
        if not q.role and (q.equipment_class, QUERY_TEXTS[q.equipment_class].index(q.query_text))
        not in FIXED_QUERY_NUMBERS
    ]
    order = rng.permutation(len(eligible))
    picked = [eligible[i] for i in order]
    no_positive = picked[:N_NO_POSITIVE]
    for q in no_positive:
        q.role.add("no_positive")
    no_positive[0].role.add("positive_found_in_v2")  # maint-v2 corrects one missed grade
    for q in picked[N_NO_POSITIVE : N_NO_POSITIVE + N_UNKNOWN_CANDIDATE]:
        q.role.add("unknown_candidate")
    picked[N_NO_POSITIVE + N_UNKNOWN_CANDIDATE].role.add("unknown_outside_candidates")
    tie_order = rng.permutation(len(queries))
    for i in tie_order[:N_BM25_TIES]:
        queries[i].role.add("bm25_tie")
    return sorted(queries, key=lambda q: q.query_id)


def draw_relevance(rng: np.random.Generator, doc: Document, query: Query) -> int:
    """Grade 0..3: documents of the query's class and age band are more often relevant."""
    if doc.equipment_class is None:
        return int(rng.choice(4, p=[0.55, 0.40, 0.05, 0.0]))
    if doc.equipment_class != query.equipment_class:
        return int(rng.choice(4, p=[0.90, 0.10, 0.0, 0.0]))
    if doc.age_band == query.doc_age_band:
        return int(rng.choice(4, p=[0.40, 0.25, 0.20, 0.15]))
    return int(rng.choice(4, p=[0.65, 0.22, 0.09, 0.04]))


def sample_documents(
    rng: np.random.Generator, pool: list[Document], query: Query, size: int, exclude: set[str]
) -> list[Document]:
    available = [d for d in pool if d.doc_id not in exclude]
    weights = np.array([2.5 if d.age_band == query.doc_age_band else 1.0 for d in available])
    chosen = rng.choice(len(available), size=size, replace=False, p=weights / weights.sum())
    return [available[i] for i in sorted(chosen)]


def build_candidates(
    rng: np.random.Generator, corpus: dict[str, Document], queries: list[Query]
) -> list[Document]:
    """First-pool candidates, judged documents outside them and second-pool additions.

    Returns the new work orders created between the two pools (never judged by any version).
    """
    by_class: dict[str | None, list[Document]] = {}
    for doc in corpus.values():
        by_class.setdefault(doc.equipment_class, []).append(doc)
    new_work_order_numbers = iter(rng.choice(np.arange(30000, 31999), size=200, replace=False))
    new_work_orders: list[Document] = []

    for query in queries:
        n_candidates = int(rng.integers(15, 22))
        n_site_wide = int(rng.integers(1, 3))
        n_other_class = int(rng.integers(0, 3))
        n_own = n_candidates - n_site_wide - n_other_class
        own = sample_documents(rng, by_class[query.equipment_class], query, n_own, set())
        site_wide = sample_documents(rng, by_class[None], query, n_site_wide, set())
        other_classes = [
            d
            for equipment_class, class_docs in by_class.items()
            if equipment_class not in (None, query.equipment_class)
            for d in class_docs
        ]
        other_class = sample_documents(rng, other_classes, query, n_other_class, set())
        docs = own + site_wide + other_class
        query.candidates = [d.doc_id for d in docs]
        query.relevance = {d.doc_id: draw_relevance(rng, d, query) for d in docs}

        # Judged in an earlier round, not retrieved by this pool: candidate recall below 1.
        if rng.random() < 0.55 or "unknown_outside_candidates" in query.role:
            n_extra = int(rng.integers(1, 4))
            extra = sample_documents(
                rng, by_class[query.equipment_class], query, n_extra, set(query.candidates)
            )
            query.outside_candidates = [d.doc_id for d in extra]
            for d in extra:
                query.relevance[d.doc_id] = max(1, draw_relevance(rng, d, query))

        if "no_positive" in query.role:
            for doc_id in query.relevance:
                query.relevance[doc_id] = 0
            if "positive_found_in_v2" in query.role:
                missed = query.candidates[int(rng.integers(0, len(query.candidates)))]
                query.relevance[missed] = 2
        elif max(query.relevance[d] for d in query.candidates) < 2:
            # Every ordinary query has at least one good answer among its candidates.
            matching = [d.doc_id for d in own if d.age_band == query.doc_age_band]
            matching = matching or [own[0].doc_id]
            query.relevance[matching[int(rng.integers(0, len(matching)))]] = 3

        # The second pool: fresh work orders (never judged) and, sometimes, a judged document
        # that the first pool missed (never the one kept unknown outside the candidates).
        room = 25 - len(query.candidates)
        recoverable = query.outside_candidates
        if "unknown_outside_candidates" in query.role:
            recoverable = recoverable[:-1]
        if recoverable and rng.random() < 0.5:
            query.pool_2_additions.append(recoverable[0])
            room -= 1
        if rng.random() < 0.65:
            for _ in range(min(room, int(rng.integers(1, 4)))):
                doc_id = f"WO-{next(new_work_order_numbers)}"
                doc = Document(doc_id, "work_order", query.equipment_class, "<1y")
                new_work_orders.append(doc)
                query.pool_2_additions.append(doc.doc_id)
                query.relevance[doc.doc_id] = (
                    0 if "no_positive" in query.role else draw_relevance(rng, doc, query)
                )
    return new_work_orders


def random_date(rng: np.random.Generator, first_day: str, n_days: int) -> str:
    day = np.datetime64(first_day) + np.timedelta64(int(rng.integers(0, n_days)), "D")
    return str(day)


def build_judgments(
    rng: np.random.Generator, queries: list[Query]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """maint-v1 (with judging mistakes and gaps) and maint-v2 (corrections and additions)."""
    rows_v1: dict[tuple[str, str], dict] = {}
    rows_v2: dict[tuple[str, str], dict] = {}

    def row(
        query: Query, doc_id: str, grade: int | None, version: str, rubric: str, first_day: str
    ) -> dict:
        return {
            "query_id": query.query_id,
            "doc_id": doc_id,
            "grade": grade,
            "grade_status": "unknown" if grade is None else "graded",
            "judgment_version": version,
            "judge": str(rng.choice(JUDGES)),
            "rubric": rubric,
            "judged_at": random_date(rng, first_day, 10),
        }

    for query in queries:
        judged = query.candidates + query.outside_candidates
        candidates = list(query.candidates)
        unjudged_v1: list[str] = []
        unknown_v1: list[str] = []
        if "new_in_v2" not in query.role:
            if rng.random() < 0.55 and "no_positive" not in query.role:
                # Retrieved but never sent to a judge in the first round.
                count = int(rng.integers(1, 4))
                order = rng.permutation(len(candidates))
                unjudged_v1 = [candidates[i] for i in sorted(order[:count])]
            if "unknown_candidate" in query.role:
                remaining = [d for d in candidates if d not in unjudged_v1]
                count = int(rng.integers(1, 3))
                order = rng.permutation(len(remaining))
                unknown_v1 = [remaining[i] for i in sorted(order[:count])]
            if "unknown_outside_candidates" in query.role:
                unknown_v1.append(query.outside_candidates[-1])

            for doc_id in judged:
                if doc_id in unjudged_v1:
                    continue
                grade: int | None = query.relevance.get(doc_id, 0)
                if doc_id in unknown_v1:
                    grade = None
                elif "positive_found_in_v2" in query.role and grade:
                    grade = 0  # the first judge missed the one useful document
                elif "no_positive" not in query.role and rng.random() < 0.10:
                    # Judging noise that the second round corrects.
                    grade = int(np.clip(grade + rng.choice([-1, 1]), 0, 3))
                rows_v1[(query.query_id, doc_id)] = row(
                    query, doc_id, grade, JUDGMENT_VERSION_1, RUBRIC_V1, "2026-10-05"
                )

        # maint-v2 starts from maint-v1 and re-judges what was wrong, unknown or missing.
        for doc_id in judged:
            key = (query.query_id, doc_id)
            previous = rows_v1.get(key)
            grade = query.relevance.get(doc_id, 0)
            still_unknown = previous is not None and previous["grade_status"] == "unknown"
            if still_unknown and rng.random() < 0.5:
                rows_v2[key] = dict(previous, judgment_version=JUDGMENT_VERSION_2)
                continue
            if previous is None and rng.random() < 0.3:
                continue  # still not judged in the second round
            if previous is not None and previous["grade"] == grade:
                rows_v2[key] = dict(previous, judgment_version=JUDGMENT_VERSION_2)
                continue
            rows_v2[key] = row(query, doc_id, grade, JUDGMENT_VERSION_2, RUBRIC_V2, "2026-11-14")

    # A newly judged document the second-round judge could not open.
    new_rows = sorted(
        k for k in rows_v2 if k not in rows_v1 and rows_v2[k]["grade_status"] == "graded"
    )
    key = new_rows[int(rng.integers(0, len(new_rows)))]
    rows_v2[key] = dict(rows_v2[key], grade=None, grade_status="unknown")

    schema = {
        "query_id": pl.String,
        "doc_id": pl.String,
        "grade": pl.Int64,
        "grade_status": pl.String,
        "judgment_version": pl.String,
        "judge": pl.String,
        "rubric": pl.String,
        "judged_at": pl.String,
    }
    frames = []
    for rows in (rows_v1, rows_v2):
        frames.append(
            pl.DataFrame([rows[k] for k in sorted(rows)], schema=schema, orient="row").sort(
                "query_id", "doc_id"
            )
        )
    return frames[0], frames[1]


def document_scores(
    relevance: int, doc: Document, noise: np.ndarray, dense_strength: float | None = None
) -> dict[str, float]:
    """Each ranker's score of one document from its relevance and three standard normals.

    ``dense_strength`` overrides how much relevance signal the dense embedding keeps.
    """
    # Work orders repeat the equipment vocabulary, so bm25 lifts them a little.
    lexical_bonus = 0.8 if doc.doc_type == "work_order" else 0.0
    bm25 = 6.0 + 3.1 * (relevance + 1.05 * noise[0]) + lexical_bonus
    # A retrieved document always has a positive bm25 score: a smooth floor, not a clip.
    bm25 = 2.0 * math.log1p(math.exp(bm25 / 2.0))
    # Embeddings of old scanned manuals and work orders carry little signal.
    strength = dense_strength
    if strength is None:
        strength = 0.3 if doc.age_band == ">3y" else 1.0
    dense = 0.55 + 0.07 * (strength * relevance + 0.95 * noise[1])
    dense = float(np.clip(dense, 0.05, 0.99))
    hybrid = 1.0 / (1.0 + math.exp(-1.1 * (relevance + 0.75 * noise[2] - 1.2)))
    return {"bm25-v3": round(bm25, 2), "dense-v2": round(dense, 6), "hybrid-v1": round(hybrid, 6)}


def draw_ranker_signals(
    rng: np.random.Generator, corpus: dict[str, Document], queries: list[Query]
) -> dict[tuple[str, str, str], float]:
    """One score per (ranker, query, document), shared by both pools: the models did not change."""
    signals: dict[tuple[str, str, str], float] = {}
    for query in queries:
        for doc_id in query.candidates + query.pool_2_additions:
            noise = rng.normal(size=3)
            scores = document_scores(query.relevance[doc_id], corpus[doc_id], noise)
            for ranker, value in scores.items():
                signals[(ranker, query.query_id, doc_id)] = value

        if "bm25_tie" in query.role:
            # Templated work orders with the same text get the same bm25 score; the tie group
            # starts at position 1, 4 or 9, so it can straddle the cutoffs 5 and 10.
            ranked = sorted(
                query.candidates, key=lambda d: -signals[("bm25-v3", query.query_id, d)]
            )
            start = int(rng.choice([0, 3, 8]))
            size = 2 if start == 0 else 3
            group = ranked[start : start + size]
            tied_score = signals[("bm25-v3", query.query_id, group[0])]
            for doc_id in group:
                signals[("bm25-v3", query.query_id, doc_id)] = tied_score
    return signals


def build_pool(
    pool_name: str, queries: list[Query], signals: dict[tuple[str, str, str], float]
) -> dict[str, pl.DataFrame]:
    runs = {}
    for ranker in RANKERS:
        records = []
        for query in queries:
            if pool_name == POOL_1 and "missing_from_pool_1" in query.role:
                continue
            doc_ids = list(query.candidates)
            if pool_name == POOL_2:
                doc_ids += query.pool_2_additions
            for doc_id in doc_ids:
                records.append((query.query_id, doc_id, signals[(ranker, query.query_id, doc_id)]))
        runs[ranker] = run_frame(pool_name, ranker, records)
    return runs


def run_frame(pool_name: str, ranker: str, records: list[tuple[str, str, float]]) -> pl.DataFrame:
    """One ranker's run file from (query_id, doc_id, score) records."""
    run = pl.DataFrame(
        records,
        schema={"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64},
        orient="row",
    )
    # rank is for display only; equal scores get consecutive ranks by doc_id.
    return (
        run.sort(["query_id", "score", "doc_id"], descending=[False, True, False])
        .with_columns(rank=pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("query_id"))
        .select(
            pl.lit(pool_name).alias("candidate_pool"),
            pl.lit(ranker).alias("ranker"),
            "query_id",
            "doc_id",
            "score",
            "rank",
        )
    )


def write_trec_qrels(judgments: pl.DataFrame, path: Path) -> None:
    """``qid iter docno rel``; rel -1 marks an unknown grade (in the pool, not judged)."""
    lines = [
        f"{query_id} 0 {doc_id} {-1 if grade is None else grade}"
        for query_id, doc_id, grade in judgments.select("query_id", "doc_id", "grade").iter_rows()
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_outputs(
    out_dir: Path,
    queries: list[Query],
    judgments: dict[str, pl.DataFrame],
    pools: dict[str, dict[str, pl.DataFrame]],
) -> None:
    judgments_dir = out_dir / "landing" / "judgments"
    trec_dir = out_dir / "trec"
    for directory in (judgments_dir, trec_dir):
        directory.mkdir(parents=True, exist_ok=True)
    for version, frame in judgments.items():
        frame.write_csv(judgments_dir / f"{version}.csv")
    write_trec_qrels(judgments[JUDGMENT_VERSION_1], trec_dir / f"{JUDGMENT_VERSION_1}.qrels")

    for pool_name, runs in pools.items():
        pool_dir = out_dir / "landing" / "pools" / pool_name
        pool_dir.mkdir(parents=True, exist_ok=True)
        marker = pool_dir / READY_MARKER
        # Withdraw the marker while rewriting so a watcher never sees a half-written pool.
        marker.unlink(missing_ok=True)
        for ranker, run in runs.items():
            run.write_parquet(pool_dir / f"{ranker}.parquet")
        marker.write_bytes(b"")

    queries_frame(queries).write_csv(out_dir / "queries.csv")
    # Beside the landing, not in it: the pipeline's tests land the bundled folder whole.
    raters_dir = out_dir / "raters"
    raters_dir.mkdir(parents=True, exist_ok=True)
    build_rated_version(queries, judgments[JUDGMENT_VERSION_2]).write_csv(
        raters_dir / f"{RATED_VERSION}.csv")


# --- a version with several raters (raters/maint-raters.csv) -----------------------------------
# Two human raters regrade what maint-v2 judged: h1 as maint-v2 did, h2 one grade apart on some
# documents, each skipping a few; an LLM judge grades every candidate of the first pool, and
# maint-v2's documents outside it, from the careful grade with some mistakes. Its own generator,
# so that every earlier draw, and so every other file, stays as it was.
RATED_VERSION = "maint-raters"
RATED_SEED = 20261233
HUMAN_RATERS = ("h1", "h2")
LLM_RATER = "llm-judge"


def build_rated_version(queries: list[Query], judgments_v2: pl.DataFrame) -> pl.DataFrame:
    rng = np.random.default_rng(RATED_SEED)
    v2 = {(q, d): (g, st) for q, d, g, st in judgments_v2.select(
        "query_id", "doc_id", "grade", "grade_status").iter_rows()}
    rows = []

    def rate(query_id, doc_id, rater, kind, grade):
        rows.append((query_id, doc_id, grade, "unknown" if grade is None else "graded", rater,
                     kind))

    for (query_id, doc_id), (grade, status) in sorted(v2.items()):
        for rater in HUMAN_RATERS:
            if rng.random() < 0.08:
                continue  # this rater did not get to the document
            given = None if status == "unknown" else grade
            if rater == "h2" and given is not None and rng.random() < 0.2:
                given = int(np.clip(given + rng.choice([-1, 1]), 0, 3))
            rate(query_id, doc_id, rater, "human", given)
    for query in queries:
        docs = sorted(set(query.candidates) | {d for q, d in v2 if q == query.query_id})
        for doc_id in docs:
            careful = query.relevance.get(doc_id)
            if careful is None:
                careful = v2[(query.query_id, doc_id)][0] or 0
            if rng.random() < 0.25:
                careful = int(np.clip(careful + rng.choice([-1, 1]), 0, 3))
            rate(query.query_id, doc_id, LLM_RATER, "llm", int(careful))
    frame = pl.DataFrame(rows, schema={"query_id": pl.String, "doc_id": pl.String,
                                       "grade": pl.Int64, "grade_status": pl.String,
                                       "rater": pl.String, "rater_kind": pl.String},
                         orient="row")
    return frame.with_columns(judgment_version=pl.lit(RATED_VERSION)).sort(
        "query_id", "doc_id", "rater")


def queries_frame(queries: list[Query]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "query_id": [q.query_id for q in queries],
            "query_text": [q.query_text for q in queries],
            "weight": [q.weight for q in queries],
            "equipment_class": [q.equipment_class for q in queries],
            "doc_age_band": [q.doc_age_band for q in queries],
            "permission_group": [q.permission_group for q in queries],
        },
        schema_overrides={"weight": pl.Int64},
    )


def summarize(
    queries: list[Query],
    judgments: dict[str, pl.DataFrame],
    pools: dict[str, dict[str, pl.DataFrame]],
) -> str:
    """A few counts to eyeball after a run."""
    lines = [f"queries.csv: {len(queries)} queries"]
    for version, frame in judgments.items():
        max_grade = frame.group_by("query_id").agg(pl.col("grade").max())
        lines.append(
            f"{version}: {frame.height} rows over {max_grade.height} queries, "
            f"{frame.filter(pl.col('grade_status') == 'unknown').height} unknown rows, "
            f"{max_grade.filter(pl.col('grade') == 0).height} queries without a positive grade"
        )
    v1, v2 = judgments[JUDGMENT_VERSION_1], judgments[JUDGMENT_VERSION_2]
    both = v1.join(v2, on=["query_id", "doc_id"], suffix="_v2")
    regraded = both.filter(
        (pl.col("grade_status") != pl.col("grade_status_v2"))
        | (pl.col("grade") != pl.col("grade_v2"))
    )
    new_queries = v2["query_id"].unique().is_in(v1["query_id"].unique().implode()).not_().sum()
    lines.append(
        f"{JUDGMENT_VERSION_2} vs {JUDGMENT_VERSION_1}: {regraded.height} rows re-judged, "
        f"{v2.height - both.height} rows added, {new_queries} queries added"
    )
    ever_judged = pl.concat([v1, v2]).select("query_id", "doc_id").unique()
    for pool_name, runs in pools.items():
        run = runs[RANKERS[0]]
        sizes = run.group_by("query_id").len()
        ties = run.group_by("query_id", "score").len().filter(pl.col("len") > 1)
        never_judged = run.join(ever_judged, on=["query_id", "doc_id"], how="anti").height
        lines.append(
            f"{pool_name}: {sizes.height} queries, {run.height} candidates per ranker "
            f"({sizes['len'].min()}-{sizes['len'].max()} per query), "
            f"{ties['query_id'].n_unique()} queries with bm25 ties, "
            f"{never_judged} candidates judged by no version"
        )
        for version, frame in judgments.items():
            status = run.join(frame, on=["query_id", "doc_id"], how="left")
            not_returned = frame["query_id"].unique().is_in(run["query_id"].unique().implode())
            lines.append(
                f"  with {version}: "
                f"{status.filter(pl.col('grade_status').is_null()).height} unjudged candidates, "
                f"{status.filter(pl.col('grade_status') == 'unknown')['query_id'].n_unique()} "
                f"queries with an unknown candidate, "
                f"judged queries not returned: {not_returned.not_().sum()}"
            )
    return "\n".join(lines)


# --- a week of nightly pools (--nightly) -------------------------------------------------------
# The same queries, candidates and judgment versions, one pool per night. bm25-v3 is re-tuned
# every night (its scores move within noise); dense-v2's embedding deploy on the fifth night
# loses most of its relevance signal (a real regression that persists); hybrid-v1 barely moves.
# maint-v2, with its regrades, lands between the third and the fourth night.

NIGHTLY_SEED = 20261201
NIGHTLY_DIR = "nightly"
NIGHTLY_POOLS = tuple(f"pool-2026-12-{day:02d}" for day in range(1, 8))
REGRESSED_RANKER = "dense-v2"
REGRESSION_NIGHT = NIGHTLY_POOLS[4]
NOISY_RANKER = "bm25-v3"
# Per-night jitter of each ranker's noise (bm25, dense, hybrid), on top of a fixed per-document
# draw: the ranker's model is the same from night to night, its index and tuning are not.
NIGHTLY_JITTER = np.array([0.35, 0.05, 0.05])
BROKEN_DENSE_STRENGTH = 0.5
ARRIVALS_FILE = "arrivals.json"
ARRIVALS = (
    f"judgments/{JUDGMENT_VERSION_1}.csv",
    *(f"pools/{pool}" for pool in NIGHTLY_POOLS[:3]),
    f"judgments/{JUDGMENT_VERSION_2}.csv",
    *(f"pools/{pool}" for pool in NIGHTLY_POOLS[3:]),
)


def build_nightly_pools(
    corpus: dict[str, Document], queries: list[Query]
) -> dict[str, dict[str, pl.DataFrame]]:
    """One pool per night over the first pool's candidates (every query retrieved)."""
    rng = np.random.default_rng(NIGHTLY_SEED)
    fixed = {(q.query_id, d): rng.normal(size=3) for q in queries for d in q.candidates}
    broken_from = NIGHTLY_POOLS.index(REGRESSION_NIGHT)
    pools = {}
    for night, pool_name in enumerate(NIGHTLY_POOLS):
        strength = BROKEN_DENSE_STRENGTH if night >= broken_from else None
        records: dict[str, list[tuple[str, str, float]]] = {r: [] for r in RANKERS}
        for query in queries:
            for doc_id in query.candidates:
                noise = fixed[(query.query_id, doc_id)] + NIGHTLY_JITTER * rng.normal(size=3)
                scores = document_scores(query.relevance[doc_id], corpus[doc_id], noise, strength)
                for ranker, value in scores.items():
                    records[ranker].append((query.query_id, doc_id, value))
        pools[pool_name] = {r: run_frame(pool_name, r, records[r]) for r in RANKERS}
    return pools


def write_nightly(folder: Path, queries: list[Query], judgments: dict[str, pl.DataFrame],
                  pools: dict[str, dict[str, pl.DataFrame]]) -> None:
    """The week in ``folder``: inputs to land one at a time, in ARRIVALS order.

    No ``_READY`` marker is written here: landing a pool (:func:`land_next`) writes it, so the
    marker's time is the night's time.
    """
    (folder / "judgments").mkdir(parents=True, exist_ok=True)
    for version, frame in judgments.items():
        frame.write_csv(folder / "judgments" / f"{version}.csv")
    for pool_name, runs in pools.items():
        pool_dir = folder / "pools" / pool_name
        pool_dir.mkdir(parents=True, exist_ok=True)
        for ranker, run in runs.items():
            run.write_parquet(pool_dir / f"{ranker}.parquet")
    queries_frame(queries).write_csv(folder / "queries.csv")
    (folder / ARRIVALS_FILE).write_text(json.dumps(list(ARRIVALS), indent=2) + "\n",
                                        encoding="utf-8")


def land_next(nightly_dir: Path, landing_dir: Path) -> str | None:
    """Copy the next input of the week into a landing folder; returns it, or None when the
    whole week has landed. A pool's ``_READY`` marker is written after its run files."""
    for arrival in json.loads((nightly_dir / ARRIVALS_FILE).read_text(encoding="utf-8")):
        source, target = nightly_dir / arrival, landing_dir / arrival
        if source.is_file():
            if target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            return arrival
        if (target / READY_MARKER).exists():
            continue
        target.mkdir(parents=True, exist_ok=True)
        for run in sorted(source.iterdir()):
            shutil.copyfile(run, target / run.name)
        (target / READY_MARKER).write_bytes(b"")
        return arrival
    return None


def build_example() -> tuple[
    dict[str, Document], list[Query], dict[str, pl.DataFrame], dict[str, dict[str, pl.DataFrame]]
]:
    """Corpus, queries, the two judgment versions and the two pools (one fixed order of draws)."""
    rng = np.random.default_rng(SEED)
    corpus = build_corpus(rng)
    queries = build_queries(rng)
    new_work_orders = build_candidates(rng, corpus, queries)
    corpus.update({d.doc_id: d for d in new_work_orders})
    judgments_v1, judgments_v2 = build_judgments(rng, queries)
    signals = draw_ranker_signals(rng, corpus, queries)
    judgments = {JUDGMENT_VERSION_1: judgments_v1, JUDGMENT_VERSION_2: judgments_v2}
    pools = {pool_name: build_pool(pool_name, queries, signals) for pool_name in (POOL_1, POOL_2)}
    return corpus, queries, judgments, pools


def generate(out_dir: Path) -> str:
    _, queries, judgments, pools = build_example()
    write_outputs(out_dir, queries, judgments, pools)
    return summarize(queries, judgments, pools)


def generate_nightly(out_dir: Path) -> str:
    corpus, queries, judgments, _ = build_example()
    pools = build_nightly_pools(corpus, queries)
    folder = out_dir / NIGHTLY_DIR
    write_nightly(folder, queries, judgments, pools)
    return (f"{folder}: {len(NIGHTLY_POOLS)} nightly pools ({NIGHTLY_POOLS[0]} to "
            f"{NIGHTLY_POOLS[-1]}), {len(judgments)} judgment versions; land them in order with "
            f"--land-next LANDING_DIR\n" + summarize(queries, judgments, pools))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=Path(__file__).resolve().parent / "data",
        help="where to write the example data (default: examples/data next to this script)",
    )
    parser.add_argument(
        "--nightly",
        action="store_true",
        help=f"write a week of nightly pools under OUT_DIR/{NIGHTLY_DIR}/ instead of the two "
        "pools of the default example",
    )
    parser.add_argument(
        "--land-next",
        type=Path,
        metavar="LANDING_DIR",
        help=f"land the next input of OUT_DIR/{NIGHTLY_DIR}/ (in {ARRIVALS_FILE} order) into "
        "LANDING_DIR and print what landed",
    )
    args = parser.parse_args(argv)
    if args.land_next is not None:
        landed = land_next(args.out_dir / NIGHTLY_DIR, args.land_next)
        print(f"landed {landed}" if landed else "the whole week has landed")
    elif args.nightly:
        print(generate_nightly(args.out_dir))
    else:
        print(generate(args.out_dir))


if __name__ == "__main__":
    main()
