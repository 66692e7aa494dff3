"""The least and greatest value of a measure over every grading of a query's holes
(docs/CONTRACT.md, section 3, rule 7): every hole keeps its place, graded 0..top, and holes
outside the candidates (``ideal: all_judged``) only join R (and Bpref's N).

Each measure's algorithm is the one its declaration states (``declarations.Declaration.bounds``):
- monotone measures (P, Success, RR, DCG, ERR, RBP): every hole at the least and at the greatest
  grade (for a relevance threshold, grade 0 and the top grade when it reaches ``rel``). A
  grading without a relevant document has no RR; under ``no_positive: exclude`` the least is
  then that of the one relevant hole placed last;
- R@k and Rprec: for t relevant holes, the t heaviest or lightest at the cutoff, a scan over t;
- AP: a dynamic program over the places, per count of relevant documents within the cutoff;
- Bpref: every relevant / non-relevant grading, up to ``codes.MAX_BPREF_HOLES`` holes;
- Judged@k: 1, since every grading judges every hole.
nDCG's are the NDCG kernel's own (``metric.kernels.bounds``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from evaluation_pipeline.metric.kernels.codes import NO_POSITIVE_EXCLUDE, NO_POSITIVE_ONE
from evaluation_pipeline.metric.measures.codes import (
    KIND_AP,
    KIND_BPREF,
    KIND_DCG,
    KIND_ERR,
    KIND_JUDGED,
    KIND_P,
    KIND_R,
    KIND_RBP,
    KIND_RPREC,
    KIND_RR,
    KIND_SUCCESS,
    MAX_BPREF_HOLES,
)
from evaluation_pipeline.metric.measures.values import (
    bpref,
    count_within,
    dcg,
    err,
    group_end,
    precision,
    rbp,
    rr,
    success,
)


@njit(cache=True, nogil=True)
def scratch(longest):
    """(a grading's grades, the dynamic program's greatest and least sums, hole weights)."""
    return (np.empty(longest, np.int64), np.empty(longest + 2), np.empty(longest + 2),
            np.empty(longest + 1))


@njit(cache=True, nogil=True)
def _grade_holes(grade, m, g, out):
    for i in range(m):
        out[i] = g if grade[i] < 0 else grade[i]


@njit(cache=True, nogil=True)
def _monotone(kind, score, a, m, k, rel, persistence, max_rel, gains, conventions):
    average = conventions.average
    if kind == KIND_P:
        return precision(score, a, m, k, rel, average)
    if kind == KIND_SUCCESS:
        return success(score, a, m, k, rel, average)
    if kind == KIND_RR:
        return rr(score, a, m, k, rel, average)
    if kind == KIND_RBP:
        return rbp(score, a, m, k, rel, persistence, max_rel, average)
    if kind == KIND_ERR:
        return err(a, m, k, max_rel)
    return dcg(score, a, m, k, gains, conventions.discount, conventions.prefix, average)


@njit(cache=True, nogil=True)
def _hole_weights(score, grade, m, k, average, outside, weight):
    """Each hole's share of a place within k, in rank order (so non-increasing), then the
    outside holes' 0; returns their number."""
    h = 0
    p = 0
    while p < m:
        q = group_end(score, p, m, average)
        w = 0.0
        if p < k:
            w = (min(q, k) - p) / (q - p)
        for i in range(p, q):
            if grade[i] < 0:
                weight[h] = w
                h += 1
        p = q
    for _ in range(outside):
        weight[h] = 0.0
        h += 1
    return h


