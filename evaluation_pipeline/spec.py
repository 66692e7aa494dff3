"""The evaluation spec: every convention an NDCG number depends on, declared and hashed.

A spec is a small immutable value (in the manner of ir_measures' measure objects): each field
is declared once, in ``EvaluationSpec`` below, with its choices or the parser of its open
values, its default, its canonical form and a one-line meaning (``spec_fields`` says what a
declaration holds). Checking a value, the canonical form, ``spec_id`` (the SHA-256 of that
form, so a result can name exactly what produced it), the conventions sentence, the lines of
``ndcg-eval spec`` and the fields' tables in docs/CONTRACT.md and docs/spec.md all come from
those declarations. Fields and defaults follow the evaluation contract, section 2.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import numbers
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from evaluation_pipeline.measures.parse import (
    Measure,
    MeasureError,
    average_ties_refusal,
    parse_measure,
)
from evaluation_pipeline.spec_fields import SpecError, SpecField, declare, declared

# Exponential gain overflows float64 past 2^1023; a grade that high is a data error.
MAX_EXPONENTIAL_GRADE = 1023
# Scoring allocates a few floats per place up to the largest K (discounts, the ideal top): a
# million places is about 24 MB, and longer than any candidate list evaluated by NDCG.
MAX_CUTOFF = 1_000_000

# The rules of `raters`: the pooled ones read every rater's grade of a document; ``rater:`` and
# ``prefer:`` name raters. A grade is an integer, so a mean declares its rounding, a majority
# its tie-break and a median of an even count which middle grade it takes.
MEAN_ROUNDINGS = ("half_up", "half_down", "floor", "ceil")
RATER_RULES = (*(f"mean:{r}" for r in MEAN_ROUNDINGS), "median", "median:higher",
               "majority:lower", "majority:higher", "max", "min")
RATER_NAMED_RULES = ("rater:<id>", "prefer:<id>,<id>,...")

GainMap = tuple[tuple[int, float], ...]

# -- open values: each field's parser, and how a gain map reads ------------------------------

def check_cutoffs(cutoffs: Any) -> tuple[int, ...]:
    """The cutoffs as a spec holds them, or ``SpecError``: the one check of a spec file's
    ``cutoffs``, of ``--cutoff`` and of the Python API's ``cutoffs=`` and ``cutoff=``. One K
    stands for a list of it; a K must be an integer (a numpy one too), never a bool or a float,
    which would be cut to an integer and score another K than the one asked for."""
    if isinstance(cutoffs, (numbers.Integral, str)) or not hasattr(cutoffs, "__iter__"):
        cutoffs = [cutoffs]
    values = list(cutoffs)
    if not values:
        raise SpecError("spec field 'cutoffs': at least one cutoff K is required")
    out = []
    for value in values:
        if (isinstance(value, bool) or not isinstance(value, numbers.Integral)
                or value < 1):
            raise SpecError(f"spec field 'cutoffs': {value!r} is not an integer >= 1")
        if value > MAX_CUTOFF:
            raise SpecError(f"spec field 'cutoffs': {value:,} is above the largest cutoff, "
                            f"{MAX_CUTOFF:,}: scoring allocates per place up to K")
        out.append(int(value))
    return tuple(sorted(set(out)))


def _parse_gain(gain: Any) -> str | GainMap:
    if isinstance(gain, str):
        if gain not in GAINS:
            raise SpecError(
                f"spec field 'gain': {gain!r} is not one of {', '.join(GAINS)} "
                "or a {grade: gain} mapping"
            )
        return gain
    items = gain.items() if isinstance(gain, Mapping) else gain
    pairs: dict[int, float] = {}
    try:
        for grade, value in items:
            grade_int = _as_grade(grade)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise SpecError(f"spec field 'gain': gain for grade {grade_int} is not a number")
            value = float(value)
            if not math.isfinite(value) or value < 0:
                raise SpecError(
                    f"spec field 'gain': gain for grade {grade_int} is {value}; "
                    "gains must be finite and >= 0"
                )
            pairs[grade_int] = value
    except (TypeError, ValueError) as exc:
        if isinstance(exc, SpecError):
            raise
        raise SpecError(f"spec field 'gain': cannot read {gain!r} as a grade->gain map") from exc
    if not pairs:
        raise SpecError("spec field 'gain': an explicit gain map needs at least one grade")
    return tuple(sorted(pairs.items()))


def _as_grade(grade: Any) -> int:
    # YAML and TOML keys arrive as int or str; both must spell a nonnegative integer.
    if isinstance(grade, int) and not isinstance(grade, bool) and grade >= 0:
        return grade
    if isinstance(grade, str) and grade.strip().isdigit():
        return int(grade.strip())
    raise SpecError(f"spec field 'gain': grade {grade!r} is not an integer >= 0")


def _gain_json(gain: str | GainMap) -> Any:
    # JSON keys are strings: a map's grades are written as such.
    return gain if isinstance(gain, str) else {str(grade): value for grade, value in gain}


def _gain_map_words(gain: GainMap) -> str:
    return "gain map " + ", ".join(f"{g}->{v:g}" for g, v in gain)


def _gain_map_shown(gain: str | GainMap) -> str:
    """A gain map as a spec file writes it (``{0: 0, 1: 1, 2: 3.5}``), every digit kept."""
    if isinstance(gain, str):
        return gain
    return "{" + ", ".join(f"{g}: {int(v) if v.is_integer() else v!r}" for g, v in gain) + "}"


def _parse_raters(rule: Any) -> str:
    choices = ", ".join((*RATER_RULES, *RATER_NAMED_RULES))
    if not isinstance(rule, str):
        raise SpecError(f"spec field 'raters': {rule!r} is not one of {choices}")
    rule = rule.strip()
    name, colon, rest = rule.partition(":")
    if name in ("rater", "prefer") and colon:
        ids = [part.strip() for part in rest.split(",")]
        if not all(ids) or (name == "rater" and len(ids) != 1) or len(set(ids)) < len(ids):
            raise SpecError(f"spec field 'raters': {rule!r} must name "
                            + ("one rater" if name == "rater" else
                               "raters, each once, separated by commas"))
        return f"{name}:{','.join(ids)}"
    if rule not in RATER_RULES:
        hint = {"mean": "; a grade is an integer, so declare the rounding",
                "majority": "; declare the tie-break", "median:lower": "; that is `median`"}
        raise SpecError(f"spec field 'raters': {rule!r} is not one of {choices}"
                        f"{hint.get(rule, '')} ({FIELD_DOCS['raters']})")
    return rule


def _parse_resamples(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SpecError(f"spec field 'resamples': {value!r} is not an integer >= 1 "
                        f"({FIELD_DOCS['resamples']})")
    return value


def _parse_max_grade(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SpecError(f"spec field 'max_grade': {value!r} is not an integer >= 0 "
                        f"({FIELD_DOCS['max_grade']})")
    if value > MAX_EXPONENTIAL_GRADE:
        raise SpecError(f"spec field 'max_grade': {value} is above {MAX_EXPONENTIAL_GRADE}, "
                        "the largest grade a gain can be computed for")
    return value


def _parse_discount(value: Any) -> str | float:
    """log2, 1/rank, or a logarithm's base b > 1 (2 is log2: one spec, one spec_id)."""
    if isinstance(value, str) and value in ("log2", "1/rank"):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(
            value) and value > 1:
        return "log2" if value == 2 else float(value)
    raise SpecError(f"spec field 'discount': {value!r} is not log2, 1/rank or a logarithm base "
                    "> 1 (a number, as scikit-learn's log_base)")


