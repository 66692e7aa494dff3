"""Explain one number of any measure: the per-candidate trace of a (query, ranker, measure).

The candidates are listed as the NDCG trace lists them (``analysis.explain``): the kernel's
order (score descending, then the tie rule) and each candidate's class (graded, unknown,
unjudged). A measure reads one of three views of that list (docs/CONTRACT.md, section 3;
``metric.measures.kernels``): the kept list (the spec's ``unknown`` and ``unjudged``: an excluded
candidate leaves, a kept hole stays, not relevant, gain 0), the graded list (``judged_only=True``
and Bpref) or the whole list (Judged). Positions are within the view; under ``ties: average`` a
tie group spans position_first..position_last, as the kernel scores it.

Each view position then gets the measure's own terms (``metric.measures.values``, step by
step): RR's first relevant position and 1/position, AP's precision at each relevant document
over R, P's, R's, Rprec's, Success's and Judged's flags and shares of places within the cutoff,
Bpref's judged non-relevant documents above each relevant one, DCG's gain and discount, ERR's
stopping chances, RBP's weights. ``counts`` holds the numbers the formula reads and ``traced``
the number the trace computes from them, beside ``value``, the number the package's scoring
gives (``metric.ndcg.score`` with the measure among the spec's).

A plain ``nDCG@K`` (the spec's own) is traced by ``analysis.explain``: its trace is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from evaluation_pipeline.analysis.explain import Trace, explain_many, prepared, ranked_candidates
from evaluation_pipeline.measures.declarations import BY_NAME, NOT_PROVIDED
from evaluation_pipeline.measures.parse import (
    Measure,
    MeasureError,
    average_ties_refusal,
    parse_measure,
)
from evaluation_pipeline.metric import discounts
from evaluation_pipeline.metric.gains import gains_for_grades
from evaluation_pipeline.metric.ndcg import score
from evaluation_pipeline.spec import MAX_EXPONENTIAL_GRADE, EvaluationSpec
from schemas.columns import GRADED

NOT_RELEVANT = -1  # a hole's grade in a view: below every rel, gain 0 (``measures.values``)


@dataclass(frozen=True)
class MeasureTrace:
    query_id: str
    ranker: str
    measure: str  # the canonical name (``RR(rel=2)@10``)
    cutoff: int | None  # the measure's cutoff; None: the whole list
    judgment_version: str | None
    status: str
    value: float | None  # the scored number (null when the status leaves it open)
    traced: float | None  # the trace's own number from ``counts`` (null: the formula has none)
    counts: dict  # the numbers the formula reads (R, relevant documents within k, ...)
    formula: str  # the formula in words, with the counts in it
    candidates: pl.DataFrame
    ideal: pl.DataFrame | None = field(default=None)  # nDCG's ideal order; else None

    def to_dict(self) -> dict:
        return {
            "query_id": self.query_id, "ranker": self.ranker, "measure": self.measure,
            "cutoff": self.cutoff, "judgment_version": self.judgment_version,
            "status": self.status, "value": self.value, "traced": self.traced,
            "counts": self.counts, "formula": self.formula,
            "candidates": self.candidates.to_dicts(),
            "ideal": None if self.ideal is None else self.ideal.to_dicts(),
        }


def is_spec_ndcg(measure: Measure) -> bool:
    """Whether ``measure`` is a plain ``nDCG@K``, the spec's own, which ``analysis.explain``
    traces."""
    return measure.name == "nDCG" and measure.cutoff is not None and measure.params == (
        ("cutoff", measure.cutoff),)


def explain_measure(
    candidates: pl.DataFrame,
    judgments: pl.DataFrame,
    spec: EvaluationSpec,
    *,
    query_id: str,
    ranker: str,
    measure: str | Measure,
) -> Trace | MeasureTrace:
    """The trace of ``ranker``'s ``measure`` on ``query_id`` (module docstring): a
    :class:`Trace` for a plain nDCG@K, else a :class:`MeasureTrace`."""
    return explain_measures(candidates, judgments, spec, [(ranker, query_id, measure)])[0]


def explain_measures(
    candidates: pl.DataFrame,
    judgments: pl.DataFrame,
    spec: EvaluationSpec,
    keys: list[tuple[str, str, str | Measure]],
) -> list[Trace | MeasureTrace]:
    """The traces of ``keys``, each a (ranker, query_id, measure), in their order. The plain
    nDCG@K go to ``analysis.explain_many``; the other measures are scored in one pass over the
    keys' queries (the spec's conventions, the measures beside its nDCG@K) and traced from the
    same ranked candidates. A measure the spec's tie rule does not define is refused as
    scoring refuses it."""
    if not keys:
        return []
    parsed = [(str(r), str(q), m if isinstance(m, Measure) else parse_measure(m))
              for r, q, m in keys]
    out: list[Trace | MeasureTrace | None] = [None] * len(parsed)
    plain = [i for i, (_, _, m) in enumerate(parsed) if is_spec_ndcg(m)]
    if plain:
        # The spec's nDCG at these cutoffs, as ``--cutoff`` would give it.
        needed = sorted({parsed[i][2].cutoff for i in plain})
        for i, trace in zip(plain, explain_many(candidates, judgments,
                                                spec.ndcg_only().replace(cutoffs=needed),
                                                [(parsed[i][0], parsed[i][1],
                                                  parsed[i][2].cutoff) for i in plain])):
            out[i] = trace
    others = [i for i in range(len(parsed)) if out[i] is None]
    if others:
        for i, trace in zip(others, _measure_traces(candidates, judgments, spec,
                                                    [parsed[i] for i in others])):
            out[i] = trace
    return out


def scoring_spec(spec: EvaluationSpec, measures: list[Measure]) -> EvaluationSpec:
    """``spec`` scoring ``measures`` too (after its own, which it keeps): the conventions the
    trace follows, and the spec itself when it lists them all. A measure the spec's tie rule
    does not define is refused here, as the spec refuses it."""
    for measure in measures:
        refusal = average_ties_refusal(measure) if spec.ties == "average" else None
        if refusal:
            raise MeasureError(f"measure {refusal}")
    own = [str(m) for m in spec.measure_list]
    added = [str(m) for m in measures if str(m) not in own]
    return spec.replace(measures=[*own, *dict.fromkeys(added)]) if added else spec


def _measure_traces(candidates, judgments, spec, keys) -> list[MeasureTrace]:
    measures = list(dict.fromkeys(m for _, _, m in keys))
    scoring = scoring_spec(spec, measures)  # refuses, as scoring does, before anything is read
    version, candidates, judgments, judged = prepared(
        candidates, judgments, spec, {q for _, q, _ in keys})
    kernel = score(candidates, judgments, scoring).select(
        pl.col("ranker").cast(pl.String), pl.col("query_id").cast(pl.String), "measure",
        "status", "value")
    numbers = {(r["ranker"], r["query_id"], r["measure"]): (r["status"], r["value"])
               for r in kernel.iter_rows(named=True)}
    wanted = pl.DataFrame({"key": range(len(keys)), "ranker": [r for r, _, _ in keys],
                           "query_id": [q for _, q, _ in keys]},
                          schema={"key": pl.Int64, "ranker": pl.String, "query_id": pl.String})
    ranked = ranked_candidates(candidates, judged, wanted, spec).with_columns(
        (pl.int_range(pl.len(), dtype=pl.UInt32).over("key") + 1).alias("rank"))
    parts = ranked.partition_by("key", maintain_order=True, include_key=False, as_dict=True)
    empty = ranked.drop("key").clear()
    graded_judgments = judged.filter(pl.col("grade_status") == GRADED)
    traces = []
    for key, (ranker, query_id, measure) in enumerate(keys):
        rows = parts.get((key,), empty)
        query = graded_judgments.filter(pl.col("query_id") == query_id)
        status, value = numbers.get((ranker, query_id, str(measure)), (None, None))
        returned = rows.height > 0 and status is not None
        trace = _trace(rows, query, measure, spec)
        traces.append(MeasureTrace(
            query_id=query_id, ranker=ranker, measure=str(measure), cutoff=measure.cutoff,
            judgment_version=version,
            # A ranker that did not return the query has no number of its own here.
            status=status if returned else "missing_from_run",
            value=value if returned else None, traced=trace.traced, counts=trace.counts,
            formula=trace.formula,
            candidates=trace.candidates.with_columns(
                pl.lit(version, dtype=pl.String).alias("judgment_version")).select(
                "rank", "query_id", "doc_id", "judgment_version", "score", "grade",
                "grade_status", "position_first", "position_last", *trace.columns,
                "contribution", "note"),
            ideal=trace.ideal))
    return traces


# -- one query's trace ------------------------------------------------------------------------


@dataclass
class _Traced:
    candidates: pl.DataFrame
    columns: tuple[str, ...]
    counts: dict
    traced: float | None
    formula: str
    ideal: pl.DataFrame | None = None


# Each measure's own columns, in the order a trace shows them.
COLUMNS: dict[str, tuple[str, ...]] = {
    "RR": ("relevant",), "Success": ("relevant",),
    "AP": ("relevant", "relevant_so_far", "precision"),
    "P": ("relevant", "weight"), "R": ("relevant", "weight"), "Rprec": ("relevant", "weight"),
    "Judged": ("judged", "weight"),
    "Bpref": ("relevant", "nonrelevant_above", "term"),
    "DCG": ("gain", "discount"), "nDCG": ("gain", "discount"),
    "ERR": ("stop_chance", "reach_chance"),
    "RBP": ("relevance", "weight"),
}
_FLAGS = ("relevant", "judged")  # boolean columns; the rest are numbers
_COUNTED = ("relevant_so_far", "nonrelevant_above")  # integer columns


def _trace(rows: pl.DataFrame, judged: pl.DataFrame, measure: Measure,
           spec: EvaluationSpec) -> _Traced:
    """The trace of one (ranker, query)'s ranked ``rows`` under ``measure``; ``judged``: the
    query's graded judgments (the ideal set under ``ideal: all_judged``)."""
    name = measure.name
    status_of = rows["grade_status"].to_numpy().astype(str) if rows.height else np.array([], str)
    is_graded = status_of == GRADED
    grade = np.where(is_graded, rows["grade"].fill_null(0).to_numpy(), NOT_RELEVANT).astype(
        np.int64)
    params = measure.declaration.params
    judged_only = bool(measure["judged_only"]) if "judged_only" in params else False
    if name == "Judged":
        in_view, why = np.ones(rows.height, bool), ""
    elif judged_only or name == "Bpref":
        in_view = is_graded
        why = ("not graded: Bpref reads graded documents only" if name == "Bpref"
               else "not graded: judged_only=True")
    else:
        in_view = is_graded | ((status_of == "unknown") & (spec.unknown != "exclude")) | (
            (status_of == "unjudged") & (spec.unjudged != "exclude"))
        why = ""
    view = np.flatnonzero(in_view)
    score_v, grade_v = rows["score"].to_numpy()[view], grade[view]
    n = len(view)
    judged_grades = judged["grade"].to_numpy().astype(np.int64)
    # No cutoff: past every list, the candidates' and the ideal's alike.
    k = measure.cutoff if measure.cutoff is not None else max(
        rows.height, len(judged_grades), 1)
    groups = _groups(score_v, n, spec.ties == "average")
    first, last = np.zeros(n, np.int64), np.zeros(n, np.int64)
    for p, q in groups:
        first[p:q], last[p:q] = p + 1, q
    columns, contribution, counts, traced, formula, ideal = _BY_NAME[name](
        measure, spec, score_v, grade_v, n, k, groups, judged_grades,
        rows["doc_id"].to_numpy()[view] if n else np.array([], object), judged)
    full = {}
    for column in COLUMNS[name]:
        values = columns[column]
        if column in _FLAGS:
            whole = np.zeros(rows.height, bool)
            whole[view] = values
            full[column] = pl.Series(column, whole).set(pl.Series(~in_view), None)
        elif column in _COUNTED:
            whole = np.full(rows.height, -1, np.int64)
            whole[view] = np.where(np.isnan(values), -1, values)
            full[column] = pl.Series(column, whole).replace(-1, None)
        else:
            whole = np.full(rows.height, np.nan)
            whole[view] = values
            full[column] = pl.Series(column, whole, nan_to_null=True)
    contributions = np.zeros(rows.height)
    contributions[view] = contribution
    positions_first, positions_last = np.full(rows.height, -1), np.full(rows.height, -1)
    positions_first[view], positions_last[view] = first, last
    note = np.where(in_view, "", np.where(
        status_of == "unknown", "dropped: unknown=exclude", "dropped: unjudged=exclude"
    ) if not why else why)
    frame = rows.select("rank", "query_id", "doc_id", "score", "grade",
                        "grade_status").with_columns(
        pl.Series("position_first", positions_first).replace(-1, None),
        pl.Series("position_last", positions_last).replace(-1, None),
        *full.values(),
        pl.Series("contribution", contributions),
        pl.Series("note", note, dtype=pl.String),
    )
    return _Traced(frame, COLUMNS[name], counts, traced, formula, ideal)