@njit(cache=True, nogil=True)
def bounds(kind, score, grade, m, k, rel, persistence, max_rel, gains, conventions,
           fixed_relevant, fixed_nonrelevant, outside, work):
    """(least, greatest) of the measure over every grading of the holes (``grade < 0`` in the
    whole list, plus ``outside``); NaN for both when no grading gives a number."""
    a, high, low, weight = work
    top, average, no_positive = conventions.top_grade, conventions.average, conventions.no_positive
    reaches = top >= rel  # a hole can be relevant
    n_holes = outside
    for i in range(m):
        n_holes += grade[i] < 0
    least, greatest = np.inf, -np.inf
    if kind == KIND_JUDGED:
        return 1.0, 1.0
    if kind in (KIND_P, KIND_SUCCESS, KIND_RBP, KIND_ERR, KIND_DCG, KIND_RR):
        g_lo, g_hi = 0, top
        if kind == KIND_DCG:
            for g in range(top + 1):
                g_lo = g if gains[g] < gains[g_lo] else g_lo
                g_hi = g if gains[g] > gains[g_hi] else g_hi
        elif (kind != KIND_ERR and not (kind == KIND_RBP and rel == 0)) and not reaches:
            g_hi = 0
        _grade_holes(grade, m, g_lo, a)
        v_lo = _monotone(kind, score, a, m, k, rel, persistence, max_rel, gains, conventions)
        _grade_holes(grade, m, g_hi, a)
        v_hi = _monotone(kind, score, a, m, k, rel, persistence, max_rel, gains, conventions)
        if kind != KIND_RR or fixed_relevant > 0:
            return v_lo, v_hi
        # RR without a fixed relevant document: all holes non-relevant leaves no R.
        if reaches and n_holes > 0:
            greatest = v_hi
            if outside > 0:
                least = 0.0  # a relevant document outside the list: RR 0
            else:
                # The one relevant hole placed last has the least RR of any grading with R > 0.
                _grade_holes(grade, m, 0, a)
                for i in range(m - 1, -1, -1):
                    if grade[i] < 0:
                        a[i] = top
                        break
                least = rr(score, a, m, k, rel, average)
        return _with_no_value(least, greatest, no_positive)
    if kind == KIND_R or kind == KIND_RPREC:
        reach = n_holes if reaches else 0
        fixed, h = 0.0, 0
        if kind == KIND_R:  # one cutoff for every t
            fixed = count_within(score, grade, m, k, rel, average)
            h = _hole_weights(score, grade, m, k, average, outside, weight)
        heaviest, lightest = 0.0, 0.0
        for t in range(reach + 1):
            relevant = fixed_relevant + t
            if kind == KIND_R:
                if t > 0:
                    heaviest += weight[t - 1]
                    lightest += weight[h - t]
            elif relevant > 0:  # Rprec: the cutoff is R
                fixed = count_within(score, grade, m, relevant, rel, average)
                h = _hole_weights(score, grade, m, relevant, average, outside, weight)
                heaviest, lightest = 0.0, 0.0
                for i in range(t):
                    heaviest += weight[i]
                    lightest += weight[h - 1 - i]
            if relevant == 0:
                least, greatest = _no_value(least, greatest, no_positive)
                continue
            greatest = max(greatest, (fixed + heaviest) / relevant)
            least = min(least, (fixed + lightest) / relevant)
        return _finish(least, greatest)
    if kind == KIND_AP:
        return _ap_bounds(grade, m, k, rel, reaches, fixed_relevant, outside, no_positive,
                          high, low)
    if kind == KIND_BPREF:
        candidate_holes = n_holes - outside
        if not reaches:
            _grade_holes(grade, m, 0, a)
            if fixed_relevant == 0:
                least, greatest = _no_value(least, greatest, no_positive)
                return _finish(least, greatest)
            v = bpref(a, m, rel, fixed_relevant, fixed_nonrelevant + n_holes)
            return v, v
        if candidate_holes > MAX_BPREF_HOLES:
            return np.nan, np.nan
        for mask in range(1 << candidate_holes):
            bit, relevant_holes = 0, 0
            for i in range(m):
                if grade[i] < 0:
                    chosen = (mask >> bit) & 1
                    a[i] = top if chosen else 0
                    relevant_holes += chosen
                    bit += 1
                else:
                    a[i] = grade[i]
            for outside_relevant in range(outside + 1):
                relevant = fixed_relevant + relevant_holes + outside_relevant
                nonrelevant = fixed_nonrelevant + n_holes - relevant_holes - outside_relevant
                if relevant == 0:
                    least, greatest = _no_value(least, greatest, no_positive)
                    continue
                v = bpref(a, m, rel, relevant, nonrelevant)
                least, greatest = min(least, v), max(greatest, v)
        return _finish(least, greatest)
    return np.nan, np.nan


@njit(cache=True, nogil=True)
def _ap_bounds(grade, m, k, rel, reaches, fixed_relevant, outside, no_positive, high, low):
    """AP's extremes. Within the cutoff a grading is a path over the places; ``high[c]`` and
    ``low[c]`` are the greatest and least sum of precisions over the paths with c relevant
    documents so far, each sum added in place order as :func:`values.ap` adds it. Past the
    cutoff (and outside the candidates) a hole only raises R."""
    kk = min(m, k)
    high[0], low[0] = 0.0, 0.0
    most = 0  # the most relevant documents a path can have so far
    fixed_within, beyond = 0, outside
    for i in range(kk):
        g = grade[i]
        if g >= 0 and g < rel:
            continue
        if g >= rel:
            fixed_within += 1
        elif not reaches:
            continue
        high[most + 1], low[most + 1] = -np.inf, np.inf
        for c in range(most, -1, -1):
            if high[c] == -np.inf:
                continue
            take_high, take_low = high[c] + (c + 1) / (i + 1), low[c] + (c + 1) / (i + 1)
            high[c + 1] = max(high[c + 1], take_high)
            low[c + 1] = min(low[c + 1], take_low)
            if g >= 0:  # a relevant document: no path leaves it out
                high[c], low[c] = -np.inf, np.inf
        most += 1
    for i in range(kk, m):
        beyond += grade[i] < 0
    fixed_beyond = fixed_relevant - fixed_within
    if not reaches:
        beyond = 0
    least, greatest = np.inf, -np.inf
    for c in range(most + 1):
        if high[c] == -np.inf:
            continue
        for side in range(2):
            relevant = c + fixed_beyond + (beyond if side else 0)
            if relevant == 0:
                least, greatest = _no_value(least, greatest, no_positive)
                continue
            greatest = max(greatest, high[c] / relevant)
            least = min(least, low[c] / relevant)
    return _finish(least, greatest)


@njit(cache=True, nogil=True)
def _no_value(least, greatest, no_positive):
    """A grading without a relevant document: its number under the spec's no_positive."""
    if no_positive == NO_POSITIVE_EXCLUDE:
        return least, greatest
    v = 1.0 if no_positive == NO_POSITIVE_ONE else 0.0
    return min(least, v), max(greatest, v)


@njit(cache=True, nogil=True)
def _with_no_value(least, greatest, no_positive):
    """RR's extremes with the grading of every hole non-relevant (no R) counted in."""
    least, greatest = _no_value(least, greatest, no_positive)
    return _finish(least, greatest)


@njit(cache=True, nogil=True)
def _finish(least, greatest):
    if greatest == -np.inf:
        return np.nan, np.nan
    return least, greatest
