"""Compiled kernels of the score (docs/CONTRACT.md, section 3): per (ranker, query) block, the
merge with the query's judgments, the ranking by score, judged@K, DCG@K and the ideal DCG@K.

The arithmetic is the contract's term by term, in rank order, so sums are reproducible to the
last bit. :func:`score_blocks` is one loop over the blocks; each step of a block is a helper
inlined into it (``inline="always"``), so cutting the loop into steps costs no call.
"""

from __future__ import annotations

from typing import NamedTuple

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
    TIES_AVERAGE,
    TIES_DOC_DESC,
    TIES_RANK,
    UNJUDGED,
    UNKNOWN,
)
from evaluation_pipeline.metric.kernels.strings import (
    INSERTION_RUN,
    compare_keyed,
    string_key,
)


class CandidateBlocks(NamedTuple):
    """A run's candidates as (ranker, query) blocks: block b is rows ``starts[b]:starts[b+1]``,
    listed by doc_id in ``order`` (``string_kernels.key_order``)."""

    starts: np.ndarray  # int64
    order: np.ndarray  # int64 row numbers
    score: np.ndarray  # float64, per row
    docs: tuple  # doc_id as a string set (offsets, data)
    run_rank: np.ndarray  # int64, per row: the run's rank column (empty unless ties=rank)


class QueryJudgments(NamedTuple):
    """The judgments of each block's query: rows ``order[lo[b]:hi[b]]`` of the judgment arrays,
    in doc_id order (lo == hi when the query has none)."""

    lo: np.ndarray  # int64, per block
    hi: np.ndarray  # int64, per block
    order: np.ndarray  # int64 row numbers of the judgments, each query's by doc_id
    docs: tuple  # doc_id as a string set (offsets, data)
    grade_class: np.ndarray  # int8: GRADED or UNKNOWN, per judgment row
    gain: np.ndarray  # float64, per judgment row
    # int64, per block: the distinct documents of its query that some ranker of the pool
    # returns and the version has no row for (the block's own unjudged candidates among them);
    # empty when the pool is the block's ranker alone (``metric.pool_holes``)
    pool_unjudged: np.ndarray


class Rules(NamedTuple):
    """The spec's choices as the kernel reads them."""

    cutoffs: np.ndarray  # int64, the K of each column
    prefix: np.ndarray  # prefix[p] = sum of 1/log2(i + 1) for i = 1..p, p = 0..max(cutoffs)
    ties: int  # codes.TIES_*
    keep_unknown: bool  # unknown candidates stay in the ranking
    keep_unjudged: bool  # unjudged candidates stay in the ranking
    ideal_from_candidates: bool  # the ideal ranks the kept candidates (else the caller's)
    hole_gains: np.ndarray  # float64, ascending: the distinct gains a hole may take (rule 7)
    no_positive: int  # codes.NO_POSITIVE_*
    # float64: denominator[p] divides place p + 1's gain, p < max(cutoffs), and ``prefix`` is
    # the running sum of its reciprocals; empty under the default log2 discount, whose
    # denominators the kernel computes (``metric.discounts``)
    denominator: np.ndarray


class Slots(NamedTuple):
    """One block's candidates, one slot each in doc_id order (reversed under trec_eval ties, so
    that a stable order by score breaks ties by doc_id descending): what the ranking reads.
    Scratch of the longest block, reused block after block."""

    score: np.ndarray  # float64: the negated score (a stable ascending sort ranks high first)
    grade_class: np.ndarray  # int8: codes.GRADED, UNKNOWN or UNJUDGED
    gain: np.ndarray  # float64
    run_rank: np.ndarray  # int64: the run's rank (written only under ties=rank)


