"""The one number formatter of every table and sentence a report prints: "n/a" for no number.

NDCG and p-values print with 4 decimals, intervals with 3; a difference carries its sign.
"""

from __future__ import annotations

from evaluation_pipeline.stats.inference import at_floor, below_floor
from schemas.columns import measure_of, ndcg_name

NO_NUMBER = "n/a"


def number(value: float | None, digits: int = 4, signed: bool = False,
           missing: str = NO_NUMBER) -> str:
    """``missing`` stands for no number: "" where a blank cell says it better (no previous
    night to compare with, no attribution)."""
    if value is None:
        return missing
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def share(value: float | None) -> str:
    """A slice's share of a change, in percent; "n/a" where the change is not told from zero
    (``aggregation.sums.Numbers.pair_slices``)."""
    return NO_NUMBER if value is None else f"{value:.0%}"


def p_shown(entry, field: str = "p_value", missing: str = NO_NUMBER) -> str:
    """A comparison's p (``p_value``) or adjusted p (``p_value_holm``) as the tables print it:
    at the test's floor, "< 0.0005" (the value rounded up: the p is below it), and its
    adjusted p likewise; else its 4 decimals."""
    value = entry.get(field)
    if value is None:
        return missing
    return below_floor(value) if at_floor(entry) else number(value)


def floor_notes(entries) -> list[str]:
    """The note under a table with a p at the floor: how many resamples it is beyond."""
    counts = sorted({e["test_resamples"] for e in entries if at_floor(e)})
    return [f"p < ...: beyond all {count:,} sign-flip resamples (the test's floor, "
            f"1/{count + 1:,}); more resamples (--bootstrap) would give it a value"
            for count in counts]


def which_measure(entry) -> str:
    """Where a table names a measure by its K (the spec's own nDCG@K, as tables did before the
    other measures): the K; any other measure by its canonical name."""
    measure, cutoff = measure_of(entry), entry["cutoff"]
    return str(cutoff) if cutoff is not None and measure == ndcg_name(cutoff) else measure


def holm_families(entries) -> list[str]:
    """The Holm families of ``entries`` (comparisons or ranker pairs), each once in their
    order: the words beside every table of adjusted p-values, so each names its tests."""
    return list(dict.fromkeys(e["holm_family"] for e in entries if e.get("holm_family")))


def adjusted_interval(entry, digits: int = 3) -> str:
    """A comparison's adjusted interval (the sign-flip test inverted at its family's level),
    ``[-0.071, -0.004]``; "unbounded" where the test can reject no shift at that level; ""
    for an entry recorded before adjusted intervals or without a p."""
    if entry.get("adjusted_level") is None:
        return ""
    if entry.get("difference_low_adjusted") is None:
        return "unbounded"
    return interval([entry["difference_low_adjusted"], entry["difference_high_adjusted"]],
                    digits, signed=True)


def adjusted_notes(entries, power: float | None) -> list[str]:
    """The note under a table with adjusted intervals: what they are, and the ``power`` of
    the detectable effects beside them."""
    levels = sorted({e["adjusted_level"] for e in entries if e.get("adjusted_level")})
    if not levels:
        return []
    spread = (f"{levels[0]:.2%}" if len(levels) == 1
              else f"{levels[0]:.2%} to {levels[-1]:.2%}")
    return [f"adjusted interval: the sign-flip test inverted at the level its Holm family "
            f"holds it to ({spread}); it excludes 0 exactly when p (Holm) is below alpha. "
            f"detectable: the least change that test finds with probability "
            f"{'the declared power' if power is None else f'{power:.0%}'}"]


def tier_cells(tier: dict) -> list[str]:
    """A ranker's row of the tiers table: measure, ranker, mean, letters, rank interval."""
    low, high = tier["rank_low"], tier["rank_high"]
    return [tier["measure"], tier["ranker"], number(tier["mean"]), tier["letters"],
            str(low) if low == high else f"{low}-{high}"]


TIER_HEADERS = ["measure", "ranker", "mean", "tier", "rank"]


def tiers_note(alpha: float | None) -> str:
    """What the tiers table says, under it."""
    level = "alpha" if alpha is None else f"{alpha:g}"
    return (f"tier: rankers that share a letter are not told apart by their pair's Holm-adjusted "
            f"test at {level}; rank: the ranks those tests allow")


def interval(pair: list | tuple | None, digits: int = 3, signed: bool = False) -> str:
    """``[low, high]``, or "" when there is none (fewer than two queries with a number)."""
    if not pair or pair[0] is None:
        return ""
    return f"[{number(pair[0], digits, signed)}, {number(pair[1], digits, signed)}]"


def with_interval(value: float | None, pair: list | tuple | None) -> str:
    """A mean and its interval in one cell: ``0.8083 [0.755, 0.860]``."""
    bounds = interval(pair)
    return f"{number(value)} {bounds}" if bounds else number(value)

