"""The measures' compiled pass: every requested measure of every query in one loop over the
queries, each query's ranked list read once per view (docs/CONTRACT.md, section 3). Two loops
call the one step per query (:func:`query_measures`): :func:`score_measures`, over lists given
ranked, and :func:`score_blocks_and_measures`, the NDCG kernel's own pass over the blocks, which
hands each block's list to the step as soon as it has graded and ranked it.

Input, CSR-style as ``metric.kernels`` takes it: query q's candidates are rows
``ranked.starts[q]:ranked.starts[q+1]``, already in ranked order (the spec's tie rule applied:
under ``ties: average`` equal adjacent scores form a tie group, under every other rule the order
given is the order scored), each with its class (``metric.kernels.codes``: GRADED, UNKNOWN,
UNJUDGED) and grade; the query's graded grades in the version are ``judged.grade[judged.starts
[q]:judged.starts[q+1]]``. Output, per (query, measure): the value (NaN: no number), the status
(``kinds.SCORED`` ...), and the least and greatest value over every grading of the holes
(:mod:`.extremes`).

A query has three views of its list: the whole list (Judged@k, and the bounds, where every hole
keeps its place graded), the kept list (the spec's ``unknown`` / ``unjudged``: an excluded
candidate leaves, a kept hole is not relevant and has gain 0) and the graded list
(``judged_only=True`` and Bpref). nDCG is the NDCG kernel's own steps (``metric.kernels.dcg``
and ``metric.kernels.bounds``), called here on the kept list.

A plan of RR, R@k and AP alone, without tie groups and with every candidate kept (the TREC DL
set under ``trec_eval``), is scored by :func:`lean_measures`: the same numbers, from the grades
alone and without the general step's views and calls, whose upkeep per query cost more than
those measures' own arithmetic.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from evaluation_pipeline.measures.kinds import (
    INCOMPLETE,
    KIND_AP,
    KIND_BPREF,
    KIND_DCG,
    KIND_ERR,
    KIND_JUDGED,
    KIND_NDCG,
    KIND_P,
    KIND_R,
    KIND_RBP,
    KIND_RPREC,
    KIND_RR,
    KIND_SUCCESS,
    NO_POSITIVE,
    NOT_JUDGED,
    SCORED,
)
from evaluation_pipeline.metric.kernels.bounds import (
    block_bounds,
    bound_scratch,
    insert_descending,
)
from evaluation_pipeline.metric.kernels.codes import GRADED, UNJUDGED, UNKNOWN
from evaluation_pipeline.metric.kernels.dcg import (
    Rules,
    Slots,
    _add_dcg,
    _add_ideal,
    _top_gains,
    _widest,
    block_outputs,
    block_work,
    score_block,
)
from evaluation_pipeline.metric.measures import extremes
from evaluation_pipeline.metric.measures.values import (
    NOT_RELEVANT,
    ap,
    bpref,
    dcg,
    err,
    judged_share,
    no_positive_value,
    precision,
    rbp,
    recall,
    rprec,
    rr,
    success,
)


class Ranked(NamedTuple):
    """The queries' candidates in ranked order."""

    starts: np.ndarray  # int64, n_queries + 1
    score: np.ndarray  # float64 per row: equal adjacent scores tie under ties=average
    grade_class: np.ndarray  # int8 per row: GRADED, UNKNOWN or UNJUDGED
    grade: np.ndarray  # int64 per row: the grade of a graded row (read only there)


class Judged(NamedTuple):
    """Each query's judgments in the version."""

    starts: np.ndarray  # int64, n_queries + 1, into ``grade``
    grade: np.ndarray  # int64: the grades of the query's graded rows
    has_rows: np.ndarray  # bool per query: the version has a row (graded or unknown) for it
    n_unknown: np.ndarray  # int64 per query: its unknown rows
    # int64 per query: holes outside the candidates that join the ideal under ideal=all_judged
    # (unknown rows the list lacks, other rankers' unjudged documents; contract rule 7)
    outside_holes: np.ndarray


