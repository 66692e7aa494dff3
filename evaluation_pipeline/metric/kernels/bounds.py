"""Compiled steps of the bounds over the holes (docs/CONTRACT.md, section 3, rule 7): per block,
the least and the greatest NDCG@K over every grading of its unknown and unjudged documents.

With the holes graded nothing is dropped, so every candidate keeps its place and DCG@K is a sum
of weight x gain over the ranked list (a tie group shares its discounts evenly under
``average``). For one multiset of hole gains the ideal is fixed, and the DCG's extremes put the
largest gains on the largest weights (the most) or on the smallest (the least). A hole without
weight in the top K only moves the ideal: the least gain for the greatest NDCG, the largest gain
for the least. So only the weighted holes are enumerated, as non-increasing sequences of gain
indices (count vectors). The steps are inlined into ``dcg.score_blocks``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from evaluation_pipeline.metric.kernels.codes import (
    GRADED,
    NO_POSITIVE_EXCLUDE,
    NO_POSITIVE_ONE,
    TIES_AVERAGE,
    UNKNOWN,
)

# Beyond this many gradings of a query's weighted holes (reached only when a tie group of many
# holes spans the cutoff under ties=average) the bounds are the valid range [0, 1].
MAX_GRADINGS = 1_000_000


@njit(cache=True, nogil=True, inline="always")
def fixed_top(slots, m, judgments, b, rules, reach, top):
    """The graded gains of the block's ideal set, high to low, into ``top`` (at most ``reach``),
    and the number of holes outside the candidates (``ideal: all_judged`` only): the query's
    ``unknown`` rows the block does not hold, and the documents other rankers of the pool
    return that the version lacks and the block does not hold; they can only raise the ideal.
    Returns (n_top, n_outside, n_candidate_holes)."""
    slot_class, slot_gain = slots.grade_class, slots.gain
    n_holes, n_unknown_candidates, n_outside, n_top = 0, 0, 0, 0
    for i in range(m):
        n_holes += slot_class[i] != GRADED
        n_unknown_candidates += slot_class[i] == UNKNOWN
    j_order, j_class, j_gain = judgments.order, judgments.grade_class, judgments.gain
    lo, hi = judgments.lo[b], judgments.hi[b]
    if not rules.ideal_from_candidates:
        n_unknown = 0
        for jp in range(lo, hi):
            n_unknown += j_class[j_order[jp]] != GRADED
        n_outside = n_unknown - n_unknown_candidates
        if len(judgments.pool_unjudged):
            # Another ranker's candidates the version lacks: graded, they join this ideal too.
            n_outside += judgments.pool_unjudged[b] - (n_holes - n_unknown_candidates)
    if n_holes + n_outside == 0:  # no bounds to compute: the graded top is not needed
        return 0, 0, 0
    if rules.ideal_from_candidates:
        for i in range(m):
            if slot_class[i] == GRADED:
                n_top = insert_descending(top, n_top, reach, slot_gain[i])
    else:
        for jp in range(lo, hi):
            jr = j_order[jp]
            if j_class[jr] == GRADED:
                n_top = insert_descending(top, n_top, reach, j_gain[jr])
    return n_top, n_outside, n_holes


@njit(cache=True, nogil=True, inline="always")
def insert_descending(top, n_top, reach, g):
    """``g`` into the high-to-low list ``top[:n_top]`` kept to ``reach`` values."""
    if n_top == reach:
        if g <= top[n_top - 1]:
            return n_top
        n_top -= 1
    i = n_top
    while i > 0 and top[i - 1] < g:
        top[i] = top[i - 1]
        i -= 1
    top[i] = g
    return n_top + 1


@njit(cache=True, nogil=True, inline="always")
def bound_scratch(widest, denominator):
    """The scratch of ``block_bounds`` for blocks of at most ``widest`` candidates;
    ``denominator[p]`` divides place p + 1's gain (log2(p + 2) by default) for p below the
    largest cutoff, taken once by the caller: the enumeration's ideals would take one per place
    and grading. Besides the weights and the gain indices it holds, per weighted hole, the
    running sums of both DCGs and the state of both ideals' merges after that hole
    (``_merge_from``)."""
    return (np.empty(widest), np.empty(widest), np.empty(widest, np.int64), denominator,
            np.empty(widest + 1), np.empty(widest + 1),
            np.empty((2, widest, 3), np.int64), np.empty((2, widest)))


@njit(cache=True, nogil=True, inline="always")
def block_bounds(slots, rank, m, rules, k, top, n_top, n_outside, scratch):
    """(least, greatest) NDCG@k of the block over every grading of its holes; NaN for both when
    no grading gives the query a number. ``scratch``: ``bound_scratch``'s.

    The gradings come in an order where one grading differs from the previous only from some
    hole on (the suffix of the gain indices). Each DCG is a running sum over the holes and each
    ideal a merge that takes the holes in order, so both resume from their state before the
    first changed hole: the same terms added in the same order as a sum from the start, hence
    the same bytes, at the cost of the changed suffix only."""
    weight, hole_weight, index, denominator, high_at, low_at, merge_at, ideal_at = scratch
    slot_score, slot_class, slot_gain = slots.score, slots.grade_class, slots.gain
    average = rules.ties == TIES_AVERAGE
    # Each place's weight at cutoff k, the fixed part of DCG and the weighted holes. Every
    # place of a tie group that starts before k weighs more than 0, and none after (``end``)
    # weighs anything: those are only counted, a graded one adding 0 to the fixed part.
    p = 0
    while p < m and p < k:
        q = p + 1
        if average:
            while q < m and slot_score[rank[q]] == slot_score[rank[p]]:
                q += 1
        if q == p + 1:
            w = 1.0 / denominator[p]
        else:
            w = (rules.prefix[min(q, k)] - rules.prefix[p]) / (q - p)
        for i in range(p, q):
            weight[i] = w
        p = q
    end = p
    fixed, n_weighted, n_unweighted = 0.0, 0, n_outside
    for i in range(end):
        s = rank[i]
        if slot_class[s] == GRADED:
            fixed += weight[i] * slot_gain[s]
        else:
            # In rank order, so from the largest weight down (a tie group's average is no
            # less than the next group's): the order the extremes pair gains with.
            hole_weight[n_weighted] = weight[i]
            n_weighted += 1
    for i in range(end, m):
        n_unweighted += slot_class[rank[i]] != GRADED
    values = rules.hole_gains
    top_value = len(values) - 1
    if _count_vectors(n_weighted, len(values)) > MAX_GRADINGS:
        return 0.0, 1.0  # a tie group of many holes across K: a valid range, not the exact one
    least, greatest = np.inf, -np.inf
    # For the least, the unweighted holes take the largest gain. When there are K of them and
    # no graded gain is larger, they alone fill the ideal's top K whatever the grading: the
    # same terms in the same order as the merge would add, so computed once.
    fixed_least = -1.0
    if n_unweighted >= k and (n_top == 0 or top[0] <= values[top_value]):
        fixed_least = _ideal(top, 0, values, index, 0, values[top_value], n_unweighted, k,
                             denominator)
    for i in range(n_weighted):
        index[i] = top_value
    high_at[0], low_at[0] = fixed, fixed
    changed = 0  # the first hole whose gain differs from the previous grading's
    # The greatest's ideal: unweighted holes at the least gain; the least's: at the largest.
    ideal_high, taken_high, ideal_low, taken_low = 0.0, 0, fixed_least, 0
    while True:
        for i in range(changed, n_weighted):
            g = values[index[i]]
            high_at[i + 1] = high_at[i] + hole_weight[i] * g
            low_at[i + 1] = low_at[i] + hole_weight[n_weighted - 1 - i] * g
        high, low = high_at[n_weighted], low_at[n_weighted]
        # A merge that stopped at K before the changed hole did not read it: unchanged.
        if changed == 0 or taken_high >= changed:
            ideal_high, taken_high = _merge_from(
                top, n_top, values, index, n_weighted, values[0], n_unweighted, k,
                denominator, changed, merge_at[0], ideal_at[0])
        if fixed_least < 0.0 and (changed == 0 or taken_low >= changed):
            ideal_low, taken_low = _merge_from(
                top, n_top, values, index, n_weighted, values[top_value], n_unweighted, k,
                denominator, changed, merge_at[1], ideal_at[1])
        ideal = ideal_high
        if ideal > 0.0:
            greatest = max(greatest, high / ideal)
        elif rules.no_positive == NO_POSITIVE_ONE:
            greatest = max(greatest, 1.0)
        elif rules.no_positive != NO_POSITIVE_EXCLUDE or (
                n_unweighted > 0 and values[top_value] > 0.0):
            greatest = max(greatest, 0.0)  # all gains 0, or one unweighted hole raised: 0
        ideal = ideal_low
        if ideal > 0.0:
            least = min(least, low / ideal)
        elif rules.no_positive == NO_POSITIVE_ONE:
            least = min(least, 1.0)
        elif rules.no_positive != NO_POSITIVE_EXCLUDE:
            least = min(least, 0.0)
        i = n_weighted - 1
        while i >= 0 and index[i] == 0:
            i -= 1
        if i < 0:
            break
        index[i] -= 1
        for t in range(i + 1, n_weighted):
            index[t] = index[i]
        changed = i
    if greatest == -np.inf:
        return np.nan, np.nan
    return least, greatest


@njit(cache=True, nogil=True, inline="always")
def _count_vectors(n, v):
    """How many multisets of n gains from v values: C(n + v - 1, v - 1), as a float."""
    total = 1.0
    for i in range(1, v):
        total = total * (n + i) / i
    return total


@njit(cache=True, nogil=True, inline="always")
def _ideal(top, n_top, values, index, n_weighted, rest, n_rest, k, denominator):
    """Ideal DCG@k of three high-to-low lists merged: the fixed gains, the weighted holes'
    gains (``values[index[:n_weighted]]``) and ``n_rest`` copies of ``rest``;
    ``denominator[p]`` divides place p + 1's gain."""
    f, h, total = 0, 0, 0.0
    for p in range(k):
        best, source = -1.0, -1
        if f < n_top:
            best, source = top[f], 0
        if h < n_weighted and values[index[h]] > best:
            best, source = values[index[h]], 1
        if n_rest > 0 and rest > best:
            best, source = rest, 2
        if source < 0:
            break
        if source == 0:
            f += 1
        elif source == 1:
            h += 1
        else:
            n_rest -= 1
        total += best / denominator[p]
    return total


