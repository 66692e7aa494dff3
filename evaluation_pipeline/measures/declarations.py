"""The measures, each declared once: its name and parameters (as ir_measures' ``ParamInfo``),
its kernel code, its conventions (unjudged and unknown documents, ties, a query without a
relevant document), its bounds over the holes, and its trec_eval and ir_measures equivalents.

The parser (:mod:`.parse`), the plan the kernel reads (:mod:`.plan`) and any table of measures
(docs, CLI help) read these declarations; nothing names a measure a second time.
"""

from __future__ import annotations

from dataclasses import dataclass

from evaluation_pipeline.measures import kinds


class NotProvided:
    """The default of a parameter that has none: the measure then follows the spec (or, for
    ``cutoff``, ranks the whole list). Printed as ir_measures prints it: not at all."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_PROVIDED"


NOT_PROVIDED = NotProvided()
_NOUN = {int: "an integer", float: "a number", bool: "True or False", str: "a text"}


@dataclass(frozen=True)
class ParamInfo:
    """One parameter of a measure, as ir_measures declares it (``measures.base.ParamInfo``)."""

    dtype: type
    desc: str
    default: object = NOT_PROVIDED
    choices: tuple = ()
    required: bool = False
    minimum: int | float | None = None  # the least value allowed (inclusive)
    below: float | None = None  # a value must be less than this (exclusive)

    def check(self, value: object) -> str | None:
        """Why ``value`` is not allowed, or None when it is."""
        if self.dtype is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, self.dtype) or (self.dtype is int and isinstance(value, bool)):
            return _NOUN[self.dtype]
        if self.choices and value not in self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.minimum is not None and value < self.minimum:
            return f"{_NOUN[self.dtype]} >= {self.minimum}"
        if self.below is not None and not value < self.below:
            return f"{_NOUN[self.dtype]} below {self.below}"
        return None


CUTOFF = ParamInfo(int, "ranking cutoff threshold: only the first `cutoff` places count",
                   minimum=1)
CUTOFF_REQUIRED = ParamInfo(int, "ranking cutoff threshold: only the first `cutoff` places count",
                            required=True, minimum=1)
REL = ParamInfo(int, "minimum grade to be considered relevant (inclusive); trec_eval's -l",
                default=1, minimum=1)
JUDGED_ONLY = ParamInfo(bool, "ignore returned documents without a grade (unknown or unjudged): "
                        "the spec's unknown and unjudged become exclude for this measure",
                        default=False)
DCG = ParamInfo(str, "DCG formulation: log2 (gain = grade) or exp-log2 (gain = 2^grade - 1); "
                "not provided: the spec's gain", choices=("log2", "exp-log2"))
MAX_REL = ParamInfo(int, "the largest grade: a grade g is the probability (2^g - 1) / 2^max_rel "
                    "(ERR) or the share g / max_rel (graded RBP); a larger grade is refused",
                    default=4, minimum=1)


@dataclass(frozen=True)
class Declaration:
    """One measure: everything the parser, the kernel's plan and the docs read."""

    name: str  # as ir_measures names it
    kernel: int  # kinds.KIND_*
    params: dict[str, ParamInfo]
    definition: str
    unjudged: str  # how unknown and unjudged candidates count
    ties: str  # how a group of equal scores counts; "refused" when ties=average is not defined
    no_positive: str  # a query without a relevant document
    bounds: str  # the exact algorithm over the holes, or why it is not computed
    trec_eval: str  # the equivalent trec_eval measure ("" when none)
    ir_measures: str  # how ir_measures' measure of that name relates
    average_ties: bool = True  # defined under ties=average (else refused before scoring)
    aliases: tuple[str, ...] = ()


_POLICIES = ("the spec's `unknown` and `unjudged` (exclude: the candidate leaves the list; "
             "zero: it stays, not relevant, gain 0; incomplete: the query is left open)")
_NO_VALUE = ("no value (R = 0): the spec's `no_positive` applies (exclude: no number, zero: 0, "
             "one: 1) and the status is no_positive")
_R = ("R is the number of relevant documents (grade >= rel) of the ideal set: the kept "
      "candidates under `ideal: candidates`, every graded document of the query under "
      "`ideal: all_judged` (trec_eval)")