def _parse_measures(value: Any, field: str = "measures") -> tuple[str, ...]:
    """The measures as a spec holds them: each name canonical (as ir_measures prints it), each
    once, in the order first named. A name that does not parse is refused with the nearest
    name (``measures.parse``)."""
    names = [value] if isinstance(value, str) else value
    if not hasattr(names, "__iter__") or isinstance(names, Mapping):
        raise SpecError(f"spec field {field!r}: {value!r} is not a list of measure names")
    try:
        out = tuple(dict.fromkeys(str(parse_measure(name)) for name in names))
    except MeasureError as exc:
        raise SpecError(f"spec field {field!r}: {exc}") from None
    if not out:
        raise SpecError(f"spec field {field!r}: at least one measure is required")
    return out


def _parse_family(value: Any) -> str | None:
    if value in FAMILY_RULES:
        return None if value == DEFAULT_FAMILY else value  # the default, held as unset
    raise SpecError(f"spec field 'family': {value!r} is not one of {', '.join(FAMILY_RULES)}")


def _parse_headline(value: Any) -> tuple[str, ...]:
    return _parse_measures(value, "headline")


def _plain_ndcg(measure: Measure) -> int | None:
    """K when the measure is the spec's own ``nDCG@K`` (no parameter of its own), else None."""
    return measure.cutoff if measure.name == "nDCG" and measure.params == (
        ("cutoff", measure.cutoff),) else None


