"""The gate: is a judge's version fit to be the nightly's headline? (contract section 1, Judge
ratings: the gate; docs/judging.md).

A version that mixes people's ratings (``rater_kind`` ``human``) and a judge's (``llm``) is
measured on what both graded, with ``analysis.agreement``'s own statistics:

- per (judge, person) pair, quadratic Cohen's kappa over the documents both graded; a pair
  with fewer than ``min_overlap`` such documents is shown but does not decide, and a judge
  with no pair that decides is refused (it was not measured);
- with a run, per judge and headline measure (the spec's; by default its nDCG@K at each
  cutoff), Kendall's tau-b between the rankers' orders by that measure's mean under people's
  grades and under the judge's, both over the documents the two graded: does
  the judge rank the rankers as people do.

Shown beside them, without deciding: the tau between the orders under people's grades alone
and under the combined version over every document (``taus_combined``), how far the judge's
grades move the order. Filling holes may rightly move it (a perfect judge does, when the holes
mattered), so it cannot be a bar to pass.

It is promoted when every deciding pair reaches ``min_kappa`` and every tau reaches
``min_tau``; a tau that is not defined (fewer than two rankers, or every ranker tied) does not
decide, and says so. The rule that combines the ratings is the spec's ``raters``; without one,
``prefer:`` the people (sorted), then the judges: a person's grade where one was given, the
judge's in the holes. People alone take the spec's pooled rule over their own ratings, or
``prefer:`` the people the rule names, in its order, then the others.

No Dagster here: ``ndcg-eval gate`` and the ``judgments_llm`` asset call :func:`gate`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

import polars as pl

from evaluation_pipeline import settings
from evaluation_pipeline.analysis.agreement import (
    graded_matrix,
    ndcg_by_rater,
    ranker_order_taus,
    rater_pairs,
)
from evaluation_pipeline.metric.raters import is_rated
from evaluation_pipeline.spec import EvaluationSpec
from schemas import columns
from schemas.columns import ndcg_name
from schemas.errors import InputError, violation

HUMAN = "human"
PEOPLE = "people"  # the rater name of the numbers under people's grades alone
COMBINED = "combined"  # and under the combined version


@dataclass(frozen=True)
class Thresholds:
    min_kappa: float
    min_tau: float
    min_overlap: int

    @classmethod
    def declared(cls, environ: Mapping[str, str] | None = None, *,
                 min_kappa: float | None = None, min_tau: float | None = None,
                 min_overlap: int | None = None) -> Thresholds:
        """Each threshold given, else its setting's (NDCG_EVAL_GATE_MIN_KAPPA, _MIN_TAU and
        _MIN_OVERLAP), checked."""
        return cls(settings.GATE_MIN_KAPPA.given(min_kappa, environ),
                   settings.GATE_MIN_TAU.given(min_tau, environ),
                   settings.GATE_MIN_OVERLAP.given(min_overlap, environ))


@dataclass(frozen=True)
class Verdict:
    """What the gate measured and decided. ``pairs``: per (judge, person) ``judge``,
    ``person``, ``overlap``, ``kappa_quadratic``, ``kappa`` and ``decides``; ``taus``: per
    judge and headline measure ``judge``, ``cutoff``, ``measure``, ``tau`` and ``documents``
    (empty without a run); ``ndcg``: the means per ranker the taus are of."""

    promoted: bool
    reason: str
    thresholds: Thresholds
    judges: list[str]
    people: list[str]
    pairs: list[dict] = field(default_factory=list)
    taus: list[dict] = field(default_factory=list)
    ndcg: list[dict] = field(default_factory=list)
    rule: str | None = None  # the combined version's rule
    people_rule: str | None = None
    # Shown, not deciding: how far the judge's grades move the rankers' order, people alone
    # against the combined version over every document (filling holes may rightly move it).
    taus_combined: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The verdict as JSON-ready data (``ndcg-eval gate --json``, the asset's record)."""
        return asdict(self)

    @property
    def min_kappa_seen(self) -> float | None:
        """The lowest quadratic kappa of the pairs that decide (None: none decides)."""
        kappas = [p["kappa_quadratic"] for p in self.pairs
                  if p["decides"] and p["kappa_quadratic"] is not None]
        return min(kappas) if kappas else None

    @property
    def min_tau_seen(self) -> float | None:
        taus = [t["tau"] for t in self.taus if t["tau"] is not None]
        return min(taus) if taus else None


