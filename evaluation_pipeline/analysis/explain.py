"""Explain one number: the per-candidate trace of NDCG@K for a (query, ranker, cutoff).

The trace applies the kernel's rules (contract section 3) one candidate at a time so that a
reader can check each term: the order (score descending, then the tie rule), the class of each
candidate (graded, unknown, unjudged), which candidates the policies drop, the position after
the tie rule, gain, discount and contribution, and the ideal order beside it. Under
``ties=average`` a tie group spans positions first..last and each member gets the group's mean
discount over that span (positions past K discount to 0), which is how the kernel scores it.
Summing the contributions reproduces the kernel's ``dcg`` and ``ideal_dcg``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from evaluation_pipeline.metric.gains import gains_for_grades
from evaluation_pipeline.metric.ndcg import score
from evaluation_pipeline.metric.raters import combine_ratings, is_rated
from evaluation_pipeline.spec import EvaluationSpec
from schemas.columns import RANK


@dataclass(frozen=True)
class Trace:
    query_id: str
    ranker: str
    cutoff: int
    judgment_version: str | None
    status: str
    dcg: float  # sum of the candidates' contributions
    ideal_dcg: float  # sum of the ideal order's contributions
    ndcg: float | None  # the kernel's number (null when the status leaves it open)
    candidates: pl.DataFrame
    ideal: pl.DataFrame

    def to_dict(self) -> dict:
        return {
            "query_id": self.query_id, "ranker": self.ranker, "cutoff": self.cutoff,
            "judgment_version": self.judgment_version, "status": self.status,
            "dcg": self.dcg, "ideal_dcg": self.ideal_dcg, "ndcg": self.ndcg,
            "candidates": self.candidates.to_dicts(), "ideal": self.ideal.to_dicts(),
        }


def _discount_sum(first: np.ndarray, last: np.ndarray, cutoff: int) -> np.ndarray:
    """Sum of 1/log2(p + 1) over positions first..min(last, K); 0 when first > K."""
    top = max(int(last.max()) if last.size else 0, cutoff)
    prefix = np.r_[0.0, np.cumsum(1.0 / np.log2(np.arange(1, top + 1) + 1.0))]
    return np.where(first <= cutoff, prefix[np.minimum(last, cutoff)] - prefix[first - 1], 0.0)


def explain(
    candidates: pl.DataFrame,
    judgments: pl.DataFrame,
    spec: EvaluationSpec,
    *,
    query_id: str,
    ranker: str,
    cutoff: int,
) -> Trace:
    """The per-candidate trace of one per-query number (see the module docstring). A version
    with raters is traced in the grades of the spec's rule."""
    return explain_many(candidates, judgments, spec, [(ranker, query_id, cutoff)])[0]


def explain_many(
    candidates: pl.DataFrame,
    judgments: pl.DataFrame,
    spec: EvaluationSpec,
    keys: list[tuple[str, str, int]],
) -> list[Trace]:
    """The traces of ``keys``, each a (ranker, query_id, cutoff), in their order. The frames are
    cut to the keys' queries, the raters' grades combined and the kernel run once for them
    all: a report's dozens of traces cost one kernel pass over a few queries, not one pass
    each over the whole pool."""
    if not keys:
        return []
    version = (
        str(judgments["judgment_version"][0])
        if "judgment_version" in judgments.columns and judgments.height else None
    )
    query_ids = sorted({str(query_id) for _, query_id, _ in keys})
    candidates = candidates.filter(pl.col("query_id").cast(pl.String).is_in(query_ids))
    judgments = judgments.filter(pl.col("query_id").cast(pl.String).is_in(query_ids))
    judgments = combine_ratings(judgments, spec) if is_rated(judgments) else judgments
    kernel = score(candidates, judgments, spec).with_columns(
        pl.col("ranker").cast(pl.String), pl.col("query_id").cast(pl.String))
    return [_trace(candidates, judgments, kernel, version, spec, query_id=str(query_id),
                   ranker=ranker, cutoff=cutoff) for ranker, query_id, cutoff in keys]