# The words of the unknown and unjudged policies in the conventions sentence.
# Which tests one Holm adjustment spans (contract section 4; stats.family adjusts by them),
# each with its words in the conventions sentence.
FAMILY_RULES = {
    "headline": "every ranker x headline measure one Holm family, each other measure one of "
                "its own",
    "measure": "each measure one Holm family",
    "all": "every ranker x measure one Holm family",
}
DEFAULT_FAMILY = "headline"
_POLICY_WORDS = {"incomplete": "leave a query open", "exclude": "excluded", "zero": "gain 0"}


@dataclasses.dataclass(frozen=True)
class EvaluationSpec:
    """Conventions behind an NDCG number (contract section 2). Defaults are the contract's.

    Each field is declared here once (``spec_fields.declare``); its choices map each named value
    to its words in the conventions sentence (``describe``), in the sentence's order."""

    cutoffs: tuple[int, ...] = declare(
        (5, 10),
        "K for DCG@K and ideal DCG@K alike; any list of integers >= 1, kept sorted, repeats "
        "dropped",
        contract="section 3, rule 3",
        values="any list of integers `>= 1`",
        parse=check_cutoffs, canonical=list,
    )
    gain: str | GainMap = declare(
        "exponential",
        "grade -> gain: exponential (2^g - 1), linear (g), or an explicit {grade: gain} map",
        contract="section 3, rule 3",
        choices={"exponential": "gain 2^g-1", "linear": "gain g"},
        values="a map `{grade: gain}` with integer grades `>= 0` and gains finite and `>= 0`",
        parse=_parse_gain, canonical=_gain_json, words=_gain_map_words, show=_gain_map_shown,
    )
    discount: str | float = declare(
        "log2",
        "position p (1-based) divides by log2(p + 1) (log2), by log_b(p + 1) for a number b > "
        "1 (scikit-learn's log_base) or by p (1/rank, TF-Ranking's rank_discount_fn); nDCG's "
        "and DCG's alike",
        contract="section 3, rule 3",
        choices={"log2": "log2 discount", "1/rank": "discount 1/rank"},
        values="a logarithm base: a number `> 1`",
        parse=_parse_discount, words=lambda base: f"discount 1/log_{base:g}(p + 1)",
    )
    ideal: str = declare(
        "candidates",
        "ideal order from the query's candidates left after the policies (candidates; contract "
        "section 3, rule 3) or from every graded document of the query in the judgment version "
        "(all_judged, as trec_eval)",
        contract="section 3, rule 3",
        choices={"candidates": "ideal over graded candidates",
                 "all_judged": "ideal over all judged documents"},
    )
    ties: str = declare(
        "average",
        "equal scores: expected DCG over all orders of the tie group (average, as "
        "scikit-learn), doc_id ascending (doc_id), doc_id descending byte-wise (trec_eval), or "
        "the run's own rank column ascending (rank, as LightGBM and XGBoost keep input order; "
        "the result then depends on the ranker's tie order)",
        contract="section 3, rule 6",
        choices={"average": "ties averaged", "doc_id": "ties by doc_id ascending",
                 "trec_eval": "ties by doc_id descending (trec_eval)",
                 "rank": "ties by the run's rank"},
    )
    unknown: str = declare(
        "incomplete",
        "a candidate with an explicit unknown grade: leave the query open (incomplete), drop "
        "it (exclude) or give it gain 0 (zero)",
        contract="section 3, rules 2 and 4",
        choices={policy: f"unknown grades {words}" for policy, words in _POLICY_WORDS.items()},
    )
    unjudged: str = declare(
        "exclude",
        "a candidate with no row in the judgment version: incomplete, exclude or zero",
        contract="section 3, rules 2 and 4",
        choices={policy: f"unjudged {words}" for policy, words in _POLICY_WORDS.items()},
    )
    # A query whose ideal DCG is 0 has no NDCG of its own: counted apart, 0, or 1 (as LightGBM
    # and XGBoost score it).
    no_positive: str = declare(
        "exclude",
        "ideal DCG is 0: the query is counted apart (exclude), scored 0 (zero, as trec_eval "
        "and scikit-learn) or scored 1 (one, as LightGBM and XGBoost); its status stays "
        "no_positive",
        contract="section 3, rules 4 and 5",
        choices={"exclude": "queries without a positive grade counted apart",
                 "zero": "queries without a positive grade scored 0",
                 "one": "queries without a positive grade scored 1"},
    )
    missing_from_run: str = declare(
        "exclude",
        "a judged query with a positive grade that the ranker did not return: counted apart "
        "(exclude) or scored 0 (zero, as trec_eval -c)",
        contract="section 3, rules 4 and 5",
        choices={"exclude": "queries missing from the run counted apart",
                 "zero": "queries missing from the run scored 0"},
    )
    raters: str | None = declare(
        None,
        "a version with raters: how a document's ratings become its one grade (contract "
        "section 1, Several raters); unknown ratings are skipped, a document rated only unknown "
        "stays unknown; in spec_id only when set",
        contract="section 2, Several raters",
        values=", ".join(f"`{rule}`" for rule in (*RATER_RULES, *RATER_NAMED_RULES)),
        parse=_parse_raters, words=lambda rule: f"raters combined by {rule}", optional=True,
    )
    max_grade: int | None = declare(
        None,
        "the largest grade an unjudged or unknown document may take in the bounds ndcg_min "
        "and ndcg_max (contract section 3, rule 7); unset: the version's largest grade; part "
        "of spec_id only when set",
        contract="section 3, rule 7",
        values="an integer `>= 0`",
        parse=_parse_max_grade, optional=True,
    )

    scores: str | None = declare(
        None,
        "how a run's scores are read before ranking: unset, as 64-bit floats (trec_eval 10 and "
        "every other tool here); float32, each rounded to the nearest 32-bit float first, as "
        "trec_eval 9 and pytrec_eval read them, so scores equal to 7 digits tie; in spec_id "
        "only when set",
        contract="section 3, rule 6",
        choices={"float32": "scores read as 32-bit floats (trec_eval 9, pytrec_eval)"},
        optional=True,
    )
    measures: tuple[str, ...] | None = declare(
        None,
        "the measures scored, named as ir_measures names them (nDCG@10, RR(rel=2)@10, "
        "AP(rel=2), P(rel=2)@10, R@100, ...; docs/spec.md, Measures); the spec's conventions "
        "are each measure's defaults, a measure's own parameter overrides them for it alone; "
        "unset: nDCG@K for each of the cutoffs; when set, the cutoffs are its plain nDCG@K's; "
        "in spec_id only when it differs from that default",
        contract="section 3",
        values="a list of measure names, at least one a plain `nDCG@K`",
        parse=_parse_measures, canonical=list, words=lambda names: "measures " + ", ".join(
            names), show=lambda names: ", ".join(names), optional=True,
    )
    headline: tuple[str, ...] | None = declare(
        None,
        "the measures whose change against the previous night raises a verdict of the nightly "
        "watch and an alert, each one of the spec's measures; every measure's change is "
        "computed and recorded, only these alert; unset: the plain nDCG@K at each cutoff; in "
        "spec_id only when it differs from that default",
        contract="section 8",
        values="a list of the spec's measure names",
        parse=_parse_headline, canonical=list, words=lambda names: "headline " + ", ".join(
            names), show=lambda names: ", ".join(names), optional=True,
    )
    family: str | None = declare(
        None,
        "which tests one Holm adjustment spans, for the ranker pairs of one evaluation and, "
        "apart, for the rankers' changes between two (the nightly watch, compare): headline "
        "(every ranker x headline measure together, each other measure apart), measure (each "
        "measure apart) or all (every ranker x measure together); unset: headline; in spec_id "
        "only when set to another",
        contract="section 4",
        # The default is held as unset (no words in the sentence): its choices are the others.
        choices={rule: words for rule, words in FAMILY_RULES.items() if rule != DEFAULT_FAMILY},
        values=f"`{DEFAULT_FAMILY}` (the default)",
        parse=_parse_family,
        optional=True,
    )
    resamples: int | None = declare(
        None,
        "the resamples of the queries behind every interval and sign-flip test of a report "
        "(the pipeline's, `ndcg-eval report` and `compare` without --bootstrap); the least p "
        "of a test is 1 / (1 + resamples), so a family of m tests needs m / (1 + resamples) "
        "below alpha, checked before a report is written; unset: 2000; in spec_id only when "
        "set",
        contract="section 4",
        values="an integer `>= 1`",
        parse=_parse_resamples, optional=True,
    )

    def __post_init__(self) -> None:
        for field in FIELDS:
            object.__setattr__(self, field.name, field.check(getattr(self, field.name)))
        if self.measures is not None:
            self._settle_measures()
        if self.headline is not None:
            self._settle_headline()

    def _settle_measures(self) -> None:
        """A list of measures decides the cutoffs (its plain nDCG@K's: the rows the report, the
        comparisons and the nightly watch read); the default list is held as unset, so a spec
        that spells out the default has the default's spec_id."""
        measures = [parse_measure(name) for name in self.measures]
        cutoffs = sorted({k for k in map(_plain_ndcg, measures) if k is not None})
        if not cutoffs:
            raise SpecError(
                f"spec field 'measures': {', '.join(self.measures)} lists no plain nDCG@K; the "
                "reports, comparisons and the nightly watch read nDCG@K's rows, so list at "
                "least one (nDCG@10, say) beside the other measures")
        for measure in measures:
            if measure.cutoff is not None and measure.cutoff > MAX_CUTOFF:
                raise SpecError(f"spec field 'measures': {measure}'s cutoff is above the "
                                f"largest, {MAX_CUTOFF:,}: scoring allocates per place up to it")
            refusal = average_ties_refusal(measure) if self.ties == "average" else None
            if refusal:
                raise SpecError(f"spec field 'measures': {refusal}")
        object.__setattr__(self, "cutoffs", tuple(cutoffs))
        if set(self.measures) == {f"nDCG@{k}" for k in cutoffs}:
            object.__setattr__(self, "measures", None)

    def _settle_headline(self) -> None:
        """The headline names measures the spec scores; the default (the plain nDCG@K at each
        cutoff) is held as unset, so a spec that writes it out keeps its spec_id."""
        scored = [str(m) for m in self.measure_list]
        unknown = [name for name in self.headline if name not in scored]
        if unknown:
            raise SpecError(f"spec field 'headline': {', '.join(unknown)} "
                            f"{'is' if len(unknown) == 1 else 'are'} not among the measures "
                            f"scored ({', '.join(scored)}); add it to 'measures' or drop it")
        if set(self.headline) == {f"nDCG@{k}" for k in self.cutoffs}:
            object.__setattr__(self, "headline", None)
        else:  # in the order of the measures, whatever order it was written in
            object.__setattr__(self, "headline", tuple(
                name for name in scored if name in self.headline))

    @property
    def headline_measures(self) -> tuple[str, ...]:
        """The measures whose change alerts (canonical names, in the order of the measures
        scored): ``headline``, else the plain nDCG@K at each cutoff."""
        chosen = self.headline or tuple(f"nDCG@{k}" for k in self.cutoffs)
        return tuple(str(m) for m in self.measure_list if str(m) in chosen)

    # Cached: read per batch and per step, and a frozen dataclass without slots lets
    # cached_property keep it in the instance's dict (fields, equality and hash untouched).
    @functools.cached_property
    def measure_list(self) -> tuple[Measure, ...]:
        """Every measure scored, parsed: the list declared, else nDCG@K per cutoff."""
        names = self.measures or tuple(f"nDCG@{k}" for k in self.cutoffs)
        return tuple(parse_measure(name) for name in names)

    def ndcg_only(self) -> EvaluationSpec:
        """This spec with its nDCG@K alone: what explain and reconcile score (they trace and
        compare nDCG). A headline of other measures goes with them: it names measures this
        spec no longer scores."""
        return self if self.measures is None else self.replace(measures=None, headline=None)

    def headline_only(self) -> EvaluationSpec:
        """This spec scoring its headline measures alone, beside its plain nDCG@K (which keep
        its cutoffs): what agreement and the gate compare the raters on."""
        if self.measures is None:
            return self
        kept = {*self.headline_measures, *(f"nDCG@{k}" for k in self.cutoffs)}
        return self.replace(measures=[str(m) for m in self.measure_list if str(m) in kept])

    @property
    def other_measures(self) -> tuple[Measure, ...]:
        """The measures beside the spec's own nDCG@K (which the NDCG kernel scores)."""
        return tuple(m for m in self.measure_list if _plain_ndcg(m) is None)

    # -- canonical form -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-ready mapping with the contract's field names, in the fields' order; an
        optional field is in it only when set, so adding one kept every spec_id there was."""
        values = [(field, getattr(self, field.name)) for field in FIELDS]
        return {field.name: field.to_json(value) for field, value in values
                if field.is_set(value)}

    def canonical_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @property
    def spec_id(self) -> str:
        """First 16 hex digits of the SHA-256 of the canonical JSON form."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()[:16]

    def replace(self, **changes: Any) -> EvaluationSpec:
        """A copy with ``changes``. New ``cutoffs`` (``--cutoff``, ``cutoffs=``) of a spec that
        lists its measures replace its plain nDCG@K and keep its other measures; new
        ``measures`` decide the cutoffs."""
        if "cutoffs" in changes and "measures" not in changes and self.measures is not None:
            cutoffs = check_cutoffs(changes.pop("cutoffs"))
            changes["measures"] = [*(f"nDCG@{k}" for k in cutoffs),
                                   *(str(m) for m in self.other_measures)]
        return dataclasses.replace(self, **changes)

    @property
    def needs_rank(self) -> bool:
        """Scoring reads the run's ``rank`` column: required, and unique per (ranker, query)."""
        return self.ties == "rank"

    # -- in words -------------------------------------------------------------------------
    def gain_label(self) -> str:
        return _BY_NAME["gain"].words_for(self.gain)

    def describe(self) -> str:
        """The conventions in words, for result sentences (contract section 4): each field's
        words for its value, in the fields' order."""
        words = (field.words_for(getattr(self, field.name)) for field in FIELDS)
        return ", ".join(part for part in words if part)

    def rater_rule(self) -> tuple[str, tuple[str, ...]]:
        """(rule, its raters or its option): ``("mean", ("half_up",))``, ``("prefer", ("h1",
        "llm"))``, ``("max", ())``; the spec must declare one."""
        if self.raters is None:
            raise SpecError("spec field 'raters' is not set")
        name, _, rest = self.raters.partition(":")
        return name, tuple(rest.split(",")) if rest else ()