def raters_by_kind(ratings: pl.DataFrame) -> tuple[list[str], list[str]]:
    """(judges, people): the raters whose ``rater_kind`` is ``llm``, and ``human``; sorted."""
    if columns.RATER_KIND not in ratings.columns:
        return [], []
    kinds = ratings.select(columns.RATER, columns.RATER_KIND).unique()
    judges = kinds.filter(pl.col(columns.RATER_KIND) == columns.LLM)[columns.RATER]
    people = kinds.filter(pl.col(columns.RATER_KIND) == HUMAN)[columns.RATER]
    return sorted(judges.to_list()), sorted(people.to_list())


def combined_rule(spec: EvaluationSpec, judges: list[str], people: list[str]) -> str:
    """The rule the combined version is read under: the spec's, else people first."""
    return spec.raters or f"prefer:{','.join([*people, *judges])}"


def people_rule(rule: str, people: list[str]) -> str:
    """The rule of people's ratings alone: a pooled ``rule`` as it is; a rule naming raters
    becomes ``prefer:`` the people it names, in its order, then the others."""
    name, _, named = rule.partition(":")
    if name not in ("rater", "prefer"):
        return rule
    listed = [r for r in named.split(",") if r in people]
    return "prefer:" + ",".join([*listed, *(p for p in people if p not in listed)])


def gate(ratings: pl.DataFrame, spec: EvaluationSpec | None = None,
         candidates: pl.DataFrame | None = None, thresholds: Thresholds | None = None,
         source: str = "judgments") -> Verdict:
    """The verdict on ``ratings`` (a version with raters), over ``candidates`` (a run or pool)
    when given, under ``spec`` (its cutoffs, conventions and rule)."""
    spec = spec or EvaluationSpec()
    thresholds = thresholds or Thresholds.declared()
    if not is_rated(ratings):
        raise InputError(source, [violation(
            columns.RATER, "the gate needs a version with raters: people's (rater_kind "
            "human) and a judge's (rater_kind llm)", [])])
    judges, people = raters_by_kind(ratings)
    if not judges:
        return Verdict(True, "nothing to gate: no rating is a judge's (rater_kind llm)",
                       thresholds, judges, people)
    if not people:
        return Verdict(False, "refused: no person's ratings (rater_kind human) to measure "
                       f"{', '.join(judges)} against", thresholds, judges, people)
    rule = combined_rule(spec, judges, people)
    alone = people_rule(rule, people)
    pairs = _judge_pairs(ratings, judges, people, thresholds.min_overlap)
    taus, ndcg, taus_combined = [], [], []
    if candidates is not None:
        under = spec  # its headline measures (by default its nDCG@K): what the nights watch
        taus, ndcg = _overlap_taus(ratings, candidates, under, judges, people, alone)
        whole = pl.concat([_mean_ndcg(frame, candidates, under, r, name) for name, frame, r in (
            (PEOPLE, ratings.filter(pl.col(columns.RATER).is_in(people)), alone),
            (COMBINED, ratings, rule))])
        taus_combined = [{"cutoff": t["cutoff"], "measure": t["measure"], "tau": t["tau"]}
                         for t in ranker_order_taus(whole, [PEOPLE, COMBINED])]
        ndcg += whole.to_dicts()
    failures, notes = _decide(pairs, taus, judges, thresholds, candidates is not None)
    promoted = not failures
    reason = ("promoted: " + "; ".join(notes)) if promoted else (
        "refused: " + "; ".join(failures))
    return Verdict(promoted, reason, thresholds, judges, people, pairs, taus, ndcg, rule,
                   alone, taus_combined)


def _mean_ndcg(ratings: pl.DataFrame, candidates: pl.DataFrame, spec: EvaluationSpec,
               rule: str, name: str) -> pl.DataFrame:
    """Mean NDCG per ranker and cutoff of ``ratings`` under ``rule``, as rater ``name``."""
    return ndcg_by_rater(ratings, candidates, spec.replace(raters=rule), []).with_columns(
        rater=pl.lit(name))


