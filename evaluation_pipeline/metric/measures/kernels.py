"""The measures' compiled pass: every requested measure of every query in one loop over the
queries, each query's ranked list read once per view (docs/CONTRACT.md, section 3).

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
from evaluation_pipeline.metric.kernels.dcg import Rules, Slots, _add_dcg, _add_ideal, _top_gains
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
    value = np.full((n_q, n_m), np.nan)
    status = np.zeros((n_q, n_m), np.int8)
    least = np.full((n_q, n_m), np.nan)
    greatest = np.full((n_q, n_m), np.nan)
    longest = 1
    for q in range(n_q):
        longest = max(longest, starts[q + 1] - starts[q],
                      judged.starts[q + 1] - judged.starts[q])
    reach = 1
    for j in range(n_m):
        reach = max(reach, plan.cutoff[j])
    # Scratch of the longest list, reused query after query: the three views and the bounds'.
    kept_score, kept_grade = np.empty(longest), np.empty(longest, np.int64)
    graded_score, graded_grade = np.empty(longest), np.empty(longest, np.int64)
    whole_grade = np.empty(longest, np.int64)
    gain_scratch = np.empty(max(longest, 1))
    top = np.empty(reach)
    top_scratch = np.empty(longest)
    ideal_out = np.zeros((1, 1))
    dcg_out = np.zeros(1)
    if len(conventions.ndcg_denominator):
        denominator = conventions.ndcg_denominator[:reach].copy()
    else:
        denominator = np.log2(np.arange(reach) + 2.0)
    nd_scratch = bound_scratch(longest, denominator)
    nd_slots = Slots(np.empty(longest), np.empty(longest, np.int8), np.empty(longest),
                     np.empty(0, np.int64))
    identity = np.arange(longest)
    hole_gains = (np.unique(conventions.gains[0, :conventions.top_grade + 1]),
                  np.unique(conventions.gains[1, :conventions.top_grade + 1]),
                  np.unique(conventions.gains[2, :conventions.top_grade + 1]))
    work = extremes.scratch(longest)
    for q in range(n_q):
        lo, m = starts[q], starts[q + 1] - starts[q]
        j_lo, j_hi = judged.starts[q], judged.starts[q + 1]
        n_kept, n_graded, n_unknown, n_unjudged = 0, 0, 0, 0
        for i in range(m):
            cls, g, s = ranked.grade_class[lo + i], ranked.grade[lo + i], ranked.score[lo + i]
            if cls == GRADED:
                graded_score[n_graded], graded_grade[n_graded] = s, g
                n_graded += 1
                whole_grade[i] = g
            else:
                whole_grade[i] = NOT_RELEVANT
                n_unknown += cls == UNKNOWN
                n_unjudged += cls == UNJUDGED
            if cls == GRADED or (cls == UNKNOWN and conventions.keep_unknown) or (
                    cls == UNJUDGED and conventions.keep_unjudged):
                kept_score[n_kept] = s
                kept_grade[n_kept] = g if cls == GRADED else NOT_RELEVANT
                n_kept += 1
        outside = 0 if conventions.ideal_from_candidates else judged.outside_holes[q]
        n_holes = n_unknown + n_unjudged + outside
        open_query = (conventions.incomplete_unknown and (n_unknown > 0 or (
            not conventions.ideal_from_candidates and judged.n_unknown[q] > 0))) or (
            conventions.incomplete_unjudged and n_unjudged > 0)
        score = ranked.score[lo:lo + m]
        for j in range(n_m):
            kind, k, rel = plan.kind[j], plan.cutoff[j], plan.rel[j]
            if not judged.has_rows[q]:
                status[q, j] = NOT_JUDGED
                continue
            own_list = plan.judged_only[j] or kind == KIND_BPREF
            v_score = graded_score if own_list else kept_score
            v_grade = graded_grade if own_list else kept_grade
            n = n_graded if own_list else n_kept
            # R: relevant documents of the ideal set (its graded ones: kept holes are not).
            relevant, nonrelevant = 0, 0
            if conventions.ideal_from_candidates:
                for i in range(n):
                    relevant += v_grade[i] >= rel
                    nonrelevant += 0 <= v_grade[i] < rel
            else:
                for jp in range(j_lo, j_hi):
                    relevant += judged.grade[jp] >= rel
                    nonrelevant += judged.grade[jp] < rel
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
                    for jp in range(j_lo, j_hi):
                        top_scratch[jp - j_lo] = gains[judged.grade[jp]]
                    n_top = _top_gains(top_scratch, 0, j_hi - j_lo, k, top, gain_scratch)
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
                    nd_slots.grade_class[i] = ranked.grade_class[lo + i]
                    nd_slots.gain[i] = gains[whole_grade[i]] if whole_grade[i] >= 0 else 0.0
                    if conventions.ideal_from_candidates and whole_grade[i] >= 0:
                        n_top = insert_descending(top, n_top, k, nd_slots.gain[i])
                if not conventions.ideal_from_candidates:
                    for jp in range(j_lo, j_hi):
                        n_top = insert_descending(top, n_top, k, gains[judged.grade[jp]])
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
                    fixed_nonrelevant, outside, work)
    return value, status, least, greatest

