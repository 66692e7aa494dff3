"""The pool's unjudged documents per query (``metric.pool_holes``), for the streaming engine.

The engine's batches hold one ranker's queries at a time, so under ``ideal: all_judged`` the
documents other rankers return for a query, which are holes of this ranker too once the
version lacks them, are not in the batch. One pass before the stream finds them over the whole
pool: each run file's (query_id, doc_id) without a row in the version, made distinct and
counted per query, on polars' streaming engine. It holds the version's (query_id, doc_id) and
the distinct unjudged pairs, not the run; a pool of one ranker, or the ``candidates`` ideal,
skips it. The inputs are checked by the stream itself: a file this pass cannot read as a run
(a key column missing) leaves the count to nobody, and the stream then refuses that file.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow.dataset as ds
from upath import UPath

from evaluation_pipeline.io.locations import is_remote
from evaluation_pipeline.metric import pool_holes
from evaluation_pipeline.metric.raters import counted_ratings
from evaluation_pipeline.spec import EvaluationSpec

_KEYS = ["query_id", "doc_id"]


def pool_unjudged(runs: list[Path | UPath], judgments: Path | UPath, fill_ranker,
                  spec: EvaluationSpec, rated: bool) -> pl.DataFrame | None:
    """Per query_id, the distinct documents the pool's rankers return that the version (under
    the spec's raters rule, when it has raters) has no row for; None when not needed
    (``metric.pool_holes.needed``) or when a file lacks a key column. ``fill_ranker``: the
    ranker of a file without a ranker column, a name or a function of its path."""
    if spec.ideal != "all_judged":
        return None
    scans = [_scan(path) for path in runs]
    rankers: set = set()
    for path, scan in zip(runs, scans):
        present = scan.collect_schema().names()
        if not set(_KEYS) <= set(present):
            return None
        if "ranker" in present:
            rankers |= set(scan.select(pl.col("ranker").unique()).collect(engine="streaming")
                           .to_series().to_list())
        else:
            rankers.add(fill_ranker(path) if callable(fill_ranker) else fill_ranker)
    if not pool_holes.needed(spec, len(rankers)):
        return None
    version = _scan(judgments)
    if not set(_KEYS) <= set(version.collect_schema().names()):
        return None
    if rated:
        version = version.filter(counted_ratings(spec))
    keys = [pl.col(c).cast(pl.String) for c in _KEYS]
    pool = pl.concat([scan.select(keys) for scan in scans])
    return pool_holes.pool_unjudged(pool, version.select(keys)).collect(engine="streaming")


def _scan(path: Path | UPath) -> pl.LazyFrame:
    """A lazy scan of a Parquet file, on object storage through pyarrow's dataset."""
    if is_remote(path):
        return pl.scan_pyarrow_dataset(ds.dataset(path.path, filesystem=path.fs,
                                                  format="parquet"))
    return pl.scan_parquet(path, glob=False)

