"""Tiers of rankers on one measure: compact letters and rank intervals from pairwise tests.

A report tests every pair of rankers on each measure and adjusts the p-values over the declared
family (Holm, :mod:`evaluation_pipeline.stats.family`). Two rankers are *separated* on a measure
when their pair's adjusted p is below alpha, that is, when the family's adjusted test declares
them different. The tiers say the same thing as those decisions, ranker by ranker:

- letters: the compact letter display (Piepho 2004, "An algorithm for a letter-based
  representation of all-pairwise comparisons", J. Comp. Graph. Stat. 13(2)), built by
  insert-absorb. Two rankers share a letter exactly when they are not separated; each letter is
  a maximal set of mutually non-separated rankers, the one with the best ranker being "a".
- rank interval: the ranks a ranker could take given which pairs are separated, Holm's adjusted
  decisions read as a rank confidence interval from pairwise comparisons (in the style of Hall &
  Miller and Al Mohamad et al.): it cannot rank above anyone separated above it, nor below anyone
  it is separated above.

Pure: no I/O, no Dagster.
"""

from __future__ import annotations

import math
import string
from collections.abc import Iterable, Mapping, Sequence

__all__ = ["LETTERS", "compact_letters", "rank_intervals", "tier_rows"]

# a..z, then A..Z: 52 letter groups, more than any leaderboard's display can be read by.
LETTERS = string.ascii_lowercase + string.ascii_uppercase


def _positions(order: Sequence[str]) -> dict[str, int]:
    position = {name: i for i, name in enumerate(order)}
    if len(position) != len(order):
        raise ValueError(f"rankers repeated in the order: {list(order)}")
    return position


def _index_pairs(position: Mapping[str, int],
                 pairs: Iterable[tuple[str, str]]) -> list[tuple[int, int]]:
    """Pairs of names as pairs of positions; an unknown name or a ranker paired with itself is
    a caller's mistake, not a comparison."""
    out = []
    for a, b in pairs:
        for name in (a, b):
            if name not in position:
                raise ValueError(f"ranker {name!r} is not in the order")
        if a == b:
            raise ValueError(f"ranker {a!r} paired with itself")
        out.append((position[a], position[b]))
    return out


