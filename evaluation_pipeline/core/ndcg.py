"""Per-query NDCG@K under a declared spec (contract section 3), vectorized over whole columns.

Candidates are segmented into (ranker, query) blocks (a ranker's output already comes grouped,
so usually nothing moves), ordered by score within each block with one numeric sort, and every
quantity is a segment reduction with ``np.bincount``: no Python loop over queries, and no string
column is ever reordered. All cutoffs are scored in the same pass.

Ties: a *tie group* is a run of equal scores within a query. Under ``ties=average`` a group
contributes its mean gain times the sum of the discounts of the positions it spans (positions
past K discount to 0), which is the expected DCG over all orders of the group, as
``sklearn.metrics.ndcg_score`` computes it. Under ``doc_id`` and ``trec_eval`` ties every
candidate is its own group, ordered by doc_id ascending or descending (UTF-8 bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from evaluation_pipeline.core.gains import gains_for_grades
from evaluation_pipeline.spec import EvaluationSpec

# Candidate classes (contract section 3, rule 1).
GRADED, UNKNOWN, UNJUDGED = 0, 1, 2

STATUSES = ("scored", "no_positive", "incomplete", "not_judged", "missing_from_run")

RESULT_SCHEMA: dict[str, pl.DataType] = {
    "ranker": pl.String(),
    "query_id": pl.String(),
    "cutoff": pl.Int64(),
    "dcg": pl.Float64(),
    "ideal_dcg": pl.Float64(),
    "ndcg": pl.Float64(),
    "status": pl.String(),
    "n_candidates": pl.Int64(),
    "n_graded": pl.Int64(),
    "n_unknown": pl.Int64(),
    "n_unjudged": pl.Int64(),
    "judged_at_k": pl.Float64(),
    "candidate_recall": pl.Float64(),
}


@dataclass(frozen=True)
class JudgmentIndex:
    """A judgment version prepared for scoring under one spec: gains and per-query facts.

    Built once per (version, spec) and shared by every batch of a streamed run.
    """

    grades: pl.DataFrame  # query_id, doc_id, grade_class, gain
    queries: pl.DataFrame  # query_id, n_positive, has_unknown, ideal_max_gain, ideal_dcg_K...
    cutoffs: tuple[int, ...]


def index_judgments(judgments: pl.DataFrame, spec: EvaluationSpec) -> JudgmentIndex:
    """Gains for graded rows and, per query, the facts the statuses and all_judged ideal need."""
    graded = judgments["grade_status"].cast(pl.String) == "graded"
    grade_values = judgments["grade"].fill_null(0).to_numpy()
    is_graded = graded.to_numpy()
    gain = np.zeros(judgments.height)
    gain[is_graded] = gains_for_grades(grade_values[is_graded], spec)
    grades = pl.DataFrame(
        {
            "query_id": judgments["query_id"].cast(pl.String),
            "doc_id": judgments["doc_id"].cast(pl.String),
            "grade_class": pl.Series(np.where(is_graded, GRADED, UNKNOWN), dtype=pl.Int8),
            "gain": gain,
        }
    )
    # The all_judged ideal: every graded document of the query, gains high to low.
    ordered = grades.sort(["query_id", "gain"], descending=[False, True])
    qid = ordered["query_id"].rle_id().to_numpy()
    n_queries = int(qid[-1]) + 1 if len(qid) else 0
    ideal = _ideal_dcg(qid, ordered["gain"].to_numpy(), n_queries, spec.cutoffs)
    is_positive = ordered["gain"].to_numpy() > 0
    is_unknown = ordered["grade_class"].to_numpy() == UNKNOWN
    facts = {
        "query_id": ordered["query_id"].gather(_segment_starts(qid)),
        "n_positive": np.bincount(qid, is_positive, minlength=n_queries).astype(np.int64),
        "has_unknown": np.bincount(qid, is_unknown, minlength=n_queries) > 0,
    }
    for j, k in enumerate(spec.cutoffs):
        facts[f"ideal_dcg_{k}"] = ideal[:, j]
    return JudgmentIndex(grades=grades, queries=pl.DataFrame(facts), cutoffs=spec.cutoffs)


def score_candidates(
    candidates: pl.DataFrame, index: JudgmentIndex, spec: EvaluationSpec
) -> pl.DataFrame:
    """Per-query rows for every (ranker, query) in ``candidates`` and every cutoff.

    ``candidates`` holds whole queries (ranker, query_id, doc_id, score); rows for queries a
    ranker did not return come from :func:`missing_from_run`.
    """
    if candidates.height == 0:
        return pl.DataFrame(schema=RESULT_SCHEMA)
    frame, keys = _grouped(
        candidates.select(
            pl.col("ranker").cast(pl.String),
            pl.col("query_id").cast(pl.String),
            pl.col("doc_id").cast(pl.String),
            pl.col("score").cast(pl.Float64),
        )
    )
    group = frame["gid"].to_numpy()
    n_groups = int(group[-1]) + 1
    cls, gain = _grade_candidates(frame, index)
    # Exclusion moves later candidates up; `zero` and `incomplete` keep them with gain 0.
    keep = (
        (cls == GRADED)
        | ((cls == UNKNOWN) & (spec.unknown != "exclude"))
        | ((cls == UNJUDGED) & (spec.unjudged != "exclude"))
    )
    # Strings never move: only the numeric columns follow the ranking order.
    order = _ranking_order(frame, group, spec.ties, max(spec.cutoffs), keep)
    if order is not None:
        group, cls, gain, keep = group[order], cls[order], gain[order], keep[order]
        score = frame["score"].to_numpy()[order]
    else:
        score = frame["score"].to_numpy()
    average = spec.ties == "average"
    cutoffs = spec.cutoffs

    counts = np.bincount(group * 3 + cls, minlength=3 * n_groups).reshape(n_groups, 3).T
    n_candidates = counts.sum(axis=0)

    # judged@K: share of graded documents in the first min(K, n) places, before exclusion.
    graded_top = _tie_group_sums(
        group, score, (cls == GRADED).astype(np.float64), n_groups, cutoffs, average, _count
    )
    places = np.minimum(n_candidates[:, None], np.array(cutoffs)[None, :])
    judged_at_k = graded_top / places

    k_group, k_score, k_gain = group[keep], score[keep], gain[keep]
    dcg = _tie_group_sums(k_group, k_score, k_gain, n_groups, cutoffs, average, _log2_discount)

    facts = keys.join(index.queries, on="query_id", how="left", maintain_order="left")
    judged = facts["n_positive"].is_not_null().to_numpy()
    if spec.ideal == "candidates":
        order = np.lexsort((-k_gain, k_group))
        ideal = _ideal_dcg(k_group[order], k_gain[order], n_groups, cutoffs)
    else:
        ideal = np.stack(
            [facts[f"ideal_dcg_{k}"].fill_null(0.0).to_numpy() for k in cutoffs], axis=1
        )
    ideal = np.asarray(ideal, dtype=np.float64).reshape(n_groups, len(cutoffs))

    incomplete = np.zeros(n_groups, dtype=bool)
    if spec.unknown == "incomplete":
        incomplete |= counts[UNKNOWN] > 0
        if spec.ideal == "all_judged":
            incomplete |= facts["has_unknown"].fill_null(False).to_numpy()
    if spec.unjudged == "incomplete":
        incomplete |= counts[UNJUDGED] > 0
    no_positive = ideal[:, 0] <= 0  # gains sorted high to low: ideal@1 is 0 iff all are 0
    status = np.select(
        [~judged, incomplete, no_positive], ["not_judged", "incomplete", "no_positive"], "scored"
    )

    n_positive = facts["n_positive"].fill_null(0).to_numpy()
    positive_candidates = np.bincount(group, (cls == GRADED) & (gain > 0), minlength=n_groups)
    with np.errstate(divide="ignore", invalid="ignore"):
        recall = np.where(n_positive > 0, positive_candidates / n_positive, np.nan)

    return _assemble(
        keys, cutoffs, status, dcg, ideal, counts, judged_at_k, recall, spec
    )


def _grouped(frame: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``frame`` with each (ranker, query_id) in one contiguous block and its block id ``gid``,
    and the (ranker, query_id) of each block in block order.

    A ranker's output already comes grouped, and then nothing moves; other input is sorted by
    the group key once (a string sort, the one expensive step this avoids in the common case).
    """
    # A block starts where either key changes.
    ids = frame.select(pl.col("ranker").rle_id(), pl.col("query_id").rle_id())
    changed = (ids["ranker"].diff() != 0) | (ids["query_id"].diff() != 0)
    frame = frame.with_columns(changed.fill_null(False).cum_sum().cast(pl.Int64).alias("gid"))
    keys = _block_keys(frame)
    if keys.is_duplicated().any():
        frame = frame.drop("gid").sort(["ranker", "query_id"], maintain_order=True)
        frame = frame.with_columns(pl.struct("ranker", "query_id").rle_id().cast(pl.Int64).alias("gid"))
        keys = _block_keys(frame)
    return frame, keys


