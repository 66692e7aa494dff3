"""Checks of a published pool or version without holding it: the candidate sets its
rankers rank, counted out of core, and its content hash read back against its manifest."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from evaluation_pipeline.ingest.external_sort import (
    spilling,
    sql_text,
)
from evaluation_pipeline.ingest.inputs import JUDGMENTS, POOL, batches, whole_blocks
from evaluation_pipeline.io.budget import Budget
from evaluation_pipeline.metric.hashing import HASH_VERSION, StreamingDigest
from schemas import screening, validate
from schemas.errors import InputError, violation


def count_candidate_set_disagreements(path: str | Path, budget: Budget | None = None) -> int:
    """Queries of a published pool whose rankers do not rank the same candidate set, counted
    out of core (``quality.candidate_set_disagreements(pool).height`` without the pool in
    memory). A (query, ranker) set is compared by its size and the XOR of its doc_ids' 64-bit
    hashes (keys are unique): two different sets agree only by a hash collision."""
    return candidate_set_disagreements(path, budget, examples=0)[0]


def candidate_set_disagreements(path: str | Path, budget: Budget | None = None,
                                examples: int = 10) -> tuple[int, list[str]]:
    """(how many, the first ``examples`` in query_id order) of the queries that
    ``count_candidate_set_disagreements`` counts, out of core."""
    return compare_sets(f"""(SELECT query_id, ranker, count(*) AS n, bit_xor(hash(doc_id)) AS h
                              FROM read_parquet({sql_text(path)}) GROUP BY query_id, ranker)""",
                         budget or Budget.of(), examples)


def compare_sets(sets: str, budget: Budget, examples: int) -> tuple[int, list[str]]:
    """(how many, the first ``examples`` in query_id order) of the queries where the rankers'
    candidate sets differ or some ranker has none, from ``sets``: a relation of one row per
    (query_id, ranker) with its set's signature (n, h)."""
    with spilling(budget, "comparing candidate sets") as connection:
        connection.execute(f"""
            CREATE TEMP TABLE differing AS
            WITH sets AS (SELECT * FROM {sets}),
                 per_query AS (SELECT query_id, count(*) AS n_rankers,
                                      count(DISTINCT (n, h)) AS n_sets
                               FROM sets GROUP BY query_id)
            SELECT query_id FROM per_query
            WHERE n_rankers < (SELECT count(DISTINCT ranker) FROM sets) OR n_sets > 1
        """)
        count = connection.execute("SELECT count(*) FROM differing").fetchone()[0]
        first = connection.execute("SELECT query_id FROM differing ORDER BY query_id LIMIT ?",
                                   [examples]).fetchall()
    return count, [row[0] for row in first]


@dataclass(frozen=True)
class Verified:
    sha256: str
    rows: int


def verify_published(path: str | Path, kind: str, hash_version: int = HASH_VERSION) -> Verified:
    """Check a published pool (``kind="pool"``) or judgment version (``"judgments"``) again, in
    bounded memory: the row rules of its model batch by batch, its key order and unique keys,
    and its content SHA-256 in ``hash_version`` (to compare with the manifest's).

    Raises ``InputError``. A batch the screen refuses sends the whole file to the model, whose
    message (file, column, rule, rows) is the in-memory check's: refusals leave the bounds."""
    path = Path(path)
    kind_ = POOL if kind == "pool" else JUDGMENTS
    block_key = list(kind_.key[:-1])
    digest = StreamingDigest(kind_.digest, hash_version)
    rows, last = 0, None
    for frame in whole_blocks(batches(path), block_key):
        if not screening.screen(kind_.model, frame, check_keys=False):
            validate(kind_.model, pl.read_parquet(path), str(path))
        first = frame.select(block_key).row(0)
        if last is not None and first <= last:
            raise InputError(str(path), [violation(", ".join(block_key), (
                f"not in key order ({', '.join(kind_.key)}): {first} after {last}"), [])])
        last = frame.select(block_key).row(-1)
        blocks = digest.update(frame)
        if blocks.duplicate >= 0:
            key = ", ".join(kind_.key)
            raise InputError(str(path), [violation(key, f"({key}) must be unique: duplicate "
                                                   f"rows, e.g. {blocks.duplicate_key()}", [])])
        rows += frame.height
    return Verified(digest.hexdigest(), rows)
