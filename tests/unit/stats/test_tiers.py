"""Tiers of rankers (stats.tiers): the compact letters held to a brute-force oracle of the
maximal non-separated sets, the rank intervals to the order they are drawn from, and the rows a
report's pair entries give."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation_pipeline.stats.tiers import LETTERS, compact_letters, rank_intervals, tier_rows


def names(n: int) -> list[str]:
    return [f"r{i}" for i in range(n)]


def oracle_groups(order: list[str], separated: set[frozenset[str]]) -> set[frozenset[str]]:
    """Every subset with no separated pair inside, kept when no other such subset holds it."""
    free = [frozenset(subset) for size in range(1, len(order) + 1)
            for subset in itertools.combinations(order, size)
            if not any(frozenset(p) in separated for p in itertools.combinations(subset, 2))]
    return {s for s in free if not any(s < other for other in free)}


def letter_groups(letters: dict[str, str]) -> list[frozenset[str]]:
    used = sorted({c for s in letters.values() for c in s}, key=LETTERS.index)
    return [frozenset(r for r, s in letters.items() if c in s) for c in used]


@st.composite
def separation_graphs(draw) -> tuple[list[str], set[frozenset[str]]]:
    order = names(draw(st.integers(1, 8)))
    pairs = list(itertools.combinations(order, 2))
    keep = draw(st.lists(st.booleans(), min_size=len(pairs), max_size=len(pairs)))
    return order, {frozenset(p) for p, k in zip(pairs, keep) if k}


@settings(max_examples=300, deadline=None)
@given(separation_graphs(), st.randoms(use_true_random=False))
def test_letters_are_the_maximal_non_separated_sets(graph, random):
    order, separated = graph
    # Orientation and repeats of a pair must not matter.
    given_pairs = [tuple(random.sample(sorted(p), 2)) for p in separated] * 2
    random.shuffle(given_pairs)
    letters = compact_letters(order, given_pairs)
    groups = letter_groups(letters)
    assert len(groups) == len(set(groups))
    assert set(groups) == oracle_groups(order, separated)
    for a, b in itertools.combinations(order, 2):
        shares = bool(set(letters[a]) & set(letters[b]))
        assert shares == (frozenset((a, b)) not in separated)
    # Letters are consecutive from "a", given to groups in order of their members' positions.
    assert sorted({c for s in letters.values() for c in s}, key=LETTERS.index) == \
        list(LETTERS[:len(groups)])
    assert groups == sorted(groups, key=lambda g: sorted(order.index(r) for r in g))
    assert "a" in letters[order[0]]
    for s in letters.values():
        assert list(s) == sorted(s, key=LETTERS.index)


def test_worked_letters():
    assert compact_letters(["A", "B", "C"], []) == {"A": "a", "B": "a", "C": "a"}
    everyone = list(itertools.combinations("ABCD", 2))
    assert compact_letters(list("ABCD"), everyone) == {"A": "a", "B": "b", "C": "c", "D": "d"}
    assert compact_letters(list("ABC"), [("C", "A")]) == {"A": "a", "B": "ab", "C": "b"}
    assert compact_letters([], []) == {}
    assert compact_letters(["A"], []) == {"A": "a"}


def test_letters_past_z_then_too_many_groups():
    # All separated: one group per ranker. 52 groups reach "Z"; 53 do not fit.
    order = names(52)
    letters = compact_letters(order, itertools.combinations(order, 2))
    assert letters[order[26]] == "A" and letters[order[-1]] == "Z"
    order = names(53)
    with pytest.raises(ValueError, match=r"^53 letter groups.*leaderboard"):
        compact_letters(order, itertools.combinations(order, 2))
    # k disjoint separated pairs give 2^k groups: 6 give 64.
    order = names(12)
    with pytest.raises(ValueError, match=r"^64 letter groups"):
        compact_letters(order, zip(order[::2], order[1::2]))


def test_letters_refuse_unknown_names_and_self_pairs():
    with pytest.raises(ValueError, match="not in the order"):
        compact_letters(["A", "B"], [("A", "Z")])
    with pytest.raises(ValueError, match="itself"):
        compact_letters(["A", "B"], [("A", "A")])
    with pytest.raises(ValueError, match="repeated"):
        compact_letters(["A", "A"], [])


def test_worked_rank_intervals():
    assert rank_intervals(list("ABC"), [("A", "C")]) == {"A": (1, 2), "B": (1, 3), "C": (2, 3)}
    assert rank_intervals(list("ABC"), []) == {"A": (1, 3), "B": (1, 3), "C": (1, 3)}
    assert rank_intervals(list("ABC"), [("A", "B"), ("A", "C"), ("B", "C")]) == \
        {"A": (1, 1), "B": (2, 2), "C": (3, 3)}


@settings(max_examples=300, deadline=None)
@given(separation_graphs())
def test_rank_intervals_hold_the_true_order(graph):
    order, separated = graph
    # Consistent input: every separated pair points down the true order.
    above = [tuple(sorted(p, key=order.index)) for p in separated]
    intervals = rank_intervals(order, above)
    for rank, r in enumerate(order, start=1):
        low, high = intervals[r]
        assert low <= rank <= high
        assert low == 1 + sum(1 for _, b in above if b == r)
        assert high == len(order) - sum(1 for a, _ in above if a == r)
        if sum(1 for a, _ in above if a == r) == len(order) - 1:
            assert (low, high) == (1, 1)


def test_rank_intervals_refuse_contradictions():
    with pytest.raises(ValueError, match="each separated above the other"):
        rank_intervals(list("ABC"), [("A", "B"), ("B", "A")])
    with pytest.raises(ValueError, match="itself"):
        rank_intervals(list("ABC"), [("A", "A")])
    # A cycle is no pair in both directions: left to the caller's data.
    assert rank_intervals(list("ABC"), [("A", "B"), ("B", "C"), ("C", "A")]) == \
        {"A": (2, 2), "B": (2, 2), "C": (2, 2)}


def pair(first, second, measure, difference, p):
    return {"first": first, "second": second, "measure": measure,
            "mean_difference": difference, "p_value_holm": p}


def test_tier_rows():
    pairs = [
        # nDCG@10: A > B > C by mean, only A-C separated; B-C's p is None.
        pair("A", "B", "nDCG@10", -0.01, 0.40),
        pair("A", "C", "nDCG@10", -0.08, 0.01),
        pair("B", "C", "nDCG@10", -0.07, None),
        # RR@10: only against the baseline A; B-C was never tested: no rows.
        pair("A", "B", "RR@10", 0.02, 0.01),
        pair("A", "C", "RR@10", 0.03, 0.01),
        # AP@100: B and C tie on mean (name breaks it); p == alpha is not separated.
        pair("A", "B", "AP@100", -0.10, 0.049),
        pair("A", "C", "AP@100", -0.10, 0.05),
        pair("C", "B", "AP@100", 0.0, 0.90),
    ]
    means = {("A", "nDCG@10"): 0.50, ("B", "nDCG@10"): 0.49, ("C", "nDCG@10"): 0.42,
             ("A", "RR@10"): 0.3, ("B", "RR@10"): 0.32, ("C", "RR@10"): 0.33,
             ("A", "AP@100"): 0.40, ("C", "AP@100"): 0.30, ("B", "AP@100"): 0.30}
    rows = tier_rows(pairs, means, alpha=0.05)
    assert [(r["measure"], r["ranker"]) for r in rows] == [
        ("nDCG@10", "A"), ("nDCG@10", "B"), ("nDCG@10", "C"),
        ("AP@100", "A"), ("AP@100", "B"), ("AP@100", "C")]
    assert rows[:3] == [
        {"measure": "nDCG@10", "ranker": "A", "mean": 0.50, "rank": 1, "letters": "a",
         "rank_low": 1, "rank_high": 2},
        {"measure": "nDCG@10", "ranker": "B", "mean": 0.49, "rank": 2, "letters": "ab",
         "rank_low": 1, "rank_high": 3},
        {"measure": "nDCG@10", "ranker": "C", "mean": 0.42, "rank": 3, "letters": "b",
         "rank_low": 2, "rank_high": 3},
    ]
    assert [(r["ranker"], r["rank"], r["letters"], r["rank_low"], r["rank_high"])
            for r in rows[3:]] == [("A", 1, "a", 1, 2), ("B", 2, "b", 2, 3),
                                   ("C", 3, "ab", 1, 3)]


def test_tier_rows_missing_mean_and_direction_against_means():
    # B has no mean (last); A-C's paired difference says C above A though A's mean is higher
    # (means over different queries): kept as tested, the point rank falls outside, no error.
    pairs = [pair("A", "B", "m", 0.0, 0.5), pair("A", "C", "m", 0.05, 0.001),
             pair("B", "C", "m", 0.0, 0.5)]
    rows = tier_rows(pairs, {("A", "m"): 0.6, ("C", "m"): 0.5}, alpha=0.05)
    assert [(r["ranker"], r["mean"], r["rank"], r["letters"], r["rank_low"], r["rank_high"])
            for r in rows] == [("A", 0.6, 1, "a", 2, 3), ("C", 0.5, 2, "b", 1, 2),
                               ("B", None, 3, "ab", 1, 3)]
    assert tier_rows([], {}, alpha=0.05) == []