def _groups(score: np.ndarray, n: int, average: bool) -> list[tuple[int, int]]:
    """The tie groups of a view as [p, q) (0-based), as ``measures.values.group_end`` forms
    them: equal adjacent scores under ``average``, else every place alone."""
    out, p = [], 0
    while p < n:
        q = p + 1
        if average:
            while q < n and score[q] == score[p]:
                q += 1
        out.append((p, q))
        p = q
    return out


def _relevant_in_ideal(grade_v: np.ndarray, judged_grades: np.ndarray, rel: int,
                       spec: EvaluationSpec) -> tuple[int, int]:
    """(R, N): the relevant (grade >= rel) and judged non-relevant documents of the ideal set:
    the view's under ``ideal: candidates``, the query's graded judgments under all_judged."""
    if spec.ideal == "candidates":
        return int((grade_v >= rel).sum()), int(((grade_v >= 0) & (grade_v < rel)).sum())
    return int((judged_grades >= rel).sum()), int((judged_grades < rel).sum())


def _shares(groups, relevant: np.ndarray, k: int) -> tuple[np.ndarray, float]:
    """Each place's share of places within the first k (a tie group spanning k gives each
    member the share of its places within k) and the relevant count within k as
    ``measures.values.count_within`` sums it."""
    weight = np.zeros(len(relevant))
    total = 0.0
    for p, q in groups:
        if p >= k:
            break
        weight[p:q] = (min(q, k) - p) / (q - p)
        c = int(relevant[p:q].sum())
        if q == p + 1:
            total += c
        elif c:
            total += c / (q - p) * (min(q, k) - p)
    return weight, total


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.6f}"