@njit(cache=True, nogil=True)
def score_blocks(candidates, judgments, rules):
    """Per block: DCG@K, the candidates' ideal DCG@K, judged@K (rows x cutoffs), counts of
    graded, unknown and unjudged candidates (blocks x 3), the number of positive-graded
    candidates, the least and greatest NDCG@K over the gradings of the holes (rows x cutoffs,
    NaN when the block has no hole or no grading gives a number) and the number of holes.

    ``candidates`` (:class:`CandidateBlocks`), ``judgments`` (:class:`QueryJudgments`) and
    ``rules`` (:class:`Rules`): grading a block is a linear merge of two doc_id orders.
    """
    # The steps of :func:`score_block`, written out: through that step (its outputs and scratch
    # in tuples) this loop took about 5% more CPU at 10M rows here (0.84 to 0.89 s on one
    # thread, against 0.79 to 0.83 s); the measures' pass calls the step.
    starts, cutoffs = candidates.starts, rules.cutoffs
    n_blocks, n_k = len(starts) - 1, len(cutoffs)
    reach = cutoffs.max()  # the largest K, handed to the steps: a max per block is a loop each
    dcg = np.zeros((n_blocks, n_k))
    ideal = np.zeros((n_blocks, n_k))
    judged = np.zeros((n_blocks, n_k))
    counts = np.zeros((n_blocks, 3), np.int64)
    positives = np.zeros(n_blocks, np.int64)
    longest = _widest(starts)
    slots = Slots(np.empty(longest), np.empty(longest, np.int8), np.empty(longest),
                  np.empty(longest if rules.ties == TIES_RANK else 0, np.int64))
    rank = np.empty(longest, np.int64)  # slot numbers in rank order
    kept_score = np.empty(longest)
    kept_gain = np.empty(longest)
    top, scratch, denominator = _ideal_buffers(reach, longest, rules.denominator)
    least = np.full((n_blocks, n_k), np.nan)
    greatest = np.full((n_blocks, n_k), np.nan)
    holes = np.zeros(n_blocks, np.int64)
    graded_top = np.empty(reach)
    bounds_scratch = bound_scratch(longest, denominator)
    for b in range(n_blocks):
        m = starts[b + 1] - starts[b]
        _grade(candidates, judgments, b, rules, slots, counts, positives)
        _rank(candidates, b, rules, slots, rank)
        _judged_at_k(slots, rank, m, rules, reach, judged[b])
        n_top, n_outside, n_holes = fixed_top(slots, m, judgments, b, rules, reach, graded_top)
        holes[b] = n_holes + n_outside
        if holes[b]:  # without holes the bounds are the number itself (the caller's)
            for j in range(n_k):
                least[b, j], greatest[b, j] = block_bounds(
                    slots, rank, m, rules, cutoffs[j], graded_top, n_top, n_outside,
                    bounds_scratch)
        n_kept = _exclude(slots, rank, m, rules, kept_score, kept_gain)
        _add_dcg(kept_score, kept_gain, n_kept, rules, reach, dcg[b])
        if rules.ideal_from_candidates and n_kept:
            n_top = _top_gains(kept_gain, 0, n_kept, reach, top, scratch)
            _add_ideal(top, n_top, cutoffs, denominator, ideal, b)
    return dcg, ideal, judged, counts, positives, least, greatest, holes


@njit(cache=True, nogil=True, inline="always")
def block_outputs(n_blocks, n_k):
    """:func:`score_blocks`' outputs, in its order, before the first block (for a loop that
    calls :func:`score_block`)."""
    return (np.zeros((n_blocks, n_k)), np.zeros((n_blocks, n_k)), np.zeros((n_blocks, n_k)),
            np.zeros((n_blocks, 3), np.int64), np.zeros(n_blocks, np.int64),
            np.full((n_blocks, n_k), np.nan), np.full((n_blocks, n_k), np.nan),
            np.zeros(n_blocks, np.int64))


@njit(cache=True, nogil=True, inline="always")
def block_work(starts, rules):
    """The scratch of :func:`score_block` for blocks ``starts`` delimits, reused block after
    block: the slots, the rank (slot numbers in rank order), the kept list, the ideal's
    buffers, the graded top and the bounds' scratch."""
    reach = rules.cutoffs.max()  # the largest K, handed to the steps (a max per block loops)
    longest = _widest(starts)
    slots = Slots(np.empty(longest), np.empty(longest, np.int8), np.empty(longest),
                  np.empty(longest if rules.ties == TIES_RANK else 0, np.int64))
    top, scratch, denominator = _ideal_buffers(reach, longest, rules.denominator)
    return (slots, np.empty(longest, np.int64), np.empty(longest), np.empty(longest), top,
            scratch, np.empty(reach), bound_scratch(longest, denominator), denominator, reach)


