"""The least and greatest value of a measure over every grading of a query's holes
(docs/CONTRACT.md, section 3, rule 7): every hole keeps its place, graded 0..top, and holes
outside the candidates (``ideal: all_judged``) only join R (and Bpref's N).

Each measure's algorithm is the one its declaration states (``declarations.Declaration.bounds``):
- monotone measures (P, Success, RR, DCG, ERR, RBP): every hole at the least and at the greatest
  grade (for a relevance threshold, grade 0 and the top grade when it reaches ``rel``). A
  grading without a relevant document has no RR; under ``no_positive: exclude`` the least is
  then that of the one relevant hole placed last;
- R@k and Rprec: for t relevant holes, the t heaviest or lightest at the cutoff, a scan over t;
- AP: for t relevant holes, the first t or the last t relevant, a scan over t;
- Bpref: every relevant / non-relevant grading, up to ``kinds.MAX_BPREF_HOLES`` holes;
- Judged@k: 1, since every grading judges every hole.
nDCG's are the NDCG kernel's own (``metric.kernels.bounds``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from evaluation_pipeline.measures.kinds import (
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
from evaluation_pipeline.metric.kernels.codes import NO_POSITIVE_EXCLUDE, NO_POSITIVE_ONE
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
    """(a grading's grades, AP's sums after each place, AP's relevant counts before each
    place, the holes' weights, AP's hole places)."""
    return (np.empty(longest, np.int64), np.empty(longest + 1), np.empty(longest + 1, np.int64),
            np.empty(longest + 1), np.empty(longest + 1, np.int64))


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
           fixed_relevant, fixed_nonrelevant, outside, n_holes, work):
    """(least, greatest) of the measure over every grading of the holes (``grade < 0`` in the
    whole list, plus ``outside``: ``n_holes`` in all); NaN for both when no grading gives a
    number."""
    a, after, before, weight, places = work
    top, average, no_positive = conventions.top_grade, conventions.average, conventions.no_positive
    reaches = top >= rel  # a hole can be relevant
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
        # Without tie groups these measures read the first k places only (a group may span k).
        read = m if average else min(m, k)
        _grade_holes(grade, read, g_lo, a)
        v_lo = _monotone(kind, score, a, m, k, rel, persistence, max_rel, gains, conventions)
        _grade_holes(grade, read, g_hi, a)
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
                _grade_holes(grade, m, 0, a)  # (every place: that hole may be past k)
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
        return _ap_bounds(grade, m, k, rel, top, reaches, fixed_relevant, outside, no_positive,
                          a, after, before, places)
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
def _ap_bounds(grade, m, k, rel, top, reaches, fixed_relevant, outside, no_positive, a, after,
               before, holes):
    """AP's extremes. For t relevant holes R is fixed, and the sum of precisions is greatest
    with the t first holes within the cutoff relevant and least with the t last (holes past the
    cutoff or outside the candidates first, adding to R alone): moving a relevant document up
    from place b to a hole at a < b raises its own term from (x + y)/b to x/a and every term of
    the y relevant ones between by 1/j >= 1/b. A scan over t adds one hole's terms at a time;
    the best t of each side is then scored as that grading (``values.ap``), so a bound is a
    grading's value to the last bit."""
    kk = min(m, k)
    n_in, beyond, fixed_within = 0, outside, 0
    base = 0.0  # the sum of precisions with every hole non-relevant
    for i in range(kk):
        before[i] = fixed_within  # the fixed relevant places before place i
        if grade[i] < 0:
            holes[n_in] = i
            n_in += 1
        elif grade[i] >= rel:
            fixed_within += 1
            base += fixed_within / (i + 1)
    for i in range(kk, m):
        beyond += grade[i] < 0
    # after[i]: the sum of 1/(j + 1) over the fixed relevant places j > i within the cutoff.
    running = 0.0
    for i in range(kk - 1, -1, -1):
        after[i] = running
        if grade[i] >= rel:
            running += 1.0 / (i + 1)
    n_holes = n_in + beyond if reaches else 0
    least, greatest = np.inf, -np.inf
    best_high, best_low = -1, -1
    for side in range(2):
        total, chosen_after = base, 0.0
        for t in range(n_holes + 1):
            if t > 0:
                if side == 0 and t <= n_in:
                    h = holes[t - 1]
                    total += (before[h] + t) / (h + 1) + after[h]
                elif side == 1 and t > beyond:
                    h = holes[n_in - (t - beyond)]
                    total += (before[h] + 1) / (h + 1) + after[h] + \
                        chosen_after
                    chosen_after += 1.0 / (h + 1)
            relevant = fixed_relevant + t
            if relevant == 0:
                continue  # every hole non-relevant and no R: counted below
            v = total / relevant
            if side == 0 and v > greatest:
                greatest, best_high = v, t
            if side == 1 and v < least:
                least, best_low = v, t
    for side in range(2):
        t = best_high if side == 0 else best_low
        if t < 0:
            continue
        # That grading's AP (``values.ap``'s sum), its holes within the cutoff read in place:
        # the first min(t, n_in) relevant (side 0), or the last max(t - beyond, 0) (side 1).
        first = min(t, n_in) if side == 0 else 0
        last = n_in - max(t - beyond, 0) if side == 1 else n_in
        total, found, hole = 0.0, 0, 0
        for i in range(kk):
            g = grade[i]
            if g < 0:
                g = top if hole < first or hole >= last else 0
                hole += 1
            if g >= rel:
                found += 1
                total += found / (i + 1)
        if side == 0:
            greatest = total / (fixed_relevant + t)
        else:
            least = total / (fixed_relevant + t)
    if fixed_relevant == 0:
        least, greatest = _no_value(least, greatest, no_positive)
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