class Conventions(NamedTuple):
    """The spec's conventions as the kernel reads them."""

    average: bool  # ties=average: equal adjacent scores form a tie group
    ties: int  # metric.kernels.codes.TIES_*, for the NDCG kernel's steps
    keep_unknown: bool
    keep_unjudged: bool
    incomplete_unknown: bool
    incomplete_unjudged: bool
    ideal_from_candidates: bool
    no_positive: int  # metric.kernels.codes.NO_POSITIVE_*
    top_grade: int  # the largest grade a hole may take (rule 7)
    gains: np.ndarray  # float64 (3, grades): the gain of each grade, per kinds.GAIN_*
    discount: np.ndarray  # float64: discount[p - 1] is DCG's weight of place p
    prefix: np.ndarray  # float64: prefix[p] = discount[0] + ... + discount[p - 1]
    ndcg_prefix: np.ndarray  # the NDCG kernel's prefix of the spec's discount (Rules.prefix)
    ndcg_denominator: np.ndarray  # and its denominators (Rules.denominator; empty: log2)


class Plan(NamedTuple):
    """The requested measures, one entry each (``plan.plan_measures``)."""

    kind: np.ndarray  # int64: kinds.KIND_*
    cutoff: np.ndarray  # int64: k, or the longest list when the measure has none
    rel: np.ndarray  # int64: the least relevant grade (0: graded RBP)
    judged_only: np.ndarray  # bool
    gain: np.ndarray  # int64: kinds.GAIN_*, which row of ``conventions.gains``
    persistence: np.ndarray  # float64: RBP's p
    max_rel: np.ndarray  # int64: ERR's and graded RBP's largest grade


@njit(cache=True, nogil=True)
def score_measures(ranked, judged, conventions, plan):
    """(value, status, least, greatest), each (queries x measures); module docstring."""
    starts = ranked.starts
    n_q, n_m = len(starts) - 1, len(plan.kind)
    out = measure_outputs(n_q, n_m)
    longest = 1
    for q in range(n_q):  # a list with its holes outside it: R's hole weights, one each
        longest = max(longest, starts[q + 1] - starts[q] + judged.outside_holes[q],
                      judged.starts[q + 1] - judged.starts[q])
    work = measure_work(longest, conventions, plan)
    lean = is_lean(conventions, plan)
    # The query's list in scratch, as the one pass hands it over (``query_measures``).
    score, grade_class = np.empty(longest), np.empty(longest, np.int8)
    whole_grade = np.empty(longest, np.int64)
    for q in range(n_q):
        lo, hi = starts[q], starts[q + 1]
        j_lo, j_hi = judged.starts[q], judged.starts[q + 1]
        n_unknown, n_unjudged = 0, 0
        for i in range(hi - lo):
            cls = ranked.grade_class[lo + i]
            score[i], grade_class[i] = ranked.score[lo + i], cls
            whole_grade[i] = ranked.grade[lo + i] if cls == GRADED else NOT_RELEVANT
            n_unknown += cls == UNKNOWN
            n_unjudged += cls == UNJUDGED
        if lean:
            lean_measures(score, whole_grade, hi - lo, n_unknown, n_unjudged,
                          judged.grade[j_lo:j_hi], judged.has_rows[q], judged.n_unknown[q],
                          judged.outside_holes[q], conventions, plan, work, out, q)
        else:
            query_measures(score, grade_class, whole_grade, hi - lo, n_unknown, n_unjudged,
                           judged.grade[j_lo:j_hi], judged.has_rows[q], judged.n_unknown[q],
                           judged.outside_holes[q], conventions, plan, work, out, q)
    return out