def compact_letters(order: Sequence[str],
                    separated: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Each ranker's letters; ``order`` from best mean to worst, ``separated`` the unordered
    pairs that differ. Two rankers share a letter exactly when they are not separated.

    Insert-absorb: start with one group of everyone; for each separated pair, split every group
    holding both into a copy without one and a copy without the other, then drop every group
    contained in another. What is left are the maximal sets with no separated pair inside (the
    maximal independent sets of the separation graph), each once.

    Cost: each pair's step is quadratic in the number of groups, and the groups stay few on a
    leaderboard: rankers close in mean are the ones not separated, so the non-separated relation
    is near an interval graph, whose maximal cliques (our groups) number at most the rankers.
    That keeps ~60 rankers cheap; a graph with more than 52 groups cannot be shown anyway.

    Raises ValueError past 52 groups (a..z, A..Z).
    """
    position = _positions(order)
    edges = sorted({(min(i, j), max(i, j)) for i, j in _index_pairs(position, separated)})
    groups: list[frozenset[int]] = [frozenset(range(len(order)))] if order else []
    for i, j in edges:
        split: set[frozenset[int]] = set()
        for group in groups:
            if i in group and j in group:
                split.update((group - {i}, group - {j}))
            else:
                split.add(group)
        # Absorb: a group inside another adds no pair sharing a letter; the set drops repeats.
        groups = [g for g in split if not any(g < other for other in split)]
    if len(groups) > len(LETTERS):
        raise ValueError(
            f"{len(groups)} letter groups: more than the {len(LETTERS)} letters a-z, A-Z, and "
            "more than any leaderboard's display reads")
    # The group with the best ranker first, then by its next members: the same input always
    # gets the same letters, and each ranker's letters come out in alphabetical order.
    groups.sort(key=sorted)
    letters = {name: "" for name in order}
    for letter, group in zip(LETTERS, groups):
        for i in sorted(group):
            letters[order[i]] += letter
    return letters


def rank_intervals(order: Sequence[str],
                   above: Iterable[tuple[str, str]]) -> dict[str, tuple[int, int]]:
    """Each ranker's (best, worst) rank, 1 = best, given ``above``: (a, b) pairs where a is
    separated above b. A ranker ranks no better than 1 + the rankers separated above it and no
    worse than the count of rankers less those it is separated above.

    Raises ValueError on a ranker above itself or a pair in both directions. The point rank (a
    ranker's position in ``order``) lies inside when ``above`` agrees with the order; it is not
    checked here, as means over different queries may disagree with a pair's paired difference.
    """
    position = _positions(order)
    decided = set(_index_pairs(position, above))
    for a, b in decided:
        if (b, a) in decided:
            raise ValueError(f"{order[a]!r} and {order[b]!r} are each separated above the other")
    n = len(order)
    over = [0] * n  # rankers separated above each
    under = [0] * n  # rankers each is separated above
    for a, b in decided:
        over[b] += 1
        under[a] += 1
    # Neither count reaches n - 1 together with the other (no pair counts twice): low <= high.
    return {name: (1 + over[i], n - under[i]) for i, name in enumerate(order)}


def tier_rows(pairs: Sequence[Mapping], means: Mapping[tuple[str, str], float | None], *,
              alpha: float) -> list[dict]:
    """One row per (measure, ranker): its mean, rank, letters and rank interval.

    ``pairs``: a report's ranker-pair entries, each with ``first``, ``second``, ``measure``,
    ``mean_difference`` (second minus first) and ``p_value_holm``; ``means``: (ranker, measure)
    to the ranker's mean. Measures come in their first appearance in ``pairs``; within one, the
    rankers by mean descending (None last), ties by name, ``rank`` being that position.

    A pair is separated when its adjusted p is below ``alpha`` (p == alpha is not; None never
    is), above in the direction of its mean difference (positive: second above first; with no
    sign, the order's). A measure where some pair of its rankers was not tested (e.g. only
    comparisons against a baseline) gets no rows: its tiers need every pair.

    ``rank_low``/``rank_high`` bound the rank the ranker's paired comparisons allow. When the
    means are over different query sets, a pair's paired difference may point against the
    means' order; its direction is kept as tested, and the rank may then fall outside the
    interval (nothing is widened, nothing raised).
    """
    by_measure: dict[str, dict[frozenset[str], Mapping]] = {}
    for pair in pairs:
        if pair["first"] != pair["second"]:
            key = frozenset((pair["first"], pair["second"]))
            by_measure.setdefault(pair["measure"], {})[key] = pair
    rows: list[dict] = []
    for measure, tested in by_measure.items():
        rankers = {name for key in tested for name in key}
        if len(tested) < len(rankers) * (len(rankers) - 1) // 2:
            continue
        mean = {r: means.get((r, measure)) for r in rankers}
        order = sorted(rankers, key=lambda r: (mean[r] is None, -(mean[r] or 0.0), r))
        position = {r: i for i, r in enumerate(order)}
        separated, above = [], []
        for pair in tested.values():
            p = pair["p_value_holm"]
            if p is None or not p < alpha:
                continue
            first, second = pair["first"], pair["second"]
            separated.append((first, second))
            difference = pair["mean_difference"]
            if difference is not None and difference != 0 and not math.isnan(difference):
                above.append((second, first) if difference > 0 else (first, second))
            else:
                above.append(tuple(sorted((first, second), key=position.__getitem__)))
        letters = compact_letters(order, separated)
        interval = rank_intervals(order, above)
        rows.extend({"measure": measure, "ranker": r, "mean": mean[r], "rank": i + 1,
                     "letters": letters[r], "rank_low": interval[r][0],
                     "rank_high": interval[r][1]} for i, r in enumerate(order))
    return rows
