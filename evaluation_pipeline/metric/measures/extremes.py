"""The least and greatest value of a measure over every grading of a query's holes
(docs/CONTRACT.md, section 3, rule 7): every hole keeps its place, graded 0..top, and holes
outside the candidates (``ideal: all_judged``) only join R (and Bpref's N).

Each measure's algorithm is the one its declaration states (``declarations.Declaration.bounds``):
- monotone measures (P, Success, RR, DCG, ERR, RBP): every hole at the least and at the greatest
  grade (for a relevance threshold, grade 0 and the top grade when it reaches ``rel``). A
  grading without a relevant document has no RR; under ``no_positive: exclude`` the least is
  then that of the one relevant hole placed last. Without tie groups RR's two gradings are
  the first place that is relevant and the first that may be (:func:`rr_bounds`);
- R@k and Rprec: for t relevant holes, the t heaviest or lightest at the cutoff, a scan over t.
  Without tie groups R@k's weights are 1 within k and 0 past it, so its value over t is
  monotone between a few turning points, which are scored alone (:func:`recall_bounds`);
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
    """(a grading's grades or AP's fixed relevant places, AP's sums before each hole, AP's
    fixed relevant counts before each hole, the holes' weights or AP's sums after each hole,
    AP's hole places, the table of :func:`quotients` for the first ``longest`` places, up to
    ``QUOTIENT_PLACES``)."""
    return (np.empty(longest, np.int64), np.empty(longest + 1), np.empty(longest + 1, np.int64),
            np.empty(longest + 1), np.empty(longest + 1, np.int64),
            quotients(min(longest, QUOTIENT_PLACES)))


# AP's terms f / (i + 1) (f relevant documents down to place i + 1) are read from a table for
# the first places instead of divided: the same division, made once per table entry. 256
# places make a table of 263 kB.
QUOTIENT_PLACES = 256


@njit(cache=True, nogil=True)
def quotients(places):
    """``table[i * (i + 1) // 2 + f - 1] = f / (i + 1)`` for 0 <= i < places, 1 <= f <= i + 1:
    each the very division :func:`values.ap` makes."""
    table = np.empty(places * (places + 1) // 2)
    for i in range(places):
        row = i * (i + 1) // 2
        for f in range(1, i + 2):
            table[row + f - 1] = f / (i + 1)
    return table


@njit(cache=True, nogil=True, inline="always")
def _quotient(table, f, i):
    """f / (i + 1), from ``table`` (:func:`quotients`) when it holds place i."""
    row = i * (i + 1) // 2
    if row < len(table):
        return table[row + f - 1]
    return f / (i + 1)


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
    a, after, before, weight, places, table = work
    top, average, no_positive = conventions.top_grade, conventions.average, conventions.no_positive
    reaches = top >= rel  # a hole can be relevant
    least, greatest = np.inf, -np.inf
    if kind == KIND_JUDGED:
        return 1.0, 1.0
    if kind == KIND_RR and not average:
        return rr_bounds(grade, m, k, rel, reaches, fixed_relevant, outside, n_holes,
                         no_positive)
    if kind == KIND_R and not average:
        return recall_bounds(grade, m, k, rel, reaches, fixed_relevant, outside, n_holes,
                             no_positive)
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
        return ap_bounds(grade, m, k, rel, reaches, fixed_relevant, outside, no_positive,
                         table, places, before, after, weight, a)
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
def rr_bounds(grade, m, k, rel, reaches, fixed_relevant, outside, n_holes, no_positive):
    """RR's extremes without tie groups (``rel >= 1``): each place its own group, so RR is
    1 / (p + 1) for the first relevant place p within k (``values.rr``'s own division), and
    the two gradings of :func:`bounds` are read off two places: the first graded relevant one
    (every hole non-relevant) and the first that is a hole or relevant (every hole relevant)."""
    kk = min(m, k)
    first_fixed, first_any = kk, kk
    for i in range(kk):
        if grade[i] >= rel:
            first_fixed = i
            first_any = min(first_any, i)
            break
        if grade[i] < 0 and first_any == kk:
            first_any = i
    v_lo = 1.0 / (first_fixed + 1) if first_fixed < kk else 0.0
    v_hi = v_lo
    if reaches:
        v_hi = 1.0 / (first_any + 1) if first_any < kk else 0.0
    if fixed_relevant > 0:
        return v_lo, v_hi
    least, greatest = np.inf, -np.inf
    if reaches and n_holes > 0:
        greatest = v_hi
        if outside > 0:
            least = 0.0  # a relevant document outside the list: RR 0
        else:
            # The one relevant hole placed last (the first relevant place, unless a graded
            # one comes first).
            first = first_fixed
            for i in range(m - 1, -1, -1):
                if grade[i] < 0:
                    first = min(first, i)
                    break
            least = 1.0 / (first + 1) if first < kk else 0.0
    return _with_no_value(least, greatest, no_positive)


@njit(cache=True, nogil=True)
def recall_bounds(grade, m, k, rel, reaches, fixed_relevant, outside, n_holes, no_positive):
    """R@k's extremes without tie groups: a hole weighs 1 within k, 0 past it or outside the
    list, so with t relevant holes the heaviest choice counts min(t, w) of them and the
    lightest max(0, t - z) (w holes within k, z the others), over R + t. Each is a ratio of
    integers, monotone in t between the turning points t = w and t = z, so its extremes over
    t are at the ends of those stretches: the same divisions :func:`bounds`' scan makes, of
    the t it would keep."""
    within, in_holes = 0, 0
    for i in range(min(m, k)):
        within += grade[i] >= rel
        in_holes += grade[i] < 0
    fixed = float(within)
    reach = n_holes if reaches else 0
    zero = n_holes - in_holes
    least, greatest = np.inf, -np.inf
    if fixed_relevant == 0:
        least, greatest = _no_value(least, greatest, no_positive)
    first = 0 if fixed_relevant > 0 else 1  # the least t with R > 0
    if first <= reach:
        for t in (first, min(max(in_holes, first), reach)):
            greatest = max(greatest, (fixed + min(t, in_holes)) / (fixed_relevant + t))
        for t in (max(min(zero, reach), first), reach):
            least = min(least, (fixed + max(t - zero, 0)) / (fixed_relevant + t))
    return _finish(least, greatest)


@njit(cache=True, nogil=True)
def ap_bounds(grade, m, k, rel, reaches, fixed_relevant, outside, no_positive, table, holes,
              counts, sums, after, fixed):
    """AP's extremes (:func:`ap_sum_and_bounds`)."""
    _, least, greatest = ap_sum_and_bounds(grade, m, k, rel, reaches, fixed_relevant, outside,
                                           no_positive, table, holes, counts, sums, after, fixed)
    return least, greatest


@njit(cache=True, nogil=True)
def ap_sum_and_bounds(grade, m, k, rel, reaches, fixed_relevant, outside, no_positive, table,
                      holes, counts, sums, after, fixed):
    """(AP's sum of precisions with every hole non-relevant, its least, its greatest).

    For t relevant holes R is fixed, and the sum of precisions is greatest with the t first
    holes within the cutoff relevant and least with the t last (holes past the cutoff or
    outside the candidates first, adding to R alone): moving a relevant document up from place
    b to a hole at a < b raises its own term from (x + y)/b to x/a and every term of the y
    relevant ones between by 1/j >= 1/b. A scan over t adds one hole's terms at a time, both
    sides at once; the best t of each side is then scored as that grading (``values.ap``'s
    sum, term by term), so a bound is a grading's value to the last bit. The least side's scan
    starts at t = the holes with nothing to add (past the cutoff or outside): below it the sum
    is that of every hole non-relevant over a smaller R, never less; the greatest side's ends
    at the last hole within the cutoff: past it R alone grows.

    The scratch: ``holes``, the places of the holes within the cutoff; ``counts`` and
    ``sums``, the fixed relevant places before each and ``values.ap``'s running sum there;
    ``fixed``, the fixed relevant places, and ``after[f]`` the sum of 1/(j + 1) over
    ``fixed[f:]``, added from the last; ``table``, :func:`quotients`."""
    kk = min(m, k)
    n_in, n_fixed = 0, 0
    base = 0.0  # the sum of precisions, every hole non-relevant
    every = 0.0  # and with every hole within the cutoff relevant
    for i in range(kk):
        g = grade[i]
        if g < 0:
            holes[n_in], counts[n_in], sums[n_in] = i, n_fixed, base
            n_in += 1
        elif g >= rel:
            fixed[n_fixed] = i
            n_fixed += 1
            base += _quotient(table, n_fixed, i)
        else:
            continue
        every += _quotient(table, n_in + n_fixed, i)
    beyond = outside
    for i in range(kk, m):
        beyond += grade[i] < 0
    running = 0.0
    after[n_fixed] = 0.0
    for f in range(n_fixed - 1, -1, -1):
        running += _quotient(table, 1, fixed[f])
        after[f] = running
    if not reaches:
        n_in, beyond = 0, 0
    # Each side's best so far as a ratio, sum / R, compared as ``_above`` does: as the
    # division each would round to, without dividing where they are far apart.
    high_sum, high_r, best_high = 0.0, 0, -1
    low_sum, low_r, best_low = 0.0, 0, -1
    if fixed_relevant > 0:
        high_sum, high_r, best_high = base, fixed_relevant, 0
    if fixed_relevant + beyond > 0:
        low_sum, low_r, best_low = base, fixed_relevant + beyond, beyond
    high, low, chosen_after = base, base, 0.0
    for t in range(1, n_in + 1):
        n = t - 1  # the greatest side: the t-th hole turns relevant
        high += _quotient(table, counts[n] + t, holes[n]) + after[counts[n]]
        if best_high < 0 or _above(high, fixed_relevant + t, high_sum, high_r):
            high_sum, high_r, best_high = high, fixed_relevant + t, t
        n = n_in - t  # the least side: the t-th hole from the end
        h = holes[n]
        low += _quotient(table, counts[n] + 1, h) + after[counts[n]] + chosen_after
        chosen_after += _quotient(table, 1, h)
        if best_low < 0 or _above(low_sum, low_r, low, fixed_relevant + beyond + t):
            low_sum, low_r, best_low = low, fixed_relevant + beyond + t, beyond + t
    if best_high < 0 and beyond > 0:
        best_high = n_in + 1  # no R before: the first t that has one
    least, greatest = np.inf, -np.inf
    for side in range(2):
        t = best_high if side == 0 else best_low
        if t < 0:
            continue
        # That grading's AP: its relevant holes within the cutoff are holes[lo:hi], the
        # first min(t, n_in) (side 0) or the last t - beyond (side 1); up to the first of
        # them the sum is that of every hole non-relevant.
        lo, hi = (0, min(t, n_in)) if side == 0 else (n_in - max(t - beyond, 0), n_in)
        if lo == hi:
            total = base
        elif lo == 0 and hi == n_in:
            total = every
        else:
            total, found = sums[lo], counts[lo]
            f, n = found, lo
            while n < hi or f < n_fixed:
                if n < hi and (f >= n_fixed or holes[n] < fixed[f]):
                    place = holes[n]
                    n += 1
                else:
                    place = fixed[f]
                    f += 1
                found += 1
                total += _quotient(table, found, place)
        if side == 0:
            greatest = total / (fixed_relevant + t)
        else:
            least = total / (fixed_relevant + t)
    if fixed_relevant == 0:
        least, greatest = _no_value(least, greatest, no_positive)
    least, greatest = _finish(least, greatest)
    return base, least, greatest


# Ratios this far apart (relatively) round apart, so the order of the roundings is theirs.
_APART_ABOVE = 1.0 + 2.0 ** -30
_APART_BELOW = 1.0 - 2.0 ** -30


@njit(cache=True, nogil=True, inline="always")
def _above(x, r, y, s):
    """Whether x / r > y / s as the two divisions round (x, y >= 0; r, s > 0): decided by
    the products x * s and y * r where those differ by far more than their rounding (2^-30
    against 2^-53 of each product), else by the divisions themselves."""
    a, b = x * s, y * r
    if a > b * _APART_ABOVE:
        return True
    if a < b * _APART_BELOW:
        return False
    return x / r > y / s


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