@njit(cache=True, nogil=True)
def score_blocks_and_measures(candidates, judgments, rules, grade, conventions, plan):
    """The NDCG kernel's pass (``dcg.score_blocks``: its eight outputs, in its order) and, in
    the same loop, every measure of ``plan`` of each block (value, status, least, greatest,
    blocks x measures) from the list that pass has just graded and ranked: nothing is merged
    or sorted twice. ``grade``: each judgment row's grade (int64, read where it is graded)."""
    starts = candidates.starts
    n_blocks = len(starts) - 1
    out = block_outputs(n_blocks, len(rules.cutoffs))
    work = block_work(starts, rules)
    slots, rank = work[0], work[1]
    longest = max(1, _widest(starts))
    pool_unjudged = judgments.pool_unjudged
    for b in range(n_blocks):
        # A list with its holes outside it (R's hole weights, one each): at most its query's
        # judgment rows and the pool's unjudged documents.
        span = judgments.hi[b] - judgments.lo[b]
        longest = max(longest, starts[b + 1] - starts[b] + span + (
            pool_unjudged[b] if len(pool_unjudged) else 0))
    measured = measure_outputs(n_blocks, len(plan.kind))
    scratch = measure_work(longest, conventions, plan)
    judged_row = np.empty(longest, np.int64)
    ranked_score, ranked_class = np.empty(longest), np.empty(longest, np.int8)
    whole_grade, judged_grade = np.empty(longest, np.int64), np.empty(longest, np.int64)
    j_order, j_class = judgments.order, judgments.grade_class
    counts = out[3]
    lean = is_lean(conventions, plan)
    for b in range(n_blocks):
        m = score_block(candidates, judgments, rules, b, out, work, judged_row)
        if lean:  # the grades alone: no tie groups, every candidate kept
            for t in range(m):
                s = rank[t]
                whole_grade[t] = grade[judged_row[s]] if slots.grade_class[s] == GRADED \
                    else NOT_RELEVANT
        else:
            for t in range(m):  # the list in rank order, as ``ranking.ranked_blocks`` writes it
                s = rank[t]
                cls = slots.grade_class[s]
                ranked_score[t] = -slots.score[s]
                ranked_class[t] = cls
                whole_grade[t] = grade[judged_row[s]] if cls == GRADED else NOT_RELEVANT
        n_judged, n_unknown = 0, 0
        for jp in range(judgments.lo[b], judgments.hi[b]):
            jr = j_order[jp]
            if j_class[jr] == GRADED:
                judged_grade[n_judged] = grade[jr]
                n_judged += 1
            else:
                n_unknown += 1
        # Holes outside the list (the ideal over every judged document: contract rule 7): the
        # query's unknown rows the block lacks, and the documents other rankers of the pool
        # return that the version lacks and the block does not hold (``bounds.fixed_top``).
        outside = n_unknown - counts[b, UNKNOWN]
        if len(pool_unjudged):
            outside += pool_unjudged[b] - counts[b, UNJUDGED]
        if lean:
            lean_measures(ranked_score, whole_grade, m, counts[b, UNKNOWN], counts[b, UNJUDGED],
                          judged_grade[:n_judged], judgments.hi[b] > judgments.lo[b],
                          n_unknown, outside, conventions, plan, scratch, measured, b)
        else:
            query_measures(ranked_score, ranked_class, whole_grade, m, counts[b, UNKNOWN],
                           counts[b, UNJUDGED], judged_grade[:n_judged],
                           judgments.hi[b] > judgments.lo[b], n_unknown, outside, conventions,
                           plan, scratch, measured, b)
    return out + measured