def _block_keys(frame: pl.DataFrame) -> pl.DataFrame:
    """(ranker, query_id) of each block, in block order (a filter: cheaper than a gather)."""
    first = pl.col("gid") != pl.col("gid").shift(1, fill_value=-1)
    return frame.lazy().filter(first).select("ranker", "query_id").collect()


def _grade_candidates(frame: pl.DataFrame, index: JudgmentIndex) -> tuple[np.ndarray, np.ndarray]:
    """Each candidate's class (graded, unknown, unjudged) and gain, in ``frame``'s row order."""
    matched = (
        frame.lazy()
        .select("query_id", "doc_id")
        .with_row_index("row")
        .join(index.grades.lazy(), on=["query_id", "doc_id"], how="inner")
        .select("row", "grade_class", "gain")
        .collect()
    )
    rows = matched["row"].to_numpy()
    cls = np.full(frame.height, UNJUDGED, dtype=np.int8)
    cls[rows] = matched["grade_class"].to_numpy()
    gain = np.zeros(frame.height)
    gain[rows] = matched["gain"].to_numpy()
    return cls, gain


def _ranking_order(
    frame: pl.DataFrame, group: np.ndarray, ties: str, reach: int, keep: np.ndarray
) -> np.ndarray | None:
    """Row order within each group: score high to low, then the tie rule; None if already so.

    Under ``average`` the order inside a tie group does not matter. Otherwise doc_id breaks
    ties, ascending (``doc_id``) or descending (``trec_eval``), comparing UTF-8 bytes; only tie
    groups that start within ``reach`` (the largest cutoff) can change a number, so only their
    doc_ids are compared. ``keep`` marks the candidates that stay after exclusion: a tie group
    further down moves up when excluded candidates before it drop out.
    """
    score = frame["score"].to_numpy()
    same_group = group[1:] == group[:-1]
    order = None
    if (same_group & (score[1:] > score[:-1])).any():
        by_score = frame.select(pl.arg_sort_by(["gid", "score"], descending=[False, True]))
        order = by_score.to_series().to_numpy(writable=True)
        score = score[order]
    if ties == "average":
        return order
    tied = np.r_[False, same_group & (score[1:] == score[:-1])]
    if not tied.any():
        return order
    # Tie groups as runs of rows; keep those whose first kept place is within reach.
    first = np.flatnonzero(np.r_[tied[1:], False] & ~tied)
    kept = keep if order is None else keep[order]
    kept_before = np.cumsum(kept) - kept
    place = kept_before - kept_before[np.repeat(*_starts_and_lengths(group))] + 1
    first = first[place[first] <= reach]
    if len(first) == 0:
        return order
    size = np.diff(np.r_[np.flatnonzero(~tied), len(tied)])[np.searchsorted(
        np.flatnonzero(~tied), first)]
    rows = np.repeat(first - np.r_[0, np.cumsum(size)[:-1]], size) + np.arange(size.sum())
    if order is None:
        order = np.arange(len(group))
    tie_run = np.repeat(np.arange(len(first)), size)
    docs = pl.DataFrame({"run": tie_run, "doc_id": frame["doc_id"].gather(order[rows])})
    within = docs.select(
        pl.arg_sort_by(["run", "doc_id"], descending=[False, ties == "trec_eval"])
    ).to_series().to_numpy()
    order[rows] = order[rows][within]
    return order