@njit(cache=True, nogil=True, inline="always")
def score_block(candidates, judgments, rules, b, out, work, judged_row=None):
    """Block b into row b of ``out`` (:func:`block_outputs`), as :func:`score_blocks` scores
    it; its slots and rank stay in ``work`` for the caller to read. ``judged_row``: when
    given, each slot's judgment row (-1: none), for a caller that reads more of the judgments
    than the gain."""
    dcg, ideal, judged, counts, positives, least, greatest, holes = out
    (slots, rank, kept_score, kept_gain, top, scratch, graded_top, bounds_scratch, denominator,
     reach) = work
    cutoffs = rules.cutoffs
    m = candidates.starts[b + 1] - candidates.starts[b]
    _grade(candidates, judgments, b, rules, slots, counts, positives, judged_row)
    _rank(candidates, b, rules, slots, rank)
    _judged_at_k(slots, rank, m, rules, reach, judged[b])
    n_top, n_outside, n_holes = fixed_top(slots, m, judgments, b, rules, reach, graded_top)
    holes[b] = n_holes + n_outside
    if holes[b]:  # without holes the bounds are the number itself (the caller's)
        for j in range(len(cutoffs)):
            least[b, j], greatest[b, j] = block_bounds(
                slots, rank, m, rules, cutoffs[j], graded_top, n_top, n_outside,
                bounds_scratch)
    n_kept = _exclude(slots, rank, m, rules, kept_score, kept_gain)
    _add_dcg(kept_score, kept_gain, n_kept, rules, reach, dcg[b])
    if rules.ideal_from_candidates and n_kept:
        n_top = _top_gains(kept_gain, 0, n_kept, reach, top, scratch)
        _add_ideal(top, n_top, cutoffs, denominator, ideal, b)
    return m


@njit(cache=True, nogil=True, inline="always")
def _grade(candidates, judgments, b, rules, slots, counts, positives, judged_row=None):
    """Block b's slots, its class counts and positives: its doc_ids (ascending) merged with its
    query's judged doc_ids. Each side's keys are made once, when the merge reaches the row.
    ``judged_row``: when given, each slot's judgment row goes there (-1: none)."""
    starts, order, score, docs, run_rank = candidates
    j_lo, j_hi, j_order, judged_docs, j_class, j_gain, _ = judgments
    slot_score, slot_class, slot_gain, slot_rank = slots
    by_rank = rules.ties == TIES_RANK
    d_off, d_data = docs
    j_off, j_data = judged_docs
    reverse = rules.ties == TIES_DOC_DESC
    lo, m = starts[b], starts[b + 1] - starts[b]
    jp, je = j_lo[b], j_hi[b]
    jr, judged_key = -1, (np.uint64(0), np.uint64(0), 0)
    for t in range(m):
        row = order[lo + t]
        cls, gain, found = UNJUDGED, 0.0, -1
        key = string_key(d_off, d_data, row)
        while jp < je:
            if jr != j_order[jp]:
                jr = j_order[jp]
                judged_key = string_key(j_off, j_data, jr)
            c = compare_keyed(judged_key, judged_docs, jr, key, docs, row)
            if c < 0:
                jp += 1
                continue
            if c == 0:
                cls, gain, found = j_class[jr], j_gain[jr], jr
            break
        # trec_eval breaks ties by doc_id descending: feed the docs in reverse.
        slot = m - 1 - t if reverse else t
        slot_score[slot] = -score[row]
        slot_class[slot] = cls
        slot_gain[slot] = gain
        if by_rank:
            slot_rank[slot] = run_rank[row]
        if judged_row is not None:  # pruned when not given: compiled away
            judged_row[slot] = found
        counts[b, cls] += 1
        if cls == GRADED and gain > 0:
            positives[b] += 1


