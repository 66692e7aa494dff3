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

from evaluation_pipeline.metric import discounts
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
    each over the whole pool. The traces are then computed as whole columns over all the keys'
    rows (a key's rows once for each key that asks for them), and cut into one frame per key
    at the end."""
    if not keys:
        return []
    version, candidates, judgments, judged = prepared(
        candidates, judgments, spec, {str(query_id) for _, query_id, _ in keys})
    kernel = score(candidates, judgments, spec.ndcg_only()).with_columns(
        pl.col("ranker").cast(pl.String), pl.col("query_id").cast(pl.String))
    wanted = pl.DataFrame(
        {"key": range(len(keys)), "ranker": [str(r) for r, _, _ in keys],
         "query_id": [str(q) for _, q, _ in keys], "cutoff": [int(k) for _, _, k in keys]},
        schema={"key": pl.Int64, "ranker": pl.String, "query_id": pl.String,
                "cutoff": pl.Int64})
    listed = _listed(candidates, judged, wanted, spec)
    ideal = _ideal_orders(listed, judged, wanted, spec)
    numbers = wanted.join(kernel.select("ranker", "query_id", "cutoff", "status", "ndcg"),
                          on=["ranker", "query_id", "cutoff"], how="left",
                          maintain_order="left")
    rows = _by_key(listed.with_columns(pl.lit(version, dtype=pl.String)
                                       .alias("judgment_version")).select("key", *_TRACE))
    ideals = _by_key(ideal)
    statuses, ndcgs = numbers["status"].to_list(), numbers["ndcg"].to_list()
    traces = []
    for key, (ranker, query_id, cutoff) in enumerate(keys):
        trace = rows.get(key, rows[None])
        order = ideals.get(key, ideals[None])
        # A ranker that did not return the query has no number of its own here, whatever the
        # kernel reports for it under `missing_from_run`.
        returned = trace.height > 0 and statuses[key] is not None
        traces.append(Trace(
            query_id=str(query_id), ranker=ranker, cutoff=cutoff, judgment_version=version,
            status=statuses[key] if returned else "missing_from_run",
            # numpy's sum for the DCG, polars' for the ideal: the sums the traces have always
            # printed, to the last digit (the two add in different orders).
            dcg=float(trace["contribution"].to_numpy().sum()),
            ideal_dcg=float(order["contribution"].sum()),
            ndcg=ndcgs[key] if returned else None, candidates=trace, ideal=order))
    return traces


# A trace's columns, and its ideal order's.
_TRACE = ("rank", "query_id", "doc_id", "judgment_version", "score", "grade", "grade_status",
          "position_first", "position_last", "gain", "discount", "contribution", "note")
_IDEAL = ("ideal_position", "doc_id", "gain", "discount", "contribution")


def _by_key(frame: pl.DataFrame) -> dict:
    """Each key's rows, without the key, in their order; under None the empty frame."""
    parts = frame.partition_by("key", maintain_order=True, include_key=False, as_dict=True)
    return {**{key: part for (key,), part in parts.items()}, None: frame.drop("key").clear()}


def prepared(candidates: pl.DataFrame, judgments: pl.DataFrame, spec: EvaluationSpec,
             query_ids: set[str]) -> tuple[str | None, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(judgment version, candidates, judgments, judged) cut to ``query_ids``: the raters'
    grades combined by the spec's rule, and ``judged`` the judgments' query_id, doc_id, grade
    and grade_status as strings, what the traces join the candidates with."""
    version = (
        str(judgments["judgment_version"][0])
        if "judgment_version" in judgments.columns and judgments.height else None
    )
    query_ids = sorted(query_ids)
    candidates = candidates.filter(pl.col("query_id").cast(pl.String).is_in(query_ids))
    judgments = judgments.filter(pl.col("query_id").cast(pl.String).is_in(query_ids))
    judgments = combine_ratings(judgments, spec) if is_rated(judgments) else judgments
    judged = judgments.select(pl.col("query_id").cast(pl.String),
                              pl.col("doc_id").cast(pl.String), "grade",
                              pl.col("grade_status").cast(pl.String))
    return version, candidates, judgments, judged


def ranked_candidates(candidates: pl.DataFrame, judged: pl.DataFrame, wanted: pl.DataFrame,
                      spec: EvaluationSpec) -> pl.DataFrame:
    """The candidates of each key of ``wanted`` (key, ranker, query_id, ...) in the kernel's
    order (score descending, then the tie rule), with their grade and class (unjudged when
    the version lacks them)."""
    # Equal scores in the kernel's order: by doc_id, or under ties: rank by the run's rank.
    tie_order = pl.col(RANK) if spec.needs_rank else pl.col("doc_id").cast(pl.String)
    # The scores as the spec reads them (``metric.ndcg.run_scores``).
    read = pl.Float32 if spec.scores == "float32" else pl.Float64
    return (
        candidates.select(pl.col("ranker").cast(pl.String), pl.col("query_id").cast(pl.String),
                          pl.col("doc_id").cast(pl.String),
                          pl.col("score").cast(read).cast(pl.Float64),
                          tie_order.alias("tie order"))
        .join(wanted, on=["ranker", "query_id"], how="inner")
        .join(judged, on=["query_id", "doc_id"], how="left")
        .with_columns(pl.col("grade_status").fill_null("unjudged"))
        .sort(["key", "score", "tie order"], descending=[False, True, spec.ties == "trec_eval"])
    )


def _listed(candidates: pl.DataFrame, judged: pl.DataFrame, wanted: pl.DataFrame,
            spec: EvaluationSpec) -> pl.DataFrame:
    """Every key's candidates in the kernel's order, with their class, the positions the tie
    rule gives the kept ones, gain, discount and contribution: one pass over all keys."""
    ranked = ranked_candidates(candidates, judged, wanted, spec)
    status_of = ranked["grade_status"].to_numpy()
    is_graded = status_of == "graded"
    gain = np.zeros(ranked.height)
    gain[is_graded] = gains_for_grades(ranked["grade"].to_numpy()[is_graded], spec)
    keep = (
        is_graded
        | ((status_of == "unknown") & (spec.unknown != "exclude"))
        | ((status_of == "unjudged") & (spec.unjudged != "exclude"))
    )
    # Positions 1..m among each key's kept candidates; under ties=average a tie group (equal
    # scores, adjacent in this order) spans its first..last and each member gets the group's
    # mean discount over that span (positions past K discount to 0), as the kernel scores it.
    kept = ranked.select("key", "score").with_columns(pl.Series("kept", keep)).with_columns(
        pl.col("kept").cast(pl.Int64).cum_sum().over("key").alias("position"))
    if spec.ties == "average":
        group = ["key", "score", "kept"]  # -0.0 and +0.0 one group, as polars hashes them
        kept = kept.with_columns(pl.col("position").min().over(group).alias("first"),
                                 pl.col("position").max().over(group).alias("last"))
    else:
        kept = kept.with_columns(pl.col("position").alias("first"),
                                 pl.col("position").alias("last"))
    first, last = kept["first"].to_numpy(), kept["last"].to_numpy()
    cutoff = ranked["cutoff"].to_numpy()
    top = max(int(last.max()) if last.size else 0, int(cutoff.max()) if cutoff.size else 0)
    prefix = discounts.prefix(spec.discount, top)  # the kernel's own sums of the discounts
    inside = keep & (first <= cutoff)
    discount_kept = np.where(
        inside, prefix[np.minimum(last, cutoff)] - prefix[np.maximum(first - 1, 0)], 0.0
    ) / np.where(keep, last - first + 1, 1)
    discount = np.where(keep, discount_kept, np.nan)
    contribution = np.where(keep, gain * np.nan_to_num(discount), 0.0)
    note = np.where(
        keep, "",
        np.where(status_of == "unknown", "dropped: unknown=exclude", "dropped: unjudged=exclude"),
    )
    return ranked.with_columns(
        pl.Series("position_first", np.where(keep, first, -1)).replace(-1, None),
        pl.Series("position_last", np.where(keep, last, -1)).replace(-1, None),
        pl.Series("gain", np.where(keep, gain, np.nan), nan_to_null=True),
        pl.Series("discount", discount, nan_to_null=True),
        pl.Series("contribution", contribution),
        pl.Series("note", note),
        (pl.int_range(pl.len(), dtype=pl.UInt32).over("key") + 1).alias("rank"),
    )


def _ideal_orders(listed: pl.DataFrame, judged: pl.DataFrame, wanted: pl.DataFrame,
                  spec: EvaluationSpec) -> pl.DataFrame:
    """Each key's ideal set, gains high to low: its kept candidates, or every judged document
    of its query (all_judged)."""
    if spec.ideal == "candidates":
        pool = listed.filter(pl.col("position_first").is_not_null()).select(
            "key", "cutoff", "doc_id", "gain")
    else:
        pool = wanted.select("key", "query_id", "cutoff").join(
            judged, on="query_id", how="inner").drop("query_id")
        is_graded = (pool["grade_status"] == "graded").to_numpy()
        gain = np.zeros(pool.height)
        gain[is_graded] = gains_for_grades(pool["grade"].to_numpy()[is_graded], spec)
        pool = pool.select("key", "cutoff", "doc_id", pl.Series("gain", gain))
    pool = pool.sort(["key", "gain", "doc_id"], descending=[False, True, False]).with_columns(
        (pl.int_range(pl.len(), dtype=pl.Int64).over("key") + 1).alias("ideal_position"))
    position = pool["ideal_position"].to_numpy()
    weight = discounts.discount_table(spec.discount, max(int(position.max(initial=0)), 1))
    discount = np.where(position <= pool["cutoff"].to_numpy(),
                        weight[np.maximum(position, 1) - 1], 0.0)
    return pool.with_columns(
        pl.Series("discount", discount),
        pl.Series("contribution", pool["gain"].to_numpy() * discount),
    ).select("key", *_IDEAL)