def _count(value: float) -> str:
    """A count of documents: whole, or a share of one where a tie group spans the cutoff."""
    return str(int(value)) if float(value).is_integer() else f"{value:.6f}"


def _rel(measure: Measure) -> int:
    return int(measure["rel"])


def _first_relevant_group(groups, relevant, k) -> tuple[int, int, int] | None:
    """The first tie group (its first and past-last place, and its relevant members) within
    the first ``k`` places that holds a relevant document; None without one."""
    for p, q in groups:
        if p >= k:
            return None
        c = int(relevant[p:q].sum())
        if c:
            return p, q, c
    return None


def _rr(measure, spec, score_v, grade_v, n, k, groups, judged_grades, docs, judged):
    rel = _rel(measure)
    relevant = grade_v >= rel
    contribution = np.zeros(n)
    R = _relevant_in_ideal(grade_v, judged_grades, rel, spec)[0]
    total, found = 0.0, None
    group = _first_relevant_group(groups, relevant, k)
    if group is not None:
        p, q, c = group
        # The first relevant member of a shuffled group of q - p with c relevant is at its
        # i-th place with chance C(q-p-i, c-1) / C(q-p, c); each relevant member holds a
        # c-th of the expectation.
        size, chance = q - p, c / (q - p)
        for i in range(1, min(size - c + 1, k - p) + 1):
            total += chance / (p + i)
            if i < size:
                chance *= (size - i - c + 1) / (size - i)
        contribution[p:q] = np.where(relevant[p:q], total / c, 0.0)
        found = (p + 1, q)
    counts = {"rel": rel, "cutoff": measure.cutoff, "R": R,
              "first_relevant_position": None if found is None else found[0],
              "first_relevant_group_last": None if found is None else found[1],
              "reciprocal_rank": total}
    traced = total if R > 0 else None
    if found is None:
        words = f"no relevant document (grade >= {rel}) within {_within(measure)}: RR 0"
    elif found[0] == found[1]:
        words = (f"first relevant document (grade >= {rel}) at position {found[0]}: "
                 f"RR = 1/{found[0]} = {_number(total)}")
    else:
        words = (f"first relevant documents (grade >= {rel}) in the tie group at positions "
                 f"{found[0]}-{found[1]}: expected RR {_number(total)}")
    return {"relevant": relevant}, contribution, counts, traced, _no_r(words, R), None


