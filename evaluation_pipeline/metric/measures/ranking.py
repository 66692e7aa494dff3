"""A scoring's (ranker, query) blocks as the measures' kernel takes them: each block's
candidates in the spec's tie order with their class and grade (:class:`.kernels.Ranked`), and
its query's graded grades (:class:`.kernels.Judged`).

The grading and the ranking are the NDCG kernel's own steps (``metric.kernels.dcg._grade`` and
``_rank``: the merge of the block's doc_ids with its query's judged ones, then the order by score
with ties broken as the spec says), so every measure of a query reads the very list its nDCG
reads. Grades ride in the steps' gain slot as float64, exact for any grade a gain can be
computed for (``spec.MAX_EXPONENTIAL_GRADE``).

The scoring every engine calls does not grade and rank twice: ``metric.ndcg.score_candidates``
scores the measures inside the NDCG kernel's pass (``kernels.score_blocks_and_measures``), from
the lists it has just ranked. This module makes those lists for ``plan.score_ranked`` on its
own: the tests that hold the one pass to it, and the benchmark of each measure's time.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from evaluation_pipeline.metric.kernels.codes import GRADED, TIES_RANK, UNJUDGED, UNKNOWN
from evaluation_pipeline.metric.kernels.dcg import Slots, _grade, _rank, _widest


@njit(cache=True, nogil=True)
def ranked_blocks(candidates, judgments, rules):
    """(Ranked's starts, score, grade_class, grade; Judged's starts, grade, has_rows,
    n_unknown, outside_holes) of every block. ``candidates``, ``judgments`` and ``rules`` are
    ``score_blocks``'s, but ``judgments.gain`` holds each judgment row's grade (0 for an
    unknown row), as float64."""
    starts = candidates.starts
    n_blocks, n_rows = len(starts) - 1, starts[-1]
    score = np.empty(n_rows)
    grade_class = np.empty(n_rows, np.int8)
    row_grade = np.empty(n_rows, np.int64)
    longest = _widest(starts)
    slots = Slots(np.empty(longest), np.empty(longest, np.int8), np.empty(longest),
                  np.empty(longest if rules.ties == TIES_RANK else 0, np.int64))
    rank = np.empty(longest, np.int64)
    counts = np.zeros((n_blocks, 3), np.int64)
    positives = np.zeros(n_blocks, np.int64)
    grade = judgments.gain
    j_order, j_class = judgments.order, judgments.grade_class
    j_starts = np.zeros(n_blocks + 1, np.int64)
    n_unknown = np.zeros(n_blocks, np.int64)
    for b in range(n_blocks):
        n_graded = 0
        for jp in range(judgments.lo[b], judgments.hi[b]):
            if j_class[j_order[jp]] == GRADED:
                n_graded += 1
            else:
                n_unknown[b] += 1
        j_starts[b + 1] = j_starts[b] + n_graded
    j_grade = np.empty(j_starts[-1], np.int64)
    has_rows = np.zeros(n_blocks, np.bool_)
    outside = np.zeros(n_blocks, np.int64)
    pool_unjudged = judgments.pool_unjudged
    for b in range(n_blocks):
        lo, m = starts[b], starts[b + 1] - starts[b]
        has_rows[b] = judgments.hi[b] > judgments.lo[b]
        out = j_starts[b]
        for jp in range(judgments.lo[b], judgments.hi[b]):
            jr = j_order[jp]
            if j_class[jr] == GRADED:
                j_grade[out] = np.int64(grade[jr])
                out += 1
        _grade(candidates, judgments, b, rules, slots, counts, positives)
        _rank(candidates, b, rules, slots, rank)
        for t in range(m):
            s = rank[t]
            score[lo + t] = -slots.score[s]
            grade_class[lo + t] = slots.grade_class[s]
            row_grade[lo + t] = np.int64(slots.gain[s]) if slots.grade_class[s] == GRADED else 0
        # Holes outside the list (the ideal over every judged document: contract rule 7): the
        # query's unknown rows the block lacks, and the documents other rankers of the pool
        # return that the version lacks and the block does not hold (``bounds.fixed_top``).
        outside[b] = n_unknown[b] - counts[b, UNKNOWN]
        if len(pool_unjudged):
            outside[b] += pool_unjudged[b] - counts[b, UNJUDGED]
    return (starts, score, grade_class, row_grade, j_starts, j_grade, has_rows, n_unknown,
            outside)