# Every field's declaration, in the dataclass's order; the rest of this module and its readers
# (`ndcg-eval spec`, report.html, reconcile, the docs' tables) read them from here.
FIELDS: tuple[SpecField, ...] = declared(EvaluationSpec)
_BY_NAME = {field.name: field for field in FIELDS}
# Each field's one line: the meaning `ndcg-eval spec` prints beside its value, and report.html's.
FIELD_DOCS: dict[str, str] = {field.name: field.meaning for field in FIELDS}
# The named values of each field that has them (gain's besides its maps).
_CHOICES: dict[str, tuple[str, ...]] = {
    field.name: tuple(field.choices) for field in FIELDS if field.choices}
GAINS = _CHOICES["gain"]


def fields_table() -> str:
    """The Markdown table of the spec's fields (docs/CONTRACT.md, section 2): default, other
    choices and meaning, from the declarations; a test holds the contract to it."""
    rows = ["| field | default | other choices | meaning |", "|---|---|---|---|"]
    for field in FIELDS:
        default = json.dumps(field.default_json, separators=(", ", ": ")).strip('"')
        others = [", ".join(f"`{choice}`" for choice in field.choices
                            if choice != field.default_json), field.values]
        others = "; or ".join(part for part in others if part) or "(none)"
        rows.append(f"| `{field.name}` | `{default}` | {others} | {field.meaning} |")
    return "\n".join(rows) + "\n"


