"""Each measure's value over one ranked list (compiled steps, called by the pass of
:mod:`.kernels` and into the bounds of :mod:`.extremes`).

A list is ``score[:n]`` (equal adjacent scores tie under ``average``) and ``grade[:n]``, where a
hole kept in place reads ``NOT_RELEVANT``: below every ``rel``, gain 0. The arithmetic follows
trec_eval's term by term (``rel_so_far / (i + 1)``, one division per term), so values agree with
it to the last bit where the definitions agree. Under ``average`` a linear measure gives each
member of a tie group the group's mean times the weights of the places it spans (the expected
value over every order of the group); RR and Success take the group's exact probabilities.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from evaluation_pipeline.metric.kernels.codes import NO_POSITIVE_ONE, NO_POSITIVE_ZERO

NOT_RELEVANT = -1  # the grade of a hole kept in the list: below every rel, gain 0


@njit(cache=True, nogil=True)
def group_end(score, p, n, average):
    """One past the last place of the tie group that starts at place p (0-based)."""
    q = p + 1
    if average:
        while q < n and score[q] == score[p]:
            q += 1
    return q


@njit(cache=True, nogil=True)
def count_within(score, grade, n, k, rel, average):
    """The relevant documents (grade >= rel) among the first k places; under ``average`` a
    group spanning k counts its share of relevant members for each of its places within k."""
    if not average:  # every place its own group: each relevant one adds 1/1 x 1, exactly 1
        c = 0
        for i in range(min(n, k)):
            c += grade[i] >= rel
        return float(c)
    total = 0.0
    p = 0
    while p < n and p < k:
        q = group_end(score, p, n, average)
        c = 0
        for i in range(p, q):
            c += grade[i] >= rel
        if c:
            total += c / (q - p) * (min(q, k) - p)
        p = q
    return total


@njit(cache=True, nogil=True)
def precision(score, grade, n, k, rel, average):
    return count_within(score, grade, n, k, rel, average) / k


@njit(cache=True, nogil=True)
def recall(score, grade, n, k, rel, relevant, average):
    return count_within(score, grade, n, k, rel, average) / relevant


@njit(cache=True, nogil=True)
def rprec(score, grade, n, rel, relevant, average):
    return count_within(score, grade, n, relevant, rel, average) / relevant


@njit(cache=True, nogil=True)
def judged_share(score, grade, n, k, average):
    """Judged@k: graded places (grade >= 0) among the first min(k, n), as judged_at_k."""
    return count_within(score, grade, n, k, 0, average) / min(k, n)


@njit(cache=True, nogil=True)
def success(score, grade, n, k, rel, average):
    p = 0
    while p < n and p < k:
        q = group_end(score, p, n, average)
        c = 0
        for i in range(p, q):
            c += grade[i] >= rel
        if c:
            if q <= k:
                return 1.0
            # The group spans k: the chance that none of its k - p places within k is relevant.
            size, miss = q - p, 1.0
            for i in range(k - p):
                miss *= (size - c - i) / (size - i)
            return 1.0 - miss
        p = q
    return 0.0


@njit(cache=True, nogil=True)
def rr(score, grade, n, k, rel, average):
    p = 0
    while p < n and p < k:
        q = group_end(score, p, n, average)
        c = 0
        for i in range(p, q):
            c += grade[i] >= rel
        if c:
            # The first relevant member of a shuffled group of q - p with c relevant is at its
            # i-th place with chance C(q-p-i, c-1) / C(q-p, c).
            size, chance, total = q - p, c / (q - p), 0.0
            for i in range(1, min(size - c + 1, k - p) + 1):
                total += chance / (p + i)
                if i < size:
                    chance *= (size - i - c + 1) / (size - i)
            return total
        p = q
    return 0.0


@njit(cache=True, nogil=True)
def ap(grade, n, k, rel, relevant):
    total, found = 0.0, 0
    for i in range(min(n, k)):
        if grade[i] >= rel:
            found += 1
            total += found / (i + 1)
    return total / relevant


@njit(cache=True, nogil=True)
def bpref(grade, n, rel, relevant, nonrelevant):
    """trec_eval's m_bpref.c over the graded list."""
    total, above = 0.0, 0
    for i in range(n):
        if grade[i] < 0:
            continue
        if grade[i] >= rel:
            if above > 0:
                total += 1.0 - min(above, relevant) / min(relevant, nonrelevant)
            else:
                total += 1.0
        else:
            above += 1
    return total / relevant


@njit(cache=True, nogil=True)
def dcg(score, grade, n, k, gains, discount, prefix, average):
    total = 0.0
    p = 0
    while p < n and p < k:
        q = group_end(score, p, n, average)
        if q == p + 1:
            total += (gains[grade[p]] if grade[p] >= 0 else 0.0) * discount[p]
        else:
            mean = 0.0
            for i in range(p, q):
                mean += gains[grade[i]] if grade[i] >= 0 else 0.0
            total += mean / (q - p) * (prefix[min(q, k)] - prefix[p])
        p = q
    return total


@njit(cache=True, nogil=True)
def err(grade, n, k, max_rel):
    """gdeval's ERR: R = (2^g - 1) / 2^max_rel, a cascade over the places."""
    total, still = 0.0, 1.0
    scale = 2.0 ** max_rel
    for i in range(min(n, k)):
        if grade[i] > 0:
            chance = (2.0 ** grade[i] - 1.0) / scale
            total += still * chance / (i + 1)
            still *= 1.0 - chance
    return total


@njit(cache=True, nogil=True)
def rbp_gain(g, rel, max_rel):
    if rel > 0:
        return 1.0 if g >= rel else 0.0
    return g / max_rel if g > 0 else 0.0


@njit(cache=True, nogil=True)
def rbp(score, grade, n, k, rel, persistence, max_rel, average):
    total, weight = 0.0, 1.0 - persistence
    p = 0
    while p < n and p < k:
        q = group_end(score, p, n, average)
        mean, spanned = 0.0, 0.0
        for i in range(p, q):
            mean += rbp_gain(grade[i], rel, max_rel)
            if i < k:
                spanned += weight
                weight *= persistence
        total += mean / (q - p) * spanned if q > p + 1 else mean * spanned
        p = q
    return total


@njit(cache=True, nogil=True)
def no_positive_value(code):
    """What a query without a relevant document scores under the spec's no_positive."""
    if code == NO_POSITIVE_ZERO:
        return 0.0
    if code == NO_POSITIVE_ONE:
        return 1.0
    return np.nan