def _success(measure, spec, score_v, grade_v, n, k, groups, judged_grades, docs, judged):
    rel = _rel(measure)
    relevant = grade_v >= rel
    contribution = np.zeros(n)
    total, found = 0.0, None
    group = _first_relevant_group(groups, relevant, k)
    if group is not None:
        p, q, c = group
        if q <= k:
            total = 1.0
        else:
            # The group spans k: the chance that none of its k - p places within k holds a
            # relevant member.
            size, miss = q - p, 1.0
            for i in range(k - p):
                miss *= (size - c - i) / (size - i)
            total = 1.0 - miss
        contribution[p:q] = np.where(relevant[p:q], total / c, 0.0)
        found = (p + 1, q)
    counts = {"rel": rel, "cutoff": k,
              "first_relevant_position": None if found is None else found[0],
              "success": total}
    words = (f"no relevant document (grade >= {rel}) within the first {k} places: 0"
             if found is None else
             f"first relevant document (grade >= {rel}) at position "
             f"{found[0] if found[0] == found[1] else f'{found[0]}-{found[1]}'}: "
             f"{_number(total)}")
    return {"relevant": relevant}, contribution, counts, total, words, None


def _ap(measure, spec, score_v, grade_v, n, k, groups, judged_grades, docs, judged):
    rel = _rel(measure)
    relevant = grade_v >= rel
    R = _relevant_in_ideal(grade_v, judged_grades, rel, spec)[0]
    so_far, precision = np.full(n, np.nan), np.full(n, np.nan)
    contribution = np.zeros(n)
    total, found = 0.0, 0
    for i in range(min(n, k)):
        if relevant[i]:
            found += 1
            term = found / (i + 1)
            total += term
            so_far[i], precision[i] = found, term
            contribution[i] = term / R if R else 0.0
    counts = {"rel": rel, "cutoff": measure.cutoff, "R": R, "relevant_retrieved": found,
              "sum_precision": total}
    traced = total / R if R > 0 else None
    words = (f"sum of the precisions at the {found} relevant documents (grade >= {rel}) within "
             f"{_within(measure)}, {_number(total)}, over R = {R}: {_number(traced)}")
    return ({"relevant": relevant, "relevant_so_far": so_far, "precision": precision},
            contribution, counts, traced, _no_r(words, R), None)