PROFILES: dict[str, EvaluationSpec] = {
    "default": EvaluationSpec(),
    # Reproduces trec_eval 10.0 (`trec_eval -m ndcg_cut.K`, and the other measures by their
    # names: docs/spec.md, Measures) per query; scores are read as doubles, as it reads them.
    "trec_eval": EvaluationSpec(
        gain="linear",
        ideal="all_judged",
        ties="trec_eval",
        unknown="zero",
        unjudged="zero",
        no_positive="zero",
    ),
    # Reproduces sklearn.metrics.ndcg_score(y_true, y_score, k=K) per query.
    "sklearn": EvaluationSpec(
        gain="linear",
        ideal="candidates",
        ties="average",
        unknown="zero",
        unjudged="zero",
        no_positive="zero",
    ),
    # LightGBM's `ndcg@k` metric (lambdarank's validation numbers) under its default
    # `label_gain`. Each field, from LightGBM's source (src/metric/rank_metric.hpp, NDCGMetric;
    # src/metric/dcg_calculator.cpp, DCGCalculator):
    # - gain: `DefaultLabelGain` fills label_gain with 2^i - 1 (i = 0..30), so exponential. A
    #   model trained with its own `label_gain=g0,g1,...` is reproduced by a spec whose gain is
    #   that map ({0: g0, 1: g1, ...}) over this profile.
    # - ideal: `CalMaxDCG` orders the query's own labels, every document given with it, so the
    #   ideal is over the candidates.
    # - ties: `CalDCG` ranks with std::stable_sort by score, so equal scores keep input order:
    #   the run's rank column.
    # - no_positive: `Eval` gives a query whose max DCG is 0 ("all negative") NDCG 1.
    # - unknown, unjudged, missing_from_run: every document LightGBM sees has a label and every
    #   query its documents, so none occurs there; zero keeps such rows in the mean as 0.
    # Gain and ideal are the defaults' (exponential, candidates).
    "lightgbm": EvaluationSpec(ties="rank", unknown="zero", unjudged="zero", no_positive="one",
                               missing_from_run="zero"),
}
# XGBoost's default `ndcg@k` (rank:ndcg's validation numbers). From XGBoost's docs
# (doc/parameter.rst: eval_metric `ndcg`, `ndcg@n`, `ndcg-`, `ndcg@n-`; `ndcg_exp_gain`, true by
# default) and source (src/metric/rank_metric.cc, EvalNDCG): gain 2^rel - 1, the ideal from the
# query's own labels, a stable sort by prediction (ties in input order: the run's rank), and a
# list without a positive label scored 1. These are LightGBM's conventions: two names, one
# spec_id.
PROFILES["xgboost"] = PROFILES["lightgbm"]
# XGBoost's `ndcg@k-`: the same metric, but a list without a positive label scores 0
# (doc/parameter.rst, eval_metric: a trailing "-" scores such lists 0; EvalNDCG's `minus`).
PROFILES["xgboost_minus"] = PROFILES["xgboost"].replace(no_positive="zero")
# trec_eval 9.0.8, on which pytrec_eval(-terrier) is built, reads a run's scores as C floats:
# scores that agree to about 7 digits tie there, and are ordered by doc_id descending, where
# trec_eval 10.0 (the profile above) ranks them by their doubles.
PROFILES["trec_eval_9"] = PROFILES["trec_eval"].replace(scores="float32")