@njit(cache=True, nogil=True, inline="always")
def _rank(candidates, b, rules, slots, rank):
    """Into ``rank[:m]``: block b's slots by score high to low, equal scores in slot (doc_id)
    order. A ranker's output usually lists a query's candidates by score already: then the rank
    is the input order with each run of equal scores put in slot order, and no sort is needed.
    Under ``rank`` ties equal scores are put in the order of the run's rank instead."""
    starts, order, score = candidates.starts, candidates.order, candidates.score
    reverse = rules.ties == TIES_DOC_DESC
    lo, m = starts[b], starts[b + 1] - starts[b]
    if rules.ties == TIES_RANK:
        _rank_by_run_rank(candidates, lo, m, slots, rank)
        return
    if not _non_increasing(score, lo, lo + m):  # a stable sort keeps slot order within ties
        rank[:m] = np.argsort(slots.score[:m], kind="mergesort")
        return
    for t in range(m):
        rank[order[lo + t] - lo] = m - 1 - t if reverse else t
    i = 0
    while i < m:
        j = i + 1
        while j < m and score[lo + j] == score[lo + i]:
            j += 1
        if j - i > INSERTION_RUN:
            rank[i:j] = np.sort(rank[i:j])
        else:
            for u in range(i + 1, j):  # insertion sort, in place
                v = rank[u]
                w = u - 1
                while w >= i and rank[w] > v:
                    rank[w + 1] = rank[w]
                    w -= 1
                rank[w + 1] = v
        i = j


@njit(cache=True, nogil=True, inline="always")
def _rank_by_run_rank(candidates, lo, m, slots, rank):
    """Into ``rank[:m]``: the block's slots by score high to low, equal scores by the run's rank
    ascending (ranks are unique within a block: the readers refuse repeats). A run listed in
    rank order, scores non-increasing, is its own ranking: no sort."""
    order, score, run_rank = candidates.order, candidates.score, candidates.run_rank
    listed = True
    for i in range(lo + 1, lo + m):
        if score[i] > score[i - 1] or (score[i] == score[i - 1]
                                       and run_rank[i] < run_rank[i - 1]):
            listed = False
            break
    if listed:
        for t in range(m):
            rank[order[lo + t] - lo] = t
        return
    # By rank, then stably by score: equal scores stay in rank order.
    by_rank = np.argsort(slots.run_rank[:m], kind="mergesort")
    by_score = np.argsort(slots.score[:m][by_rank], kind="mergesort")
    rank[:m] = by_rank[by_score]


@njit(cache=True, nogil=True, inline="always")
def _non_increasing(values, lo, hi):
    for i in range(lo + 1, hi):
        if values[i] > values[i - 1]:
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def _judged_at_k(slots, rank, m, rules, reach, out):
    """out[j] = judged@cutoffs[j] (``reach``: the largest K) over the first min(K, m) places
    before exclusion; under ``average`` a tie group counts its share of graded documents for
    each place it spans."""
    slot_score, slot_class = slots.score, slots.grade_class
    cutoffs, average = rules.cutoffs, rules.ties == TIES_AVERAGE
    p = 0
    while p < m and p < reach:
        q = p + 1
        if average:
            while q < m and slot_score[rank[q]] == slot_score[rank[p]]:
                q += 1
        graded = 0
        for i in range(p, q):
            graded += slot_class[rank[i]] == GRADED
        share = graded / (q - p)
        for j in range(len(cutoffs)):
            k = cutoffs[j]
            if p + 1 <= k:
                out[j] += share * (min(q, k) - p)
        p = q
    for j in range(len(cutoffs)):
        out[j] /= min(m, cutoffs[j])


@njit(cache=True, nogil=True, inline="always")
def _exclude(slots, rank, m, rules, kept_score, kept_gain):
    """The ranking after the spec's exclusions, into ``kept_score`` and ``kept_gain``: dropped
    candidates leave no gap, later ones move up. Returns how many are kept."""
    slot_score, slot_class, slot_gain = slots.score, slots.grade_class, slots.gain
    keep_unknown, keep_unjudged = rules.keep_unknown, rules.keep_unjudged
    n_kept = 0
    for i in range(m):
        r = rank[i]
        cls = slot_class[r]
        if cls == GRADED or (cls == UNKNOWN and keep_unknown) or (
                cls == UNJUDGED and keep_unjudged):
            kept_score[n_kept] = slot_score[r]
            kept_gain[n_kept] = slot_gain[r]
            n_kept += 1
    return n_kept


