"""Content SHA-256 of judgment versions and candidate pools (contract section 1).

The canonical content is one line per row, fields separated by a tab, rows sorted by their key
(byte-wise): judgments ``query_id, doc_id, grade ('' when unknown), grade_status``; pools
``ranker, query_id, doc_id, score`` with the score written as the decimal integer of its IEEE-754
bit pattern (exact, and independent of any float formatting). Optional columns do not count.
"""

from __future__ import annotations

import hashlib

import numpy as np
import polars as pl

_CHUNK_ROWS = 1_000_000


def judgments_sha256(judgments: pl.DataFrame) -> str:
    frame = judgments.select(
        pl.col("query_id").cast(pl.String),
        pl.col("doc_id").cast(pl.String),
        pl.col("grade").cast(pl.String).fill_null(""),
        pl.col("grade_status").cast(pl.String),
    ).sort(["query_id", "doc_id"])
    return _sha256_lines(frame)


def pool_sha256(pool: pl.DataFrame) -> str:
    # -0.0 + 0.0 is +0.0: equal scores hash equally.
    bits = (pool["score"].cast(pl.Float64).to_numpy() + 0.0).view(np.int64)
    frame = pl.DataFrame(
        {
            "ranker": pool["ranker"].cast(pl.String),
            "query_id": pool["query_id"].cast(pl.String),
            "doc_id": pool["doc_id"].cast(pl.String),
            "score_bits": pl.Series(bits).cast(pl.String),
        }
    ).sort(["ranker", "query_id", "doc_id"])
    return _sha256_lines(frame)


def _sha256_lines(frame: pl.DataFrame) -> str:
    digest = hashlib.sha256()
    for start in range(0, frame.height, _CHUNK_ROWS):
        chunk = frame.slice(start, _CHUNK_ROWS)
        text = chunk.select(pl.concat_str(pl.all(), separator="\t")).to_series().str.join("\n")
        digest.update(text.item().encode())
        digest.update(b"\n")
    return digest.hexdigest()