def profile(name: str) -> EvaluationSpec:
    try:
        return PROFILES[name]
    except KeyError:
        raise SpecError(
            f"unknown profile {name!r}; choose one of {', '.join(PROFILES)}"
        ) from None


def spec_from_mapping(data: Mapping[str, Any], *, source: str = "spec") -> EvaluationSpec:
    """A flat mapping of contract field names, optionally with ``profile: NAME`` as its base."""
    if not isinstance(data, Mapping):
        raise SpecError(f"{source}: expected a mapping of spec fields, got {type(data).__name__}")
    data = dict(data)
    base = profile(str(data.pop("profile", "default")))
    unknown_fields = sorted(set(data) - set(_BY_NAME))
    if unknown_fields:
        raise SpecError(
            f"{source}: unknown spec field(s) {', '.join(unknown_fields)}; "
            f"known fields: {', '.join(_BY_NAME)}"
        )
    try:
        spec = base.replace(**data)
        if "measures" in data and "cutoffs" in data and tuple(
                check_cutoffs(data["cutoffs"])) != spec.cutoffs:
            raise SpecError(
                f"cutoffs {list(check_cutoffs(data['cutoffs']))} and measures disagree: the "
                f"measures' plain nDCG@K give {list(spec.cutoffs)}; write one of the two")
        return spec
    except SpecError as exc:
        raise SpecError(f"{source}: {exc}") from None