@njit(cache=True, nogil=True, inline="always")
def _add_dcg(kept_score, kept_gain, n_kept, rules, reach, out):
    """out[j] += DCG@cutoffs[j] of the kept ranking; under ``average`` a tie group adds its mean
    gain times the discounts of the places it spans (``rules.prefix``)."""
    cutoffs, prefix, average = rules.cutoffs, rules.prefix, rules.ties == TIES_AVERAGE
    p = 0
    while p < n_kept and p < reach:
        q = p + 1
        total = kept_gain[p]
        if average:
            while q < n_kept and kept_score[q] == kept_score[p]:
                total += kept_gain[q]
                q += 1
        mean = total / (q - p)
        first, last = p + 1, q
        for j in range(len(cutoffs)):
            k = cutoffs[j]
            if first <= k:
                if first == last:
                    if len(rules.denominator):
                        w = 1.0 / rules.denominator[first - 1]
                    else:
                        w = 1.0 / np.log2(first + 1.0)
                else:
                    w = prefix[min(last, k)] - prefix[min(first - 1, k)]
                out[j] += mean * w
        p = q


@njit(cache=True, nogil=True)
def ideal_dcg(starts, gain, cutoffs, given):
    """DCG@K per segment of its gains ordered high to low (the ideal ranking); ``given``: the
    discount's denominators (``Rules.denominator``; empty: log2)."""
    n_segments, n_k = len(starts) - 1, len(cutoffs)
    out = np.zeros((n_segments, n_k))
    reach = cutoffs.max()
    top, scratch, denominator = _ideal_buffers(reach, _widest(starts), given)
    for s in range(n_segments):
        n_top = _top_gains(gain, starts[s], starts[s + 1], reach, top, scratch)
        _add_ideal(top, n_top, cutoffs, denominator, out, s)
    return out


@njit(cache=True, nogil=True, inline="always")
def _widest(starts):
    """The most rows of any segment ``starts[s]:starts[s+1]``."""
    widest = 0
    for s in range(len(starts) - 1):
        widest = max(widest, starts[s + 1] - starts[s])
    return widest


# Up to this many places, the largest gains are kept by insertion (no sort, no allocation).
_TOP_BY_INSERTION = 32


@njit(cache=True, nogil=True, inline="always")
def _ideal_buffers(reach, widest, given):
    """(top, scratch, denominator) for :func:`_top_gains` and :func:`_add_ideal`, for calls
    that rank at most ``widest`` gains; the denominators are ``given``'s first ``reach``, or
    log2(p + 2) when it is empty (the default discount)."""
    scratch = np.empty(widest if reach > _TOP_BY_INSERTION else 0)
    if len(given):
        return np.empty(reach), scratch, given[:reach].copy()
    return np.empty(reach), scratch, np.log2(np.arange(reach) + 2.0)


@njit(cache=True, nogil=True, inline="always")
def _top_gains(gain, lo, hi, reach, top, scratch):
    """The min(hi - lo, reach) largest of ``gain[lo:hi]``, high to low, into ``top``; returns
    their number. ``scratch`` holds hi - lo values when reach > _TOP_BY_INSERTION."""
    if reach > _TOP_BY_INSERTION:
        m = hi - lo
        scratch[:m] = gain[lo:hi]
        scratch[:m].sort()
        n_top = min(m, reach)
        for i in range(n_top):
            top[i] = scratch[m - 1 - i]
        return n_top
    n_top = 0
    for r in range(lo, hi):
        n_top = insert_descending(top, n_top, reach, gain[r])
    return n_top


@njit(cache=True, nogil=True, inline="always")
def _add_ideal(top, n_top, cutoffs, denominator, out, row):
    """out[row, j] = DCG@cutoffs[j] of the gains ``top[:n_top]`` (high to low), term by term
    in rank order. ``denominator[i]`` divides place i + 1's gain (log2(i + 2) by default)."""
    for i in range(n_top):
        contribution = top[i] / denominator[i]
        for j in range(len(cutoffs)):
            if i < cutoffs[j]:
                out[row, j] += contribution