@njit(cache=True, nogil=True)
def judged_grades(lo, hi, order, grade_class, grade):
    """The distinct grades of the graded judgment rows ``order[lo[b]:hi[b]]`` over every block
    b, ascending: the grades the measures' conventions must have a gain for. Marked in a table
    of every grade up to the largest when that is small (grades are a short scale), else
    gathered and made unique."""
    largest, smallest = 0, 0
    for r in range(len(grade)):
        if grade_class[r] == GRADED:
            largest, smallest = max(largest, grade[r]), min(smallest, grade[r])
    if smallest == 0 and largest <= _MARKED_GRADES:
        seen = np.zeros(largest + 1, np.bool_)
        for b in range(len(lo)):
            for jp in range(lo[b], hi[b]):
                jr = order[jp]
                if grade_class[jr] == GRADED:
                    seen[grade[jr]] = True
        return np.nonzero(seen)[0].astype(np.int64)
    n = 0
    for b in range(len(lo)):
        n += hi[b] - lo[b]
    gathered = np.empty(n, np.int64)
    n = 0
    for b in range(len(lo)):
        for jp in range(lo[b], hi[b]):
            jr = order[jp]
            if grade_class[jr] == GRADED:
                gathered[n] = grade[jr]
                n += 1
    return np.unique(gathered[:n])


# Up to this grade, judged_grades marks a table instead of sorting the grades.
_MARKED_GRADES = 1 << 16


@njit(cache=True, nogil=True, inline="always")
def measure_outputs(n_q, n_m):
    """(value, status, least, greatest), each (queries x measures), before the first query."""
    return (np.full((n_q, n_m), np.nan), np.zeros((n_q, n_m), np.int8),
            np.full((n_q, n_m), np.nan), np.full((n_q, n_m), np.nan))


@njit(cache=True, nogil=True)
def measure_work(longest, conventions, plan):
    """The scratch of :func:`query_measures` for lists and judgments of at most ``longest``
    rows, reused query after query: the three views, the ideal's and the bounds' buffers."""
    reach = 1
    for j in range(len(plan.kind)):
        reach = max(reach, plan.cutoff[j])
    if len(conventions.ndcg_denominator):
        denominator = conventions.ndcg_denominator[:reach].copy()
    else:
        denominator = np.log2(np.arange(reach) + 2.0)
    top_grade = conventions.top_grade
    return (np.empty(longest), np.empty(longest, np.int64),  # kept: score, grade
            np.empty(longest), np.empty(longest, np.int64),  # graded: score, grade
            np.empty((len(plan.kind), 2), np.int64),  # R and N per measure's threshold
            np.empty(max(longest, 1)), np.empty(reach), np.empty(longest),  # the ideal's
            np.zeros((1, 1)), np.zeros(1), denominator, bound_scratch(longest, denominator),
            Slots(np.empty(longest), np.empty(longest, np.int8), np.empty(longest),
                  np.empty(0, np.int64)),
            np.arange(longest),
            (np.unique(conventions.gains[0, :top_grade + 1]),
             np.unique(conventions.gains[1, :top_grade + 1]),
             np.unique(conventions.gains[2, :top_grade + 1])),
            extremes.scratch(longest))


# The kinds :func:`lean_measures` scores: their values and bounds without tie groups read the
# grades alone, each bound from a few places or one scan (``extremes.rr_bounds``,
# ``extremes.recall_bounds``, ``extremes.ap_bounds``).
_LEAN_KINDS = (KIND_RR, KIND_R, KIND_AP)


@njit(cache=True, nogil=True)
def is_lean(conventions, plan):
    """Whether :func:`lean_measures` scores ``plan`` under ``conventions``: no tie groups,
    every candidate kept (the kept list is the whole list), and every measure RR, R@k or AP on
    that list (not ``judged_only``)."""
    if conventions.average or not (conventions.keep_unknown and conventions.keep_unjudged):
        return False
    for j in range(len(plan.kind)):
        if plan.judged_only[j] or plan.kind[j] not in _LEAN_KINDS:
            return False
    return True