def _within(measure: Measure) -> str:
    return "the whole list" if measure.cutoff is None else f"the first {measure.cutoff} places"


def _no_r(words: str, R: int) -> str:
    return words if R > 0 else f"{words}; R = 0: no value, the spec's no_positive applies"


def _precision(measure, spec, score_v, grade_v, n, k, groups, judged_grades, docs, judged):
    rel = _rel(measure)
    relevant = grade_v >= rel
    weight, within = _shares(groups, relevant, k)
    counts = {"rel": rel, "cutoff": k, "relevant_within_cutoff": within}
    traced = within / k
    words = (f"{_count(within)} relevant documents (grade >= {rel}) within the first {k} "
             f"places, over {k}: {_number(traced)}")
    return ({"relevant": relevant, "weight": weight}, relevant * weight / k, counts, traced,
            words, None)


def _recall(measure, spec, score_v, grade_v, n, k, groups, judged_grades, docs, judged):
    return _relevant_over_r(measure, spec, grade_v, n, groups, judged_grades, k)


def _rprec(measure, spec, score_v, grade_v, n, k, groups, judged_grades, docs, judged):
    return _relevant_over_r(measure, spec, grade_v, n, groups, judged_grades, None)


def _relevant_over_r(measure, spec, grade_v, n, groups, judged_grades, k):
    """R@k (``k``) and Rprec (``k`` None: the first R places): the relevant documents within
    the places, over R."""
    rel = _rel(measure)
    relevant = grade_v >= rel
    R = _relevant_in_ideal(grade_v, judged_grades, rel, spec)[0]
    weight, within = _shares(groups, relevant, R if k is None else k)
    counts = ({"rel": rel, "R": R, "relevant_within_R": within} if k is None else
              {"rel": rel, "cutoff": k, "R": R, "relevant_within_cutoff": within})
    traced = within / R if R > 0 else None
    places = (f"the first R = {R} places, over R" if k is None
              else f"the first {k} places, over R = {R}")
    words = (f"{_count(within)} relevant documents (grade >= {rel}) within {places}: "
             f"{_number(traced)}")
    return ({"relevant": relevant, "weight": weight}, relevant * weight / R if R else
            np.zeros(n), counts, traced, _no_r(words, R), None)


