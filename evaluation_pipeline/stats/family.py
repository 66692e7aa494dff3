"""The multiple-comparison family (contract section 4): which tests one Holm adjustment spans.

A comparison tests one measure between two sides: two rankers of one evaluation (a ranker
pair: report.json's ``comparison``, ``ndcg-eval compare RESULTS``) or one ranker between two
evaluations (its change: the nightly watch, ``ndcg-eval compare A B``). Each kind is adjusted
on its own, and within a kind the spec's ``family`` declares which measures' tests are adjusted
together. Every place that shows an adjusted p reads it from here, so one pair of evaluations
gets one adjusted p wherever it is shown, with its family named beside it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from evaluation_pipeline.spec import DEFAULT_FAMILY
from evaluation_pipeline.stats.inference import holm, holm_scales
from schemas.columns import ndcg_name
from schemas.errors import EvaluationError


@dataclass(frozen=True)
class Family:
    """The declared family: its ``rule`` (one of the spec's ``FAMILY_RULES``) and the headline
    measures it reads (canonical names; None: the spec's own nDCG@K at each cutoff)."""
    rule: str = DEFAULT_FAMILY
    headline: tuple[str, ...] | None = None

    @classmethod
    def of(cls, spec) -> Family:
        """The family an evaluation spec declares."""
        return cls(spec.family or DEFAULT_FAMILY, tuple(spec.headline_measures))

    def is_headline(self, measure: str, cutoff: int | None) -> bool:
        if self.headline is None:
            return cutoff is not None and measure == ndcg_name(cutoff)
        return measure in self.headline

    def key(self, measure: str, cutoff: int | None) -> str:
        """The family a test of ``measure`` belongs to, by name."""
        if self.rule == "all":
            return "all"
        if self.rule == "headline" and self.is_headline(measure, cutoff):
            return "headline"
        return measure

    def adjust(self, tests: Sequence[Mapping], *, unit: str,
               unit_of: Callable[[Mapping], object], alpha: float | None = None
               ) -> list[Adjusted]:
        """Per test (a mapping with ``p_value``, ``measure`` and ``cutoff``), in order: its
        Holm-adjusted p within its family, the family in words ("Holm over 6 tests: 3
        rankers x 2 measures (nDCG@5, nDCG@10)") and, given ``alpha``, the divisor of
        ``alpha`` its adjusted interval is held to (``stats.inference.holm_scales``); ``unit``
        names what ``unit_of`` a test returns (a ranker, a ranker pair). A test without a p
        (nothing paired) is in no family: all None."""
        members: dict[str, list[int]] = {}
        for i, test in enumerate(tests):
            if test["p_value"] is not None:
                members.setdefault(self.key(test["measure"], test["cutoff"]), []).append(i)
        out = [Adjusted(None, None, None)] * len(tests)
        for indices in members.values():
            p_values = np.array([tests[i]["p_value"] for i in indices], dtype=np.float64)
            adjusted = holm(p_values)
            scales = (holm_scales(p_values, alpha) if alpha is not None
                      else [None] * len(indices))
            described = describe(len(indices), unit,
                                 len({unit_of(tests[i]) for i in indices}),
                                 list(dict.fromkeys(tests[i]["measure"] for i in indices)))
            for i, p, scale in zip(indices, adjusted, scales, strict=True):
                out[i] = Adjusted(float(p), described, None if scale is None else int(scale))
        return out


    def check_resolution(self, tests: Sequence, n_resamples: int, alpha: float, *,
                         what: str) -> None:
        """Refuse resamples too few for any test of ``tests`` (each with ``measure`` and
        ``cutoff``, or a ``Result``) to be found at ``alpha``: the sign-flip test's least p is
        1 / (1 + resamples), and Holm multiplies the least p of a family of m tests by m, so a
        family needs m / (1 + resamples) < alpha. Without the refusal such a report would say
        "no change" or "not separated" of every comparison, whatever the data. ``what`` names
        the comparisons ("ranker pairs", "changes against the previous night")."""
        if not n_resamples:
            return
        sizes: dict[str, int] = {}
        for test in tests:
            measure, cutoff = ((test["measure"], test["cutoff"]) if isinstance(test, Mapping)
                               else (test.measure, test.cutoff))
            key = self.key(measure, cutoff)
            sizes[key] = sizes.get(key, 0) + 1
        if not sizes:
            return
        family, m = max(sizes.items(), key=lambda item: item[1])
        if m / (1 + n_resamples) >= alpha:
            needed = math.floor(m / alpha)  # the least resamples with m / (1 + B) < alpha
            raise TooFewResamples(
                f"{n_resamples:,} sign-flip resamples cannot find any of the {what} at alpha "
                f"{alpha:g}: the test's least p is 1/{n_resamples + 1:,}, and Holm over the "
                f"{m} tests of the family {family!r} (spec field 'family': {self.rule}) "
                f"multiplies it to {m / (1 + n_resamples):.4f}; use at least {needed:,} "
                "resamples (spec field 'resamples', --bootstrap, n_bootstrap=) or a smaller "
                "family")


class TooFewResamples(EvaluationError):
    """Resamples too few for the declared family's tests to reach alpha."""


class Adjusted(NamedTuple):
    """One test's adjustment within its family."""
    p: float | None  # Holm-adjusted p
    family: str | None  # the family in words
    scale: int | None  # alpha / scale: the level of its adjusted interval


# The default spec's family: the tests of every ranker x nDCG@K together.
DEFAULT = Family()


def describe(n_tests: int, unit: str, n_units: int, measures: Sequence[str]) -> str:
    """A family in words: its size, then what it spans."""
    return (f"Holm over {_count(n_tests, 'test')}: {_count(n_units, unit)} x "
            f"{_count(len(measures), 'measure')} ({', '.join(measures)})")


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' * (n != 1)}"