def _overlap_taus(ratings: pl.DataFrame, candidates: pl.DataFrame, spec: EvaluationSpec,
                  judges: list[str], people: list[str], alone: str
                  ) -> tuple[list[dict], list[dict]]:
    """Per judge and cutoff, Kendall's tau between the rankers' orders under people's grades
    alone and under the judge's alone, both over the documents the judge and people graded."""
    graded = ratings.filter(pl.col("grade_status") == columns.GRADED)
    by_people = graded.filter(pl.col(columns.RATER).is_in(people)).select(
        *columns.JUDGMENT_KEY).unique()
    taus, ndcg = [], []
    for judge in judges:
        both = graded.filter(pl.col(columns.RATER) == judge).select(
            *columns.JUDGMENT_KEY).join(by_people, on=list(columns.JUDGMENT_KEY), how="semi")
        on_both = ratings.join(both, on=list(columns.JUDGMENT_KEY), how="semi")
        frame = pl.concat([
            _mean_ndcg(on_both.filter(pl.col(columns.RATER).is_in(people)), candidates, spec,
                       alone, PEOPLE),
            _mean_ndcg(on_both.filter(pl.col(columns.RATER) == judge), candidates, spec,
                       f"rater:{judge}", judge)])
        taus += [{"judge": judge, "cutoff": t["cutoff"], "measure": t["measure"],
                  "tau": t["tau"], "documents": both.height}
                 for t in ranker_order_taus(frame, [PEOPLE, judge])]
        ndcg += frame.filter(pl.col("rater") == judge).with_columns(
            pl.lit("overlap").alias("over")).to_dicts()
        ndcg += frame.filter(pl.col("rater") == PEOPLE).with_columns(
            pl.lit(f"overlap with {judge}").alias("over")).to_dicts()
    return taus, ndcg


def _judge_pairs(ratings: pl.DataFrame, judges: list[str], people: list[str],
                 min_overlap: int) -> list[dict]:
    """Each (judge, person) pair of ``analysis.agreement.rater_pairs``, the judge first."""
    raters, grades, matrix = graded_matrix(ratings)
    out = []
    for pair in rater_pairs(raters, grades, matrix):
        a, b = pair["rater_a"], pair["rater_b"]
        if a in judges and b in people:
            judge, person = a, b
        elif b in judges and a in people:
            judge, person = b, a
        else:
            continue
        out.append({"judge": judge, "person": person, "overlap": pair["overlap"],
                    "kappa_quadratic": pair["cohen_kappa_quadratic"],
                    "kappa": pair["cohen_kappa"],
                    "decides": pair["overlap"] >= min_overlap})
    return sorted(out, key=lambda p: (p["judge"], p["person"]))


def _decide(pairs: list[dict], taus: list[dict], judges: list[str], thresholds: Thresholds,
            with_run: bool) -> tuple[list[str], list[str]]:
    """(why it is refused, what it passed), in words."""
    failures, notes = [], []
    for judge in judges:
        own = [p for p in pairs if p["judge"] == judge]
        deciding = [p for p in own if p["decides"]]
        if not deciding:
            most = max((p["overlap"] for p in own), default=0)
            failures.append(f"{judge} and people graded at most {most} documents in common; "
                            f"the gate needs {thresholds.min_overlap} "
                            f"({settings.GATE_MIN_OVERLAP.name})")
            continue
        for p in deciding:
            kappa = p["kappa_quadratic"]
            if kappa is None:
                failures.append(f"{judge} vs {p['person']}: kappa is not defined over their "
                                f"{p['overlap']} documents (every grade the same)")
            elif kappa < thresholds.min_kappa:
                failures.append(f"{judge} vs {p['person']}: quadratic kappa {kappa:.3f} over "
                                f"{p['overlap']} documents is below {thresholds.min_kappa:g} "
                                f"({settings.GATE_MIN_KAPPA.name})")
            else:
                notes.append(f"{judge} vs {p['person']}: quadratic kappa {kappa:.3f} over "
                             f"{p['overlap']} documents (at least {thresholds.min_kappa:g})")
    for t in taus:
        where = (f"{t['judge']}, K={t['cutoff']}" if t["measure"] == ndcg_name(t["cutoff"])
                 else f"{t['judge']}, {t['measure']}")
        if t["tau"] is None:
            notes.append(f"{where}: Kendall's tau is not defined (fewer than two rankers, or "
                         "every ranker tied): it does not decide")
        elif t["tau"] < thresholds.min_tau:
            failures.append(f"{where}: the rankers' order under people's grades and under the "
                            f"judge's, over the {t['documents']} documents both graded, agree "
                            f"at Kendall's tau {t['tau']:.3f}, below {thresholds.min_tau:g} "
                            f"({settings.GATE_MIN_TAU.name})")
        else:
            notes.append(f"{where}: rankers' order Kendall's tau {t['tau']:.3f} over "
                         f"{t['documents']} documents (at least {thresholds.min_tau:g})")
    if not with_run:
        notes.append("Kendall's tau not measured (no run given)")
    return failures, notes