@njit(cache=True, nogil=True, inline="always")
def lean_measures(score, whole_grade, m, n_unknown, n_unjudged, j_grade, has_rows,
                  n_unknown_rows, outside_holes, conventions, plan, work, out, q):
    """:func:`query_measures` for a plan :func:`is_lean` accepts, the same numbers from the
    same arithmetic: with every candidate kept the measures' one view is the whole list, and
    each measure's bounds are its own step of :mod:`.extremes`, called without the rest of
    :func:`extremes.bounds`' arguments."""
    value, status, least, greatest = out
    scratch = work[-1]
    holes, counts, sums, after, fixed, table = (scratch[4], scratch[2], scratch[1],
                                                scratch[3], scratch[0], scratch[5])
    n_m = len(plan.kind)
    if not has_rows:
        for j in range(n_m):
            status[q, j] = NOT_JUDGED
        return
    outside = 0 if conventions.ideal_from_candidates else outside_holes
    n_holes = n_unknown + n_unjudged + outside
    open_query = (conventions.incomplete_unknown and (n_unknown > 0 or (
        not conventions.ideal_from_candidates and n_unknown_rows > 0))) or (
        conventions.incomplete_unjudged and n_unjudged > 0)
    top, no_positive = conventions.top_grade, conventions.no_positive
    for j in range(n_m):
        kind, k, rel = plan.kind[j], plan.cutoff[j], plan.rel[j]
        # R: relevant documents of the ideal set (its graded ones: kept holes are not).
        relevant = 0
        if conventions.ideal_from_candidates:
            for i in range(m):
                relevant += whole_grade[i] >= rel
        else:
            for jp in range(len(j_grade)):
                relevant += j_grade[jp] >= rel
        reaches = top >= rel
        lo_hi = (np.nan, np.nan)
        if kind == KIND_AP:
            if n_holes == 0:
                v = ap(whole_grade, m, k, rel, relevant) if relevant > 0 else 0.0
            else:
                # values.ap's sum is the bounds' own, every hole non-relevant.
                total, low, high = extremes.ap_sum_and_bounds(
                    whole_grade, m, k, rel, reaches, relevant, outside, no_positive, table,
                    holes, counts, sums, after, fixed)
                v = total / relevant if relevant > 0 else 0.0
                lo_hi = (low, high)
        elif relevant == 0 or open_query:
            v = 0.0
        elif kind == KIND_RR:
            v = rr(score, whole_grade, m, k, rel, False)
        else:
            v = recall(score, whole_grade, m, k, rel, relevant, False)
        if open_query:
            status[q, j] = INCOMPLETE
        elif relevant == 0:
            status[q, j] = NO_POSITIVE
            value[q, j] = no_positive_value(no_positive)
        else:
            status[q, j] = SCORED
            value[q, j] = v
        if n_holes == 0:
            least[q, j], greatest[q, j] = value[q, j], value[q, j]
        elif kind == KIND_RR:
            least[q, j], greatest[q, j] = extremes.rr_bounds(
                whole_grade, m, k, rel, reaches, relevant, outside, n_holes, no_positive)
        elif kind == KIND_R:
            least[q, j], greatest[q, j] = extremes.recall_bounds(
                whole_grade, m, k, rel, reaches, relevant, outside, n_holes, no_positive)
        else:
            least[q, j], greatest[q, j] = lo_hi