def missing_from_run(
    index: JudgmentIndex,
    returned: pl.DataFrame,
    rankers: list[str],
    spec: EvaluationSpec,
) -> pl.DataFrame:
    """Rows for queries of the version with a positive gain that a ranker did not return.

    ``returned`` lists the (ranker, query_id) pairs present in the run.
    """
    positive = index.queries.filter(pl.col("n_positive") > 0).select("query_id")
    if not rankers or positive.height == 0:
        return pl.DataFrame(schema=RESULT_SCHEMA)
    all_pairs = pl.DataFrame({"ranker": rankers}).join(positive, how="cross")
    missing = all_pairs.join(
        returned.select(pl.col("ranker").cast(pl.String), pl.col("query_id").cast(pl.String)),
        on=["ranker", "query_id"],
        how="anti",
    ).sort("ranker", "query_id")
    n = missing.height
    if n == 0:
        return pl.DataFrame(schema=RESULT_SCHEMA)
    k = len(spec.cutoffs)
    score = 0.0 if spec.missing_from_run == "zero" else None
    return pl.DataFrame(
        {
            "ranker": np.repeat(missing["ranker"].to_numpy(), k),
            "query_id": np.repeat(missing["query_id"].to_numpy(), k),
            "cutoff": np.tile(np.array(spec.cutoffs, dtype=np.int64), n),
            "dcg": [None] * (n * k),
            "ideal_dcg": [None] * (n * k),
            "ndcg": [score] * (n * k),
            "status": ["missing_from_run"] * (n * k),
            "n_candidates": np.zeros(n * k, dtype=np.int64),
            "n_graded": np.zeros(n * k, dtype=np.int64),
            "n_unknown": np.zeros(n * k, dtype=np.int64),
            "n_unjudged": np.zeros(n * k, dtype=np.int64),
            "judged_at_k": [None] * (n * k),
            "candidate_recall": np.zeros(n * k, dtype=np.float64),
        },
        schema=RESULT_SCHEMA,
    )