def _trace(candidates: pl.DataFrame, judgments: pl.DataFrame, kernel: pl.DataFrame,
           version: str | None, spec: EvaluationSpec, *, query_id: str, ranker: str,
           cutoff: int) -> Trace:
    listed = candidates.filter(
        (pl.col("ranker").cast(pl.String) == ranker)
        & (pl.col("query_id").cast(pl.String) == query_id)
    )
    graded_rows = judgments.filter(pl.col("query_id").cast(pl.String) == query_id)
    # A ranker that did not return the query has no number of its own here, whatever the
    # kernel reports for it under `missing_from_run`.
    number = kernel.filter(
        (pl.col("ranker") == ranker) & (pl.col("query_id") == query_id)
        & (pl.col("cutoff") == cutoff)
    ) if listed.height else kernel.clear()
    status = number["status"][0] if number.height else "missing_from_run"
    ndcg = number["ndcg"][0] if number.height else None

    judged = graded_rows.select(
        pl.col("doc_id").cast(pl.String), "grade",
        pl.col("grade_status").cast(pl.String),
    )
    # Equal scores in the kernel's order: by doc_id, or under ties: rank by the run's rank.
    tie_order = pl.col(RANK) if spec.needs_rank else pl.col("doc_id").cast(pl.String)
    ranked = (
        listed.select(pl.col("doc_id").cast(pl.String), pl.col("score").cast(pl.Float64),
                      tie_order.alias("tie order"))
        .join(judged, on="doc_id", how="left")
        .with_columns(pl.col("grade_status").fill_null("unjudged"))
        .sort(["score", "tie order"], descending=[True, spec.ties == "trec_eval"])
        .drop("tie order")
    )
    status_of = ranked["grade_status"].to_numpy()
    is_graded = status_of == "graded"
    gain = np.zeros(ranked.height)
    gain[is_graded] = gains_for_grades(ranked["grade"].to_numpy()[is_graded], spec)
    keep = (
        is_graded
        | ((status_of == "unknown") & (spec.unknown != "exclude"))
        | ((status_of == "unjudged") & (spec.unjudged != "exclude"))
    )
    kept_scores = ranked["score"].to_numpy()[keep]
    m = int(keep.sum())
    position = np.arange(1, m + 1)
    if spec.ties == "average" and m:
        starts = np.flatnonzero(np.r_[True, kept_scores[1:] != kept_scores[:-1]])
        sizes = np.diff(np.r_[starts, m])
        first, last = np.repeat(position[starts], sizes), np.repeat(position[starts] + sizes - 1, sizes)
    else:
        first, last = position, position
    discount_kept = _discount_sum(first, last, cutoff) / (last - first + 1)

    n = ranked.height
    first_all = np.full(n, -1)
    last_all = np.full(n, -1)
    discount = np.full(n, np.nan)
    first_all[keep], last_all[keep], discount[keep] = first, last, discount_kept
    gain_used = np.where(keep, gain, np.nan)
    contribution = np.where(keep, gain * np.nan_to_num(discount), 0.0)
    note = np.where(
        keep, "",
        np.where(status_of == "unknown", "dropped: unknown=exclude", "dropped: unjudged=exclude"),
    )
    trace = ranked.with_columns(
        pl.lit(query_id).alias("query_id"),
        pl.lit(version, dtype=pl.String).alias("judgment_version"),
        pl.Series("position_first", first_all).replace(-1, None),
        pl.Series("position_last", last_all).replace(-1, None),
        pl.Series("gain", gain_used, nan_to_null=True),
        pl.Series("discount", discount, nan_to_null=True),
        pl.Series("contribution", contribution),
        pl.Series("note", note),
    ).with_row_index("rank", offset=1).select(
        "rank", "query_id", "doc_id", "judgment_version", "score", "grade", "grade_status",
        "position_first", "position_last", "gain", "discount", "contribution", "note",
    )

    ideal = _ideal_order(trace, graded_rows, spec, cutoff)
    return Trace(
        query_id=query_id, ranker=ranker, cutoff=cutoff, judgment_version=version,
        status=status, dcg=float(contribution.sum()),
        ideal_dcg=float(ideal["contribution"].sum()), ndcg=ndcg,
        candidates=trace, ideal=ideal,
    )


def _ideal_order(trace: pl.DataFrame, graded_rows: pl.DataFrame, spec: EvaluationSpec,
                 cutoff: int) -> pl.DataFrame:
    """The ideal set's gains high to low: kept candidates, or every judged doc (all_judged)."""
    if spec.ideal == "candidates":
        pool = trace.filter(pl.col("position_first").is_not_null()).select("doc_id", "gain")
    else:
        is_graded = (graded_rows["grade_status"].cast(pl.String) == "graded").to_numpy()
        gain = np.zeros(graded_rows.height)
        gain[is_graded] = gains_for_grades(graded_rows["grade"].to_numpy()[is_graded], spec)
        pool = pl.DataFrame({"doc_id": graded_rows["doc_id"].cast(pl.String), "gain": gain})
    pool = pool.sort(["gain", "doc_id"], descending=[True, False])
    position = np.arange(1, pool.height + 1)
    discount = np.where(position <= cutoff, 1.0 / np.log2(position + 1.0), 0.0)
    return pool.with_columns(
        pl.Series("ideal_position", position),
        pl.Series("discount", discount),
        pl.Series("contribution", pool["gain"].to_numpy() * discount),
    ).select("ideal_position", "doc_id", "gain", "discount", "contribution")