def _judged(measure, spec, score_v, grade_v, n, k, groups, judged_grades, docs, judged):
    is_judged = grade_v >= 0
    weight, within = _shares(groups, is_judged, k)
    places = min(k, n)
    counts = {"cutoff": measure.cutoff, "judged_within_cutoff": within, "places": places}
    traced = within / places if places else None
    words = (f"{_count(within)} graded documents among the first {places} places of the whole "
             f"list, over {places}: {_number(traced)}")
    return ({"judged": is_judged, "weight": weight},
            is_judged * weight / places if places else np.zeros(n), counts, traced, words, None)


def _bpref(measure, spec, score_v, grade_v, n, k, groups, judged_grades, docs, judged):
    rel = _rel(measure)
    relevant = grade_v >= rel
    R, N = _relevant_in_ideal(grade_v, judged_grades, rel, spec)
    above_at, term_at = np.full(n, np.nan), np.full(n, np.nan)
    contribution = np.zeros(n)
    total, above, found = 0.0, 0, 0
    for i in range(n):
        if grade_v[i] < 0:
            continue
        if relevant[i]:
            term = 1.0 - min(above, R) / min(R, N) if above > 0 else 1.0
            total += term
            found += 1
            above_at[i], term_at[i] = above, term
            contribution[i] = term / R if R else 0.0
        else:
            above += 1
    counts = {"rel": rel, "R": R, "N": N, "relevant_retrieved": found, "sum_terms": total}
    traced = total / R if R > 0 else None
    words = (f"sum over the {found} relevant documents (grade >= {rel}) of 1 - min(n, R) / "
             f"min(R, N), n the judged non-relevant ones above it, R = {R}, N = {N}: "
             f"{_number(total)} over R: {_number(traced)}")
    return ({"relevant": relevant, "nonrelevant_above": above_at, "term": term_at},
            contribution, counts, traced, _no_r(words, R), None)