def overridden(spec: EvaluationSpec, cutoffs: Any = None, measures: Any = None
               ) -> EvaluationSpec:
    """``spec`` as --measure and --cutoff (and the API's ``measures=`` and ``cutoffs=``) change
    it: ``measures`` replace its list of measures, then ``cutoffs`` (through ``check_cutoffs``:
    2.5, 0, True or an empty list is refused, never cut to another K or dropped) its nDCG@K.
    None leaves the spec's own."""
    if measures is not None:
        spec = spec.replace(measures=[measures] if isinstance(measures, str) else tuple(measures))
    if cutoffs is not None:
        spec = spec.replace(cutoffs=check_cutoffs(cutoffs))
    return spec


def load_spec(path: str | Path) -> EvaluationSpec:
    """Read a spec from a YAML (.yaml/.yml) or TOML (.toml) file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{path}: cannot read spec file ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: a spec file is UTF-8 text; byte {exc.start} is not "
                        f"(0x{exc.object[exc.start]:02x})") from None
    try:
        if path.suffix.lower() == ".toml":
            data = tomllib.loads(text)
        else:
            data = yaml.safe_load(text) or {}
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise SpecError(f"{path}: not valid {path.suffix.lstrip('.') or 'YAML'}: {exc}") from None
    return spec_from_mapping(data, source=str(path))
