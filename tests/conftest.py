"""Shared test helpers: small frames in the contract's shape and the conformance data path."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
import pytest

from tests.postgres_server import postgres_server  # noqa: F401  (a fixture for every test file)
from tests.s3_server import endpoint  # noqa: F401  (a fixture for every test file)
from tests.spark_session import spark  # noqa: F401  (a fixture for every test file)
from evaluation_pipeline import settings

# The tests run from the checkout: unnamed landing, queries and storage mean its example data
# (as under `make run`), here and in the subprocesses the tests start.
os.environ.setdefault(settings.DEV.name, "1")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
CONFORMANCE = SHARED / "conformance" / "trec_eval"
EXAMPLES = REPO / "examples" / "data"


def one_query(grades, scores=None, query_id="q", ranker="r", version="v1", pool="p"):
    """(candidates, judgments) for one ranked list; grade "u" is unknown, None is unjudged."""
    n = len(grades)
    scores = scores if scores is not None else [float(n - i) for i in range(n)]
    docs = [f"d{i:03d}" for i in range(n)]
    candidates = pl.DataFrame(
        {
            "candidate_pool": [pool] * n,
            "ranker": [ranker] * n,
            "query_id": [query_id] * n,
            "doc_id": docs,
            "score": [float(s) for s in scores],
        }
    )
    judged = [(d, g) for d, g in zip(docs, grades) if g is not None]
    judgments = pl.DataFrame(
        {
            "query_id": [query_id] * len(judged),
            "doc_id": [d for d, _ in judged],
            "grade": [None if g == "u" else g for _, g in judged],
            "grade_status": ["unknown" if g == "u" else "graded" for _, g in judged],
            "judgment_version": [version] * len(judged),
        },
        schema_overrides={"grade": pl.Int64},
    )
    return candidates, judgments


@pytest.fixture
def conformance_dir() -> Path:
    if not CONFORMANCE.is_dir():
        pytest.skip(f"trec_eval conformance data not found at {CONFORMANCE} (../shared is absent)")
    return CONFORMANCE