def _gains(measure: Measure, grade_v: np.ndarray, spec: EvaluationSpec) -> np.ndarray:
    """Each grade's gain as DCG and nDCG read it: the spec's, or dcg='log2' (the grade) or
    dcg='exp-log2' (2^g - 1); a hole's is 0."""
    option = measure["dcg"]
    gains = np.zeros(len(grade_v))
    graded = grade_v >= 0
    if option is NOT_PROVIDED:
        gains[graded] = gains_for_grades(grade_v[graded], spec)
    elif option == "log2":
        gains[graded] = grade_v[graded].astype(np.float64)
    else:
        fits = graded & (grade_v <= MAX_EXPONENTIAL_GRADE)
        gains[fits] = np.exp2(grade_v[fits].astype(np.float64)) - 1.0
        gains[graded & ~fits] = np.inf
    return gains


def _dcg(measure, spec, score_v, grade_v, n, k, groups, judged_grades, docs, judged):
    gain = _gains(measure, grade_v, spec)
    weights = discounts.discount_table(spec.discount, max(n, k, 1))
    prefix = np.r_[0.0, np.cumsum(weights)]
    discount, contribution = np.full(n, 0.0), np.zeros(n)
    total = 0.0
    for p, q in groups:
        if p >= k:
            break
        if q == p + 1:
            discount[p] = weights[p]
            contribution[p] = gain[p] * weights[p]
            total += gain[p] * weights[p]
        else:
            mean = 0.0
            for i in range(p, q):
                mean += gain[i]
            span = prefix[min(q, k)] - prefix[p]
            discount[p:q] = span / (q - p)
            contribution[p:q] = gain[p:q] * span / (q - p)
            total += mean / (q - p) * span
    counts = {"cutoff": measure.cutoff, "dcg": total}
    words = f"sum of gain x discount over {_within(measure)}: {_number(total)}"
    return ({"gain": gain, "discount": discount}, contribution, counts, total, words, None)


def _ndcg(measure, spec, score_v, grade_v, n, k, groups, judged_grades, docs, judged):
    """nDCG with parameters of its own (dcg=, judged_only=, no cutoff), as the measures' pass
    scores it through the NDCG kernel's steps (``dcg._add_dcg``, ``dcg._add_ideal``)."""
    gain = _gains(measure, grade_v, spec)
    reach = max(n, k, len(judged_grades), 1)
    prefix = discounts.prefix(spec.discount, reach)
    given = discounts.kernel_denominators(spec.discount, reach)
    denominator = given if len(given) else np.log2(np.arange(reach) + 2.0)
    discount, contribution = np.zeros(n), np.zeros(n)
    total = 0.0
    for p, q in groups:
        if p >= k:
            break
        mean = 0.0
        for i in range(p, q):
            mean += gain[i]
        mean /= q - p
        first, last = p + 1, q
        if first == last:
            w = 1.0 / denominator[first - 1] if len(given) else 1.0 / np.log2(first + 1.0)
        else:
            w = prefix[min(last, k)] - prefix[min(first - 1, k)]
        discount[p:q] = w / (q - p)
        contribution[p:q] = gain[p:q] * w / (q - p)
        total += mean * w
    if spec.ideal == "candidates":
        ideal_docs, ideal_gains = docs, gain
    else:
        ideal_docs = judged["doc_id"].to_numpy()
        ideal_gains = _gains(measure, judged_grades, spec)
    ideal = pl.DataFrame({"doc_id": pl.Series(ideal_docs, dtype=pl.String),
                          "gain": pl.Series(ideal_gains, dtype=pl.Float64)}).sort(
        ["gain", "doc_id"], descending=[True, False]).with_row_index(
        "ideal_position", offset=1).with_columns(pl.col("ideal_position").cast(pl.Int64))
    top = ideal["gain"].to_numpy()
    positions = np.arange(len(top))
    ideal_discount = np.where(positions < k, 1.0 / denominator[:len(top)], 0.0)
    ideal_total = 0.0
    for i in range(min(len(top), k)):
        ideal_total += top[i] / denominator[i]
    ideal = ideal.with_columns(pl.Series("discount", ideal_discount),
                               pl.Series("contribution", top * ideal_discount)).select(
        "ideal_position", "doc_id", "gain", "discount", "contribution")
    traced = total / ideal_total if ideal_total > 0 else None
    counts = {"cutoff": measure.cutoff, "dcg": total, "ideal_dcg": ideal_total}
    words = (f"DCG {_number(total)} / ideal DCG {_number(ideal_total)} over "
             f"{_within(measure)}: {_number(traced)}")
    if ideal_total <= 0:
        words += "; ideal DCG 0: no value, the spec's no_positive applies"
    return ({"gain": gain, "discount": discount}, contribution, counts, traced, words, ideal)


