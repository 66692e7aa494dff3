"""The worklist's what-if widths (docs/CONTRACT.md, section 3, rule 8), compiled: per (ranker,
query) block, the width of the bounds over the holes (rule 7) now and with one hole graded,
from the scorer's own grading, ranking and bounds steps (``dcg``, ``bounds``), so that each
what-if is the number scoring a copy of the query with that hole graded would give, to the
last bit; and per hole, the narrowing its grades bring to its query's summed width.
``analysis.worklist`` builds the arguments and reads the results; it imports this module only
when a worklist is made, so that no other command loads numba for it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from evaluation_pipeline.metric.kernels.bounds import (
    block_bounds,
    bound_scratch,
    fixed_top,
    insert_descending,
)
from evaluation_pipeline.metric.kernels.codes import (
    GRADED,
    PAST_K,
    TIES_AVERAGE,
    TIES_DOC_DESC,
    TIES_RANK,
)
from evaluation_pipeline.metric.kernels.dcg import Slots, _grade, _rank, _widest


@njit(cache=True, nogil=True)
def what_if_blocks(candidates, judgments, rules, first, last, base, past_k):
    """One pass over the (ranker, query) blocks ``first`` to ``last`` (excluded), each graded
    and ranked as the scorer does, and per block of a judged query with holes, the width
    (``ndcg_max - ndcg_min`` at K, 0 when null) now and with one hole graded, for each gain a
    hole may take (``rules.hole_gains``):

    - ``base[b]``: the width now (this and the next: written into the caller's arrays);
    - ``past_k[b, v]``: one hole without a weight graded (any of them: they only leave the holes
      that raise the ideal and add their gain to the graded ideal), among them under
      ``all_judged`` the holes outside the block's candidates;
    - per hole candidate, in ``row`` (of the run's frame), ``place`` (its place, a tie group's
      first under ``average``), ``grade_class`` and ``ref``: the row of ``own`` holding its own
      what-if widths when it has a weight at K, else ``PAST_K``.
    """
    starts = candidates.starts
    n_blocks = len(starts) - 1
    k = rules.cutoffs[0]
    values = rules.hole_gains
    n_values = len(values)
    longest = _widest(starts)
    slots = Slots(np.empty(longest), np.empty(longest, np.int8), np.empty(longest),
                  np.empty(longest if rules.ties == TIES_RANK else 0, np.int64))
    rank = np.empty(longest, np.int64)
    slot_row = np.empty(longest, np.int64)
    counts = np.zeros((n_blocks, 3), np.int64)  # what the scorer's grading step also fills
    positives = np.zeros(n_blocks, np.int64)
    graded_top = np.empty(k)
    top = np.empty(k)
    scratch = bound_scratch(longest, rules.denominator[:k].copy() if len(rules.denominator)
                            else np.log2(np.arange(k) + 2.0))
    # Sized for every row of the range a hole: pages never written are never made resident,
    # so this costs what is written, and nothing is copied as the holes are found.
    capacity = starts[last] - starts[first]
    row, place = np.empty(capacity, np.int64), np.empty(capacity, np.int64)
    ref, grade_class = np.empty(capacity, np.int64), np.empty(capacity, np.int8)
    own = np.empty(capacity * n_values)
    n_found, n_own = 0, 0
    reverse = rules.ties == TIES_DOC_DESC  # the grading step fills the slots backwards
    for b in range(first, last):
        if judgments.lo[b] == judgments.hi[b]:
            continue  # not judged: no bounds to narrow
        lo, m = starts[b], starts[b + 1] - starts[b]
        _grade(candidates, judgments, b, rules, slots, counts, positives)
        _rank(candidates, b, rules, slots, rank)
        n_top, n_outside, n_holes = fixed_top(slots, m, judgments, b, rules, k, graded_top)
        if n_holes + n_outside == 0:
            continue  # without a hole the bounds are the number: width 0, with any grade
        base[b] = _width(n_holes + n_outside, slots, rank, m, rules, k, graded_top, n_top,
                         n_outside, scratch)
        left = n_holes + n_outside - 1  # the holes once one is graded
        for t in range(m):
            slot_row[m - 1 - t if reverse else t] = candidates.order[lo + t]
        n_past_k = n_outside
        p = 0
        while p < m:  # tie groups, as the bounds step weighs them
            q = p + 1
            if rules.ties == TIES_AVERAGE:
                while q < m and slots.score[rank[q]] == slots.score[rank[p]]:
                    q += 1
            for i in range(p, q):
                s = rank[i]
                cls = slots.grade_class[s]
                if cls == GRADED:
                    continue
                row[n_found], place[n_found], grade_class[n_found] = slot_row[s], p + 1, cls
                if p + 1 > k:  # no weight at K
                    ref[n_found] = PAST_K
                    n_past_k += 1
                else:
                    ref[n_found] = n_own
                    gain = slots.gain[s]
                    slots.grade_class[s] = GRADED
                    for v in range(n_values):
                        slots.gain[s] = values[v]
                        n = _with_gain(graded_top, n_top, k, values[v], top)
                        own[n_own * n_values + v] = _width(left, slots, rank, m, rules, k, top,
                                                           n, n_outside, scratch)
                    slots.grade_class[s], slots.gain[s] = cls, gain
                    n_own += 1
                n_found += 1
            p = q
        for v in range(n_values):
            n = _with_gain(graded_top, n_top, k, values[v], top)
            if n_past_k:
                # One less hole without a weight: the bounds step counts them from n_outside
                # up, so n_outside - 1 stands for any of them.
                past_k[b, v] = _width(left, slots, rank, m, rules, k, top, n, n_outside - 1,
                                      scratch)
    return (row[:n_found], place[:n_found], ref[:n_found], grade_class[:n_found],
            own[:n_own * n_values])


@njit(cache=True, nogil=True)
def _with_gain(graded_top, n_top, k, gain, top):
    """The graded ideal's top ``k`` gains with ``gain`` added, into ``top``."""
    top[:n_top] = graded_top[:n_top]
    return insert_descending(top, n_top, k, gain)


@njit(cache=True, nogil=True)
def _width(n_holes, slots, rank, m, rules, k, top, n_top, n_outside, scratch):
    """``ndcg_max - ndcg_min`` at K as the scorer writes it, 0 where null: the bounds are the
    number itself without a hole (width 0), and null when no grading gives a number."""
    if n_holes == 0:
        return 0.0
    least, greatest = block_bounds(slots, rank, m, rules, k, top, n_top, n_outside, scratch)
    width = greatest - least
    return 0.0 if np.isnan(width) else width


@njit(cache=True, nogil=True)
def narrow_holes(q, codes, block_of, width_sum, weight, base, past_k, own, value, shares,
                 all_judged):
    """Per hole h (query ``q[h]``) and grade g: W(q | h = g) adds, ranker by ranker in name
    order as W(q) does, the width of the ranker's block with h graded g, of the hole's kind
    there (``codes[h, r]``); a ranker without the query adds 0. Under ``all_judged`` a hole
    the ranker did not return is one of the block's holes outside its candidates (its
    ``unknown`` rows, the pool's unjudged documents), graded as one past K. The narrowing is
    w(q) (W(q) - W(q | h = g)), 0 for a query without a weight or a width. Returns the
    narrowing expected over ``shares`` and the least over the grades, per hole."""
    n, n_rankers = codes.shape
    expected = np.zeros(n)
    guaranteed = np.zeros(n)
    for h in range(n):
        qh = q[h]
        live = width_sum[qh] > 0 and weight[qh] > 0
        if not live:
            continue
        least = np.inf
        total = 0.0
        for g in range(len(value)):
            v = value[g]
            what_if = 0.0
            for r in range(n_rankers):
                b = block_of[qh, r]
                if b < 0:
                    continue  # the ranker did not return the query: its width stays 0
                code = codes[h, r]
                if code >= 0:
                    width = own[code, v]
                elif code == PAST_K or all_judged:
                    width = past_k[b, v]
                else:
                    width = base[b]
                what_if += width
            narrowing = weight[qh] * (width_sum[qh] - what_if)
            total += narrowing * shares[g]
            least = min(least, narrowing)
        expected[h] = total
        guaranteed[h] = least
    return expected, guaranteed