@njit(cache=True, nogil=True, inline="always")
def _merge_from(top, n_top, values, index, n_weighted, rest, n_rest, k, denominator, h, at,
                total_at):
    """``_ideal`` resumed just after weighted hole h - 1 from its state in ``at`` (place, fixed
    gains taken, copies of ``rest`` taken) and ``total_at``, from the start when h is 0. The
    state after each hole it takes is recorded there: the merge reads the holes in order, the
    next one only once the one before is taken, so its state on taking a hole does not depend
    on the gains after it. Returns (ideal DCG@k, holes taken)."""
    if h == 0:
        p, f, r, total = 0, 0, 0, 0.0
    else:
        p, f, r, total = at[h - 1, 0], at[h - 1, 1], at[h - 1, 2], total_at[h - 1]
    while p < k:
        best, source = -1.0, -1
        if f < n_top:
            best, source = top[f], 0
        if h < n_weighted and values[index[h]] > best:
            best, source = values[index[h]], 1
        if r < n_rest and rest > best:
            best, source = rest, 2
        if source < 0:
            break
        total += best / denominator[p]
        p += 1
        if source == 0:
            f += 1
        elif source == 1:
            at[h, 0], at[h, 1], at[h, 2], total_at[h] = p, f, r, total
            h += 1
        else:
            r += 1
    return total, h