DECLARATIONS: tuple[Declaration, ...] = (
    Declaration(
        "nDCG", kinds.KIND_NDCG,
        {"cutoff": CUTOFF, "dcg": DCG, "judged_only": JUDGED_ONLY},
        "DCG@k / ideal DCG@k (contract section 3, rules 3 and 5), by the NDCG kernel "
        "(metric.kernels.dcg); dcg= overrides the spec's gain for this measure",
        _POLICIES, "the spec's `ties` (average: expected DCG over the orders of a tie group)",
        "ideal DCG 0: the spec's `no_positive`",
        "exact (contract section 3, rule 7: metric.kernels.bounds.block_bounds)",
        "ndcg_cut.k (gain linear, ideal all_judged; trec_eval ignores -l)",
        "nDCG@k; ir_measures' default dcg is log2 (linear gain), this project's is the spec's "
        "gain (exponential unless the spec or dcg= says otherwise)",
        aliases=("NDCG",)),
    Declaration(
        "DCG", kinds.KIND_DCG,
        {"cutoff": CUTOFF_REQUIRED, "dcg": DCG, "judged_only": JUDGED_ONLY},
        "sum over places p <= k of gain / discount(p), unnormalised (scikit-learn dcg_score, "
        "TF-Ranking DCGMetric); the discount is the kernel's per-place table",
        _POLICIES, "the spec's `ties` (average: mean gain of the group times the sum of the "
                   "discounts of the places it spans, scikit-learn's)",
        "defined: 0",
        "exact: DCG is a sum of gain x weight with weights >= 0, so least with every hole at "
        "the least gain a grade 0..top has, greatest at the largest",
        "", "no DCG in ir_measures"),
    Declaration(
        "RR", kinds.KIND_RR,
        {"cutoff": CUTOFF, "rel": REL, "judged_only": JUDGED_ONLY},
        "1 / the place of the first relevant document (grade >= rel) within the cutoff, else 0",
        _POLICIES,
        "the spec's `ties` (average: the expected reciprocal rank over the orders of the first "
        "tie group holding a relevant document)",
        _NO_VALUE + "; " + _R,
        "exact: RR only rises when a hole turns relevant; least with every hole non-relevant "
        "(or, when that leaves R = 0 under no_positive exclude, the least over one hole "
        "relevant), greatest with every hole relevant",
        "recip_rank (without cutoff; trec_eval 9 has no cutoff for it)",
        "RR@k: ir_measures cuts the list at k (its msmarco provider); RR without cutoff is "
        "trec_eval's recip_rank", aliases=("MRR",)),
    Declaration(
        "AP", kinds.KIND_AP,
        {"cutoff": CUTOFF, "rel": REL, "judged_only": JUDGED_ONLY},
        "sum of P@p over the places p <= cutoff of the relevant documents, divided by R (not by "
        "the relevant documents retrieved, nor by min(R, k))",
        _POLICIES, "refused under `ties: average` (the expected AP over the orders of a tie "
                   "group is not a sum over places); trec_eval, doc_id or rank ties are exact",
        _NO_VALUE + "; " + _R,
        "exact: AP is not monotone (a hole turned relevant raises R), but for t relevant "
        "holes R is fixed and the sum of precisions is greatest with the first t holes "
        "within the cutoff relevant and least with the last t (those past the cutoff or "
        "outside the candidates first): moving a relevant document up to an earlier hole "
        "never lowers a term. A scan over t = 0..holes, O(k + holes)",
        "map (AP), map_cut.k (AP@k)", "AP, AP@k (pytrec_eval)", average_ties=False,
        aliases=("MAP",)),
    Declaration(
        "P", kinds.KIND_P,
        {"cutoff": CUTOFF_REQUIRED, "rel": REL, "judged_only": JUDGED_ONLY},
        "relevant documents among the first k places, divided by k (even when the list is "
        "shorter)",
        _POLICIES, "the spec's `ties` (average: a tie group spanning k counts its share of "
                   "relevant documents for each of its places within k)",
        "defined: 0",
        "exact: P only rises when a hole turns relevant: every hole non-relevant for the "
        "least, relevant for the greatest",
        "P.k", "P@k", aliases=("Precision",)),
    Declaration(
        "R", kinds.KIND_R,
        {"cutoff": CUTOFF_REQUIRED, "rel": REL, "judged_only": JUDGED_ONLY},
        "relevant documents among the first k places, divided by R (not by min(R, k))",
        _POLICIES, "the spec's `ties` (average: as P)",
        _NO_VALUE + "; " + _R,
        "exact: R@k = (a + sum of the relevant holes' weights) / (b + their number), each "
        "hole's weight its share of a place within k (0 past k or outside the candidates); "
        "for t relevant holes it is greatest with the t heaviest and least with the t "
        "lightest, so both come from one scan over t = 0..holes",
        "recall.k", "R@k", aliases=("Recall",)),
    Declaration(
        "Success", kinds.KIND_SUCCESS,
        {"cutoff": CUTOFF_REQUIRED, "rel": REL, "judged_only": JUDGED_ONLY},
        "1 when a relevant document is among the first k places, else 0",
        _POLICIES, "the spec's `ties` (average: the probability that a tie group spanning k "
                   "puts a relevant member within k)",
        "defined: 0",
        "exact: monotone, as P",
        "success.k", "Success@k"),
    Declaration(
        "Judged", kinds.KIND_JUDGED,
        {"cutoff": CUTOFF},
        "the share of graded documents among the first min(k, n) places of the whole list, "
        "before any candidate is dropped (contract section 3, rule 1's judged_at_k)",
        "counts them: a candidate is judged when the version grades it; an unknown row is not "
        "judged (ir_measures counts any qrels row, -1 included)",
        "the spec's `ties` (average: a tie group counts its share of graded members for each "
        "of its places within k)",
        "defined", "exact: every grading judges every hole, so both bounds are 1",
        "", "Judged@k, where the version has no unknown row in the first k places"),
    Declaration(
        "Rprec", kinds.KIND_RPREC,
        {"rel": REL, "judged_only": JUDGED_ONLY},
        "relevant documents among the first R places, divided by R",
        _POLICIES, "the spec's `ties` (average: as P at k = R)",
        _NO_VALUE + "; " + _R,
        "exact: for t relevant holes R is fixed, and the value is greatest with the t holes "
        "of the largest weights at cutoff R and least with the t lightest; a scan over t",
        "Rprec", "Rprec", aliases=("RPrec",)),
    Declaration(
        "Bpref", kinds.KIND_BPREF,
        {"rel": REL},
        "(1/R) x sum over relevant retrieved documents of 1 - min(n, R) / min(R, N), n the "
        "judged non-relevant documents above it and N those of the ideal set (trec_eval's)",
        "ignores them whatever the spec says: only graded documents take part (Buckley and "
        "Voorhees); unknown and unjudged never leave the query open",
        "refused under `ties: average`",
        _NO_VALUE + "; " + _R,
        "exact by enumeration of the 2^holes relevant / non-relevant gradings up to "
        f"{kinds.MAX_BPREF_HOLES} holes; past that not computed (null): a graded hole joins R, "
        "N and every relevant document's count above it at once, and no exact algorithm "
        "within the scoring budget is known here",
        "bpref", "Bpref", average_ties=False, aliases=("BPref",)),
    Declaration(
        "ERR", kinds.KIND_ERR,
        {"cutoff": CUTOFF, "max_rel": MAX_REL},
        "sum over places p of (1/p) x R_p x prod over i < p of (1 - R_i), R_i = (2^g - 1) / "
        "2^max_rel (Chapelle et al. 2009); the spec's gain does not apply",
        _POLICIES, "refused under `ties: average`",
        "defined: 0",
        "exact: dERR/dR_j = prod_{i<j}(1 - R_i) x (1/j - sum_{r>j} (1/r) R_r prod_{j<i<r}(1 - "
        "R_i)) >= 0 since the sum is at most 1/(j + 1), so ERR only rises with a grade: every "
        "hole at grade 0 for the least, at the top grade for the greatest",
        "", "ERR@k is gdeval's, whose max_rel is 4: equal to it where grades are 0..4",
        average_ties=False),
    Declaration(
        "RBP", kinds.KIND_RBP,
        {"cutoff": CUTOFF, "p": ParamInfo(float, "persistence", default=0.8, minimum=0.0,
                                          below=1.0),
         "rel": ParamInfo(int, "minimum grade to be considered relevant (inclusive): binary "
                               "RBP; not provided: graded RBP, grade / max_rel",
                          minimum=1),
         "max_rel": MAX_REL},
        "(1 - p) x sum over places i of p^(i-1) x r_i; r_i is 1 or 0 (rel=) or grade / max_rel "
        "(graded; trec_eval 10's m_rbp.c normalises with values it never sets, ranx's graded "
        "RBP can exceed 1); no residual",
        _POLICIES, "the spec's `ties` (average: a tie group's mean r times the sum of its "
                   "places' weights)",
        "defined: 0",
        "exact: a sum of r x weight with weights > 0, least with every hole at grade 0 and "
        "greatest at the top grade",
        "", "RBP(rel=N) (its cwl_eval provider, binary only)"),
)

BY_NAME: dict[str, Declaration] = {d.name: d for d in DECLARATIONS}
ALIASES: dict[str, str] = {a: d.name for d in DECLARATIONS for a in d.aliases}