@njit(cache=True, nogil=True, inline="always")
def query_measures(score, grade_class, whole_grade, m, n_unknown, n_unjudged, j_grade,
                   has_rows, n_unknown_rows, outside_holes, conventions, plan, work, out, q):
    """Every measure of ``plan`` for one query into row ``q`` of ``out``
    (:func:`measure_outputs`): its ranked list ``score[:m]``, ``grade_class[:m]`` and
    ``whole_grade[:m]`` (a graded candidate's grade, ``NOT_RELEVANT`` for a hole), with its
    ``n_unknown`` and ``n_unjudged`` candidates, and its judgments: ``j_grade`` (its graded
    grades), ``has_rows``, ``n_unknown_rows`` and ``outside_holes`` (:class:`Judged`'s, for this
    query). The views a measure reads are made once for all (the kept list is the whole list
    when the spec keeps every candidate), and R once per relevance threshold."""
    value, status, least, greatest = out
    (kept_score, kept_grade, graded_score, graded_grade, counted, gain_scratch, top,
     top_scratch, ideal_out, dcg_out, denominator, nd_scratch, nd_slots, identity, hole_gains,
     work) = work
    n_m = len(plan.kind)
    n_judged = len(j_grade)
    own_lists = False
    for j in range(n_m):
        own_lists |= plan.judged_only[j] or plan.kind[j] == KIND_BPREF
    n_graded = 0
    if own_lists:
        for i in range(m):
            if grade_class[i] == GRADED:
                graded_score[n_graded], graded_grade[n_graded] = score[i], whole_grade[i]
                n_graded += 1
    if conventions.keep_unknown and conventions.keep_unjudged:
        kept_score, kept_grade, n_kept = score, whole_grade, m  # a hole stays, not relevant
    else:
        n_kept = 0
        for i in range(m):
            cls = grade_class[i]
            if cls == GRADED or (cls == UNKNOWN and conventions.keep_unknown) or (
                    cls == UNJUDGED and conventions.keep_unjudged):
                kept_score[n_kept] = score[i]
                kept_grade[n_kept] = whole_grade[i]
                n_kept += 1
    outside = 0 if conventions.ideal_from_candidates else outside_holes
    n_holes = n_unknown + n_unjudged + outside
    open_query = (conventions.incomplete_unknown and (n_unknown > 0 or (
        not conventions.ideal_from_candidates and n_unknown_rows > 0))) or (
        conventions.incomplete_unjudged and n_unjudged > 0)
    for j in range(n_m):
        kind, k, rel = plan.kind[j], plan.cutoff[j], plan.rel[j]
        if not has_rows:
            status[q, j] = NOT_JUDGED
            continue
        own_list = plan.judged_only[j] or kind == KIND_BPREF
        v_score = graded_score if own_list else kept_score
        v_grade = graded_grade if own_list else kept_grade
        n = n_graded if own_list else n_kept
        # R: relevant documents of the ideal set (its graded ones: kept holes are not), counted
        # once per threshold (and view, when the ideal is the candidates').
        same = -1
        for i in range(j):
            if plan.rel[i] == rel and (not conventions.ideal_from_candidates or (
                    plan.judged_only[i] or plan.kind[i] == KIND_BPREF) == own_list):
                same = i
                break
        if same >= 0:
            relevant, nonrelevant = counted[same, 0], counted[same, 1]
        else:
            relevant, nonrelevant = 0, 0
            if conventions.ideal_from_candidates:
                for i in range(n):
                    relevant += v_grade[i] >= rel
                    nonrelevant += 0 <= v_grade[i] < rel
            else:
                for jp in range(n_judged):
                    relevant += j_grade[jp] >= rel
                    nonrelevant += j_grade[jp] < rel
        counted[j, 0], counted[j, 1] = relevant, nonrelevant
        has_value = True
        if kind == KIND_NDCG:
            gains = conventions.gains[plan.gain[j]]
            for i in range(n):
                gain_scratch[i] = gains[v_grade[i]] if v_grade[i] >= 0 else 0.0
            rules = Rules(plan.cutoff[j:j + 1], conventions.ndcg_prefix, conventions.ties,
                          conventions.keep_unknown, conventions.keep_unjudged,
                          conventions.ideal_from_candidates, hole_gains[plan.gain[j]],
                          conventions.no_positive, conventions.ndcg_denominator)
            dcg_out[0] = 0.0
            _add_dcg(v_score, gain_scratch, n, rules, k, dcg_out)
            ideal_out[0, 0] = 0.0
            if conventions.ideal_from_candidates:
                n_top = _top_gains(gain_scratch, 0, n, k, top, top_scratch)
            else:
                for jp in range(n_judged):
                    top_scratch[jp] = gains[j_grade[jp]]
                n_top = _top_gains(top_scratch, 0, n_judged, k, top, gain_scratch)
            _add_ideal(top, n_top, plan.cutoff[j:j + 1], denominator, ideal_out, 0)
            has_value = ideal_out[0, 0] > 0.0
            v = dcg_out[0] / ideal_out[0, 0] if has_value else 0.0
        elif kind == KIND_DCG:
            v = dcg(v_score, v_grade, n, k, conventions.gains[plan.gain[j]],
                    conventions.discount, conventions.prefix, conventions.average)
        elif kind == KIND_JUDGED:
            v = judged_share(score, whole_grade, m, k, conventions.average)
        elif kind == KIND_P:
            v = precision(v_score, v_grade, n, k, rel, conventions.average)
        elif kind == KIND_SUCCESS:
            v = success(v_score, v_grade, n, k, rel, conventions.average)
        elif kind == KIND_RBP:
            v = rbp(v_score, v_grade, n, k, rel, plan.persistence[j], plan.max_rel[j],
                    conventions.average)
        elif kind == KIND_ERR:
            v = err(v_grade, n, k, plan.max_rel[j])
        else:
            has_value = relevant > 0
            v = 0.0
            if has_value:
                if kind == KIND_RR:
                    v = rr(v_score, v_grade, n, k, rel, conventions.average)
                elif kind == KIND_R:
                    v = recall(v_score, v_grade, n, k, rel, relevant, conventions.average)
                elif kind == KIND_AP:
                    v = ap(v_grade, n, k, rel, relevant)
                elif kind == KIND_RPREC:
                    v = rprec(v_score, v_grade, n, rel, relevant, conventions.average)
                elif kind == KIND_BPREF:
                    v = bpref(v_grade, n, rel, relevant, nonrelevant)
        if open_query and not own_list and kind != KIND_JUDGED:
            status[q, j] = INCOMPLETE
        elif not has_value:
            status[q, j] = NO_POSITIVE
            value[q, j] = no_positive_value(conventions.no_positive)
        else:
            status[q, j] = SCORED
            value[q, j] = v
        if n_holes == 0:
            least[q, j], greatest[q, j] = value[q, j], value[q, j]
            continue
        if kind == KIND_NDCG:
            # The NDCG kernel's bounds, over the whole list in its ranked order.
            gains = conventions.gains[plan.gain[j]]
            n_top = 0
            for i in range(m):
                nd_slots.score[i] = score[i]
                nd_slots.grade_class[i] = grade_class[i]
                nd_slots.gain[i] = gains[whole_grade[i]] if whole_grade[i] >= 0 else 0.0
                if conventions.ideal_from_candidates and whole_grade[i] >= 0:
                    n_top = insert_descending(top, n_top, k, nd_slots.gain[i])
            if not conventions.ideal_from_candidates:
                for jp in range(n_judged):
                    n_top = insert_descending(top, n_top, k, gains[j_grade[jp]])
            rules = Rules(plan.cutoff[j:j + 1], conventions.ndcg_prefix, conventions.ties,
                          conventions.keep_unknown, conventions.keep_unjudged,
                          conventions.ideal_from_candidates, hole_gains[plan.gain[j]],
                          conventions.no_positive, conventions.ndcg_denominator)
            least[q, j], greatest[q, j] = block_bounds(
                nd_slots, identity, m, rules, k, top, n_top, outside, nd_scratch)
        else:
            if conventions.ideal_from_candidates:
                fixed_relevant, fixed_nonrelevant = 0, 0
                for i in range(m):
                    fixed_relevant += whole_grade[i] >= rel
                    fixed_nonrelevant += 0 <= whole_grade[i] < rel
            else:
                fixed_relevant, fixed_nonrelevant = relevant, nonrelevant
            least[q, j], greatest[q, j] = extremes.bounds(
                kind, score, whole_grade, m, k, rel, plan.persistence[j], plan.max_rel[j],
                conventions.gains[plan.gain[j]], conventions, fixed_relevant,
                fixed_nonrelevant, outside, n_holes, work)
