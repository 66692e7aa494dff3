"""The shortcuts of the measures' pass give the very numbers of the general step, bit for bit:
a plan of RR, R@k and AP alone without tie groups (``kernels.lean_measures``) against the same
measures scored beside one that takes the general step (``kernels.query_measures``); RR's and
R@k's bounds read off a few places and AP's scan (its table of quotients, its comparisons by
products, its sums kept from the first pass) against the scans they replace, written here in
plain Python over random lists; and lists whose holes outside them outnumber both the list and
the judgments (each hole has a weight in the scratch)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from evaluation_pipeline.metric import ndcg
from evaluation_pipeline.metric.hashing import pool_blocks
from evaluation_pipeline.metric.kernels.codes import NO_POSITIVE_ZERO
from evaluation_pipeline.spec import profile
from tests.unit.metric.measures.test_one_pass import pool, separate

LEAN = ["RR(rel=2)@10", "AP(rel=2)@100", "R@100", "RR", "AP@5", "R(rel=3)@3", "RR(rel=4)@2"]


def lean_specs():
    trec = profile("trec_eval")
    return {
        "trec_eval": trec,
        "no_positive one": trec.replace(no_positive="one"),
        "no_positive exclude, unknown incomplete": trec.replace(no_positive="exclude",
                                                                unknown="incomplete"),
        "doc_id ties, candidates' ideal": trec.replace(ties="doc_id", ideal="candidates"),
        "max_grade 1 (no hole reaches rel=2)": trec.replace(max_grade=1),
        "max_grade 6": trec.replace(max_grade=6),
    }


def scored(judgments, candidates, spec, rankers):
    """(the one pass's measures of ``spec``, ``separate``'s, the kernel's plan and
    conventions)."""
    seen = []
    original = ndcg._score_halves

    def spy(kernel, arguments, more=()):
        results = original(kernel, arguments, more)
        seen.append((arguments, more, results))
        return results

    ndcg._score_halves = spy
    try:
        blocks = pool_blocks(candidates)
        index = ndcg.index_judgments(judgments, spec)
        holes = ndcg.pool_holes.of_pool(blocks.frame, rankers, index.grades, spec)
        ndcg.score_candidates(blocks, index, spec, holes)
    finally:
        ndcg._score_halves = original
    (arguments, more, results), = seen
    return results[8:], separate(*arguments, index, spec), more[1:]


@pytest.mark.parametrize("name", list(lean_specs()))
@pytest.mark.parametrize("seed", [3, 4])
def test_the_lean_plan_equals_the_general_step(name, seed):
    from evaluation_pipeline.metric.measures.kernels import is_lean

    judgments, candidates = pool(seed)
    spec = lean_specs()[name]
    lean = spec.replace(measures=["nDCG@10", *LEAN])
    general = spec.replace(measures=["nDCG@10", *LEAN, "P@5"])  # P: the general step
    lean_pass, lean_ranked, lean_rules = scored(judgments, candidates, lean, 3)
    general_pass, general_ranked, general_rules = scored(judgments, candidates, general, 3)
    assert is_lean(*lean_rules) and not is_lean(*general_rules)
    n = len(LEAN)
    for got in (lean_pass, lean_ranked):
        for a, b in zip(got, general_pass):
            np.testing.assert_array_equal(a, b[:, :n], strict=True)
    for a, b in zip(general_ranked, general_pass):
        np.testing.assert_array_equal(a, b, strict=True)
    least, greatest = lean_pass[2], lean_pass[3]
    assert (least < greatest).any() and np.isfinite(lean_pass[0]).any()


# The scans the shortcuts replace, in plain Python (IEEE doubles, the same operations in the
# same order): each side's best t by the rounded division, then that grading scored again.

def ap_scan(grade, k, rel, reaches, fixed_relevant, outside):
    m = len(grade)
    kk = min(m, k)
    holes, before, base, fixed_within, beyond = [], [], 0.0, 0, outside
    for i in range(kk):
        before.append(fixed_within)
        if grade[i] < 0:
            holes.append(i)
        elif grade[i] >= rel:
            fixed_within += 1
            base += fixed_within / (i + 1)
    beyond += sum(g < 0 for g in grade[kk:])
    after, running = [0.0] * kk, 0.0
    for i in range(kk - 1, -1, -1):
        after[i] = running
        if grade[i] >= rel:
            running += 1.0 / (i + 1)
    n_in = len(holes)
    n_holes = n_in + beyond if reaches else 0
    best = [-1, -1]
    extremes = [-np.inf, np.inf]
    for side in range(2):
        total, chosen_after = base, 0.0
        for t in range(n_holes + 1):
            if t > 0:
                if side == 0 and t <= n_in:
                    h = holes[t - 1]
                    total += (before[h] + t) / (h + 1) + after[h]
                elif side == 1 and t > beyond:
                    h = holes[n_in - (t - beyond)]
                    total += (before[h] + 1) / (h + 1) + after[h] + chosen_after
                    chosen_after += 1.0 / (h + 1)
            if fixed_relevant + t == 0:
                continue
            v = total / (fixed_relevant + t)
            if (side == 0 and v > extremes[0]) or (side == 1 and v < extremes[1]):
                extremes[side], best[side] = v, t
    for side in range(2):
        t = best[side]
        if t < 0:
            continue
        first = min(t, n_in) if side == 0 else 0
        last = n_in - max(t - beyond, 0) if side == 1 else n_in
        total, found, hole = 0.0, 0, 0
        for i in range(kk):
            g = grade[i]
            if g < 0:
                g = rel if hole < first or hole >= last else 0
                hole += 1
            if g >= rel:
                found += 1
                total += found / (i + 1)
        extremes[side] = total / (fixed_relevant + t)
    return extremes[1], extremes[0]


def recall_scan(grade, k, rel, reaches, fixed_relevant, outside):
    m = len(grade)
    fixed = float(sum(g >= rel for g in grade[:min(m, k)]))
    weight = [1.0 if i < k else 0.0 for i in range(m) if grade[i] < 0] + [0.0] * outside
    h = len(weight)
    least, greatest = np.inf, -np.inf
    heaviest, lightest = 0.0, 0.0
    for t in range((h if reaches else 0) + 1):
        if t > 0:
            heaviest += weight[t - 1]
            lightest += weight[h - t]
        if fixed_relevant + t == 0:
            continue
        greatest = max(greatest, (fixed + heaviest) / (fixed_relevant + t))
        least = min(least, (fixed + lightest) / (fixed_relevant + t))
    return least, greatest


def rr_scan(grade, k, rel, reaches, fixed_relevant, outside):
    def rr(grades):
        for i, g in enumerate(grades[:k]):
            if g >= rel:
                return 0.0 + 1.0 / (i + 1)
        return 0.0

    low = rr([max(g, 0) for g in grade])
    high = rr([rel if g < 0 else g for g in grade]) if reaches else low
    if fixed_relevant > 0:
        return low, high
    if not reaches or (outside == 0 and all(g >= 0 for g in grade)):
        return np.inf, -np.inf
    if outside > 0:
        return 0.0, high
    last = max(i for i, g in enumerate(grade) if g < 0)
    return rr([rel if i == last else max(g, 0) for i, g in enumerate(grade)]), high


def random_lists(seed, n):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        m = int(rng.integers(0, 40)) if rng.random() < 0.7 else int(rng.integers(0, 300))
        k = int(rng.integers(1, 12)) if rng.random() < 0.5 else int(rng.integers(1, 320))
        rel = int(rng.integers(1, 4))
        p_hole, p_rel = rng.random(), rng.random()
        grade = [-1 if rng.random() < p_hole else int(rng.integers(rel, 5))
                 if rng.random() < p_rel else int(rng.integers(0, rel)) for _ in range(m)]
        fixed_relevant = sum(g >= rel for g in grade) + int(rng.integers(0, 3))
        if rng.random() < 0.2:
            fixed_relevant = 0
        outside = int(rng.integers(0, 3)) if rng.random() < 0.3 else 0
        yield grade, k, rel, bool(rng.random() < 0.85), fixed_relevant, outside


def bits(pair):
    return np.array(pair, np.float64).view(np.int64).tolist()


@pytest.mark.parametrize("places", [0, 16, 256], ids=["divided", "table of 16", "table"])
def test_the_bounds_shortcuts_are_the_scans_they_replace(places):
    from evaluation_pipeline.metric.measures import extremes

    longest = 400
    work = extremes.scratch(longest)[:5]
    table = extremes.quotients(places)
    for grade, k, rel, reaches, fixed_relevant, outside in random_lists(places, 1500):
        array = np.array(grade, np.int64)
        m = len(grade)
        n_holes = sum(g < 0 for g in grade) + outside
        least, greatest = extremes.ap_bounds(array, m, k, rel, reaches, fixed_relevant,
                                             outside, NO_POSITIVE_ZERO, table, work[4],
                                             work[2], work[1], work[3], work[0])
        expected = ap_scan(grade, k, rel, reaches, fixed_relevant, outside)
        if fixed_relevant == 0:  # every hole non-relevant scores 0 (no_positive: zero)
            expected = (min(expected[0], 0.0), max(expected[1], 0.0))
        assert bits((least, greatest)) == bits(expected), (grade, k, rel, fixed_relevant)
        if n_holes == 0:
            continue
        got = extremes.recall_bounds(array, m, k, rel, reaches, fixed_relevant, outside,
                                     n_holes, NO_POSITIVE_ZERO)
        expected = recall_scan(grade, k, rel, reaches, fixed_relevant, outside)
        if fixed_relevant == 0:
            expected = (min(expected[0], 0.0), max(expected[1], 0.0))
        assert bits(got) == bits(expected), (grade, k, rel, fixed_relevant)
        got = extremes.rr_bounds(array, m, k, rel, reaches, fixed_relevant, outside, n_holes,
                                 NO_POSITIVE_ZERO)
        expected = rr_scan(grade, k, rel, reaches, fixed_relevant, outside)
        if fixed_relevant == 0:
            expected = (min(expected[0], 0.0), max(expected[1], 0.0))
        assert bits(got) == bits(expected), (grade, k, rel, fixed_relevant)


def wide_pool(seed: int):
    """Three rankers over queries with few judgments, each returning most of 60 documents:
    a ranker's list has fewer places than its holes outside it and in it together."""
    rng = np.random.default_rng(seed)
    judgments = pl.DataFrame(
        [(f"q{q}", f"d{d}", int(rng.integers(0, 4)), "graded")
         for q in range(6) for d in range(60) if rng.random() < 0.05] + [
            ("q0", "d0", None, "unknown")],
        schema={"query_id": pl.String, "doc_id": pl.String, "grade": pl.Int64,
                "grade_status": pl.String}, orient="row")
    candidates = pl.DataFrame(
        [(f"r{r}", f"q{q}", f"d{d}", float(rng.integers(0, 40)))
         for r in range(3) for q in range(6) for d in range(60) if rng.random() < 0.5],
        schema={"ranker": pl.String, "query_id": pl.String, "doc_id": pl.String,
                "score": pl.Float64}, orient="row")
    return judgments, candidates


@pytest.mark.parametrize("profile_name", ["trec_eval", "default"])
def test_lists_with_more_holes_outside_than_places(profile_name):
    spec = profile(profile_name).replace(measures=["nDCG@10", "R@100", "Rprec", "R(rel=2)@5"])
    judgments, candidates = wide_pool(5)
    one_pass, again, _ = scored(judgments, candidates, spec, 3)
    for got, expected in zip(one_pass, again):
        np.testing.assert_array_equal(got, expected, strict=True)
    assert np.isfinite(one_pass[2]).any()