def score(
    candidates: pl.DataFrame, judgments: pl.DataFrame, spec: EvaluationSpec
) -> pl.DataFrame:
    """Every per-query row of a whole run in memory: scored queries plus missing_from_run."""
    index = index_judgments(judgments, spec)
    scored = score_candidates(candidates, index, spec)
    returned = candidates.select("ranker", "query_id").unique()
    rankers = sorted(candidates["ranker"].cast(pl.String).unique().to_list())
    missing = missing_from_run(index, returned, rankers, spec)
    return sort_results(pl.concat([scored, missing]))


def sort_results(results: pl.DataFrame) -> pl.DataFrame:
    """The one row order of per-query results: ranker, query_id, cutoff (byte-wise)."""
    return results.sort(["ranker", "query_id", "cutoff"])


# -- segment arithmetic ---------------------------------------------------------------------


def _segment_starts(group: np.ndarray) -> np.ndarray:
    """Index of the first row of each run of equal values in a sorted id array."""
    if len(group) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.r_[True, group[1:] != group[:-1]])


def _starts_and_lengths(group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    starts = _segment_starts(group)
    return starts, np.diff(np.r_[starts, len(group)])


def _positions(group: np.ndarray) -> np.ndarray:
    """1-based position of each row within its segment."""
    return np.arange(len(group)) - np.repeat(*_starts_and_lengths(group)) + 1


def _log2_discount(first: np.ndarray, last: np.ndarray, cutoff: int) -> np.ndarray:
    """Sum of 1/log2(p + 1) over positions first..min(last, cutoff)."""
    single = 1.0 / np.log2(first + 1.0)
    if np.array_equal(first, last):
        return single
    top = int(min(last.max(), cutoff)) if len(last) else 0
    prefix = np.r_[0.0, np.cumsum(1.0 / np.log2(np.arange(1, top + 1) + 1.0))]
    span = prefix[np.minimum(last, cutoff)] - prefix[np.minimum(first - 1, cutoff)]
    return np.where(first == last, single, span)


def _count(first: np.ndarray, last: np.ndarray, cutoff: int) -> np.ndarray:
    """Number of positions first..min(last, cutoff)."""
    return (np.minimum(last, cutoff) - first + 1).astype(np.float64)


def _tie_group_sums(group, score, value, n_groups, cutoffs, average, weight) -> np.ndarray:
    """sum over tie groups of mean(value) * weight(positions of the group up to K), per segment.

    Returns an array (n_groups, len(cutoffs)).
    """
    out = np.zeros((n_groups, len(cutoffs)))
    if len(group) == 0:
        return out
    position = _positions(group)
    if average:
        boundary = np.r_[True, (group[1:] != group[:-1]) | (score[1:] != score[:-1])]
        first_row = np.flatnonzero(boundary)
        last_row = np.r_[first_row[1:], len(group)] - 1
    else:
        first_row = np.arange(len(group))
        last_row = first_row
    # Only tie groups that start within the largest cutoff contribute.
    reach = position[first_row] <= max(cutoffs)
    first_row, last_row = first_row[reach], last_row[reach]
    first, last = position[first_row], position[last_row]
    if average:
        # Sums over [first_row, last_row] for groups that need not be adjacent: reduce over the
        # interleaved bounds and keep every other sum.
        bounds = np.ravel(np.column_stack([first_row, last_row + 1]))
        sums = np.add.reduceat(np.r_[value, 0.0], bounds)[::2]
        mean_value = sums / (last - first + 1)
    else:
        mean_value = value[first_row]
    tie_group = group[first_row]
    for j, k in enumerate(cutoffs):
        within = first <= k
        if not within.any():
            continue
        w = weight(first[within], last[within], k)
        out[:, j] = np.bincount(tie_group[within], mean_value[within] * w, minlength=n_groups)
    return out


def _ideal_dcg(group, sorted_gain, n_groups, cutoffs) -> np.ndarray:
    """DCG@K of gains already sorted high to low within each segment."""
    out = np.zeros((n_groups, len(cutoffs)))
    if len(group) == 0:
        return out
    position = _positions(group)
    contribution = sorted_gain / np.log2(position + 1.0)
    for j, k in enumerate(cutoffs):
        within = position <= k
        out[:, j] = np.bincount(group[within], contribution[within], minlength=n_groups)
    return out


def _assemble(keys, cutoffs, status, dcg, ideal, counts, judged_at_k, recall, spec):
    n, k = keys.height, len(cutoffs)
    status_rows = np.repeat(status, k)
    open_rows = np.isin(status_rows, ("incomplete", "not_judged"))
    dcg_rows = np.where(open_rows, np.nan, dcg.reshape(-1))
    ideal_rows = np.where(open_rows, np.nan, ideal.reshape(-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        ndcg_rows = np.where(status_rows == "scored", dcg_rows / ideal_rows, np.nan)
    if spec.no_positive == "zero":
        ndcg_rows = np.where(status_rows == "no_positive", 0.0, ndcg_rows)
    frame = pl.DataFrame(
        {
            "ranker": np.repeat(keys["ranker"].to_numpy(), k),
            "query_id": np.repeat(keys["query_id"].to_numpy(), k),
            "cutoff": np.tile(np.array(cutoffs, dtype=np.int64), n),
            "dcg": dcg_rows,
            "ideal_dcg": ideal_rows,
            "ndcg": ndcg_rows,
            "status": status_rows,
            "n_candidates": np.repeat(counts.sum(axis=0), k),
            "n_graded": np.repeat(counts[GRADED], k),
            "n_unknown": np.repeat(counts[UNKNOWN], k),
            "n_unjudged": np.repeat(counts[UNJUDGED], k),
            "judged_at_k": judged_at_k.reshape(-1),
            "candidate_recall": np.repeat(recall, k),
        },
        schema=RESULT_SCHEMA,
        nan_to_null=True,
    )
    return frame