def _err(measure, spec, score_v, grade_v, n, k, groups, judged_grades, docs, judged):
    max_rel = int(measure["max_rel"])
    stop, reach_at, contribution = np.full(n, np.nan), np.full(n, np.nan), np.zeros(n)
    total, still = 0.0, 1.0
    scale = 2.0 ** max_rel
    for i in range(min(n, k)):
        reach_at[i], stop[i] = still, 0.0
        if grade_v[i] > 0:
            chance = (2.0 ** grade_v[i] - 1.0) / scale
            term = still * chance / (i + 1)
            stop[i], contribution[i] = chance, term
            total += term
            still *= 1.0 - chance
    counts = {"cutoff": measure.cutoff, "max_rel": max_rel, "err": total}
    words = (f"sum over {_within(measure)} of reach chance x stop chance / position, stop "
             f"chance (2^g - 1) / 2^{max_rel}: {_number(total)}")
    return ({"stop_chance": stop, "reach_chance": reach_at}, contribution, counts, total, words,
            None)


def _rbp(measure, spec, score_v, grade_v, n, k, groups, judged_grades, docs, judged):
    persistence = float(measure["p"])
    rel = 0 if measure["rel"] is NOT_PROVIDED else int(measure["rel"])
    max_rel = int(measure["max_rel"])
    if rel > 0:
        relevance = (grade_v >= rel).astype(np.float64)
    else:
        relevance = np.where(grade_v > 0, grade_v / max_rel, 0.0)
    share, contribution = np.zeros(n), np.zeros(n)
    total, weight = 0.0, 1.0 - persistence
    for p, q in groups:
        if p >= k:
            break
        mean, spanned = 0.0, 0.0
        for i in range(p, q):
            mean += relevance[i]
            if i < k:
                spanned += weight
                weight *= persistence
        share[p:q] = spanned / (q - p)
        contribution[p:q] = relevance[p:q] * spanned / (q - p)
        total += mean / (q - p) * spanned if q > p + 1 else mean * spanned
    counts = {"cutoff": measure.cutoff, "p": persistence, "rbp": total}
    scale = f"grade >= {rel}" if rel > 0 else f"grade / {max_rel}"
    words = (f"sum of relevance ({scale}) x (1 - p) p^(position - 1), p = {persistence:g}, over "
             f"{_within(measure)}: {_number(total)}")
    return {"relevance": relevance, "weight": share}, contribution, counts, total, words, None


_BY_NAME = {"RR": _rr, "Success": _success, "AP": _ap, "P": _precision, "R": _recall,
            "Rprec": _rprec, "Judged": _judged, "Bpref": _bpref, "DCG": _dcg, "nDCG": _ndcg,
            "ERR": _err, "RBP": _rbp}
# Every declared measure has its trace.
assert set(_BY_NAME) == set(COLUMNS) == set(BY_NAME)
