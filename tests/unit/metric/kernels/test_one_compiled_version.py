"""Each kernel is compiled once, whatever mix of polars' read-only arrays and numpy's writable
ones its caller has: numba compiles one version per mix of argument types, and a read-only
array is another type (score_blocks had eleven versions, some 3 s each on a new machine)."""

from __future__ import annotations

import numpy as np
import polars as pl

from evaluation_pipeline.analysis.worklist import worklist
from evaluation_pipeline.evaluation import evaluate
from evaluation_pipeline.metric.kernels.loading import read_only
from evaluation_pipeline.spec import EvaluationSpec
from tests.support.frames import one_query


def test_read_only_views_without_a_copy_and_keeps_named_tuples():
    from evaluation_pipeline.metric.kernels.dcg import Rules

    writable = np.arange(4)
    rules = Rules(writable, np.ones(2), 0, True, False, True, np.zeros(1), 1, np.empty(0))
    frozen = read_only((rules, (writable, 3)))
    assert isinstance(frozen[0], Rules) and frozen[0].ties == 0 and frozen[1][1] == 3
    for array in (frozen[0].cutoffs, frozen[0].prefix, frozen[1][0]):
        assert not array.flags.writeable and array.flags.c_contiguous
    assert np.shares_memory(frozen[0].cutoffs, writable) and writable.flags.writeable
    strided = read_only(np.arange(6)[::2])  # made contiguous (a copy only then)
    assert strided.flags.c_contiguous and strided.tolist() == [0, 2, 4]


def _evaluations():
    """Calls whose arrays come from different places: one ranker and two (the pool's
    unjudged documents, a polars join, or an empty numpy array), holes kept or dropped,
    unknown grades, ties by document."""
    a, judged = one_query([3, "u", None, 1, 0], [5.0, 4.0, 4.0, 2.0, 1.0])
    b, _ = one_query([2, 0, None, None, 1], [1.0, 2.0, 3.0, 3.0, 5.0], ranker="s")
    for spec in (EvaluationSpec(cutoffs=(3, 5)),
                 EvaluationSpec(cutoffs=(2,), unjudged="exclude", unknown="exclude"),
                 EvaluationSpec(cutoffs=(10,), ties="trec_eval", gain="linear"),
                 EvaluationSpec(cutoffs=(3,), discount="1/rank"),
                 EvaluationSpec(cutoffs=(3, 4), discount=10)):
        for pool in (a, pl.concat([a, b])):
            yield judged, pool, spec


def test_scoring_and_the_worklist_use_one_compiled_version_of_each_kernel():
    from evaluation_pipeline.metric.kernels.dcg import ideal_dcg, score_blocks
    from evaluation_pipeline.metric.kernels.lines import judgment_lines, pool_lines
    from evaluation_pipeline.metric.kernels.what_if import what_if_blocks

    for judged, pool, spec in _evaluations():
        evaluate(judged, pool, spec)
        worklist(judged, pool, spec)
    for kernel in (score_blocks, ideal_dcg, pool_lines, judgment_lines, what_if_blocks):
        assert len(kernel.signatures) == 1, (kernel.__name__, kernel.signatures)



def test_the_grouped_digest_uses_one_compiled_version_of_each_kernel(tmp_path):
    """A grouped run's content hash, both ways: every block spilled to the scratch file, and
    ranges hashed from memory as they close (some held, some spilled), for a pool and a
    version; pieces from polars and from a concatenation."""
    from evaluation_pipeline.engines.streaming import grouped_digest, open_ranges
    from evaluation_pipeline.engines.streaming.grouped_digest import GroupedDigest
    from evaluation_pipeline.metric import hashing

    run, judged = one_query([3, "u", None, 1, 0], [5.0, 4.0, -0.0, 2.0, 1.0])
    other, more = one_query([2, 0, None, None, 1], [1.0, 2.0, 3.0, 3.0, 5.0], query_id="q2",
                            ranker="s")
    run, judged = pl.concat([run, other]), pl.concat([judged, more])
    groups = run.group_by("ranker", "query_id", maintain_order=True).len("rows")
    for number, (kind, frame, keyed) in enumerate(
            (("pool", run, groups), ("pool", run, None), ("judgments", judged, None))):
        blocks = ["ranker", "query_id"] if kind == "pool" else ["query_id"]
        for held in ((0, 60, 10**9) if keyed is not None else (0,)):
            scratch = tmp_path / f"{number}-{held}"
            scratch.mkdir()
            digest = GroupedDigest(kind, scratch, keyed, held)
            for part in frame.partition_by(blocks, maintain_order=True):
                digest.update(part)
            assert digest.hexdigest() == hashing.sha256_of(kind, frame)
    for kernel in (open_ranges.gather, grouped_digest._pack, grouped_digest._pool_lines_packed,
                   grouped_digest._judgment_ends):
        assert len(kernel.signatures) == 1, (kernel.__name__, kernel.signatures)
