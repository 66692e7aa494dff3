"""How far the raters of a version agree, and whether they rank the rankers alike (contract
section 1, Several raters; the fields of ``ndcg-eval agreement --json`` and report.json's
``agreement``, evaluation_pipeline/report/REPORT_FORMAT.md).

Only grades count here: an ``unknown`` rating is no rating. The grades are the categories from
the version's lowest to its highest grade. Per pair of raters, over the documents both graded:
Cohen's kappa, unweighted and with quadratic weights (the squared difference of the grades),
the confusion matrix and the mean difference (a minus b). Over all raters: Krippendorff's
alpha, ordinal and interval, over every rating (documents with at least two grades pair up);
Fleiss' kappa over the documents that every rater graded. With a run: NDCG@K per ranker under
each rater alone (``rater:<id>``) and under the spec's rule, and Kendall's tau-b between the
orders the raters put the rankers in. A statistic that is 0/0 (one category only, fewer than
two rankers) is None. Plain numpy and polars: a version's ratings fit in memory.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import polars as pl

from evaluation_pipeline.metric.ndcg import score
from evaluation_pipeline.metric.raters import check_rule, is_rated
from evaluation_pipeline.spec import EvaluationSpec
from schemas import columns
from schemas.columns import with_measure_columns
from schemas.errors import EvaluationError, InputError, violation

RULE = "rule"  # the rater name of the numbers under the spec's own rule
# Grades are categories here, every one from the lowest to the highest (confusion matrices
# and coincidences are that square): a span past this is not a rating scale.
MAX_GRADES = 1024


class AgreementError(EvaluationError):
    """Grades that no agreement statistic reads as a rating scale."""


def graded_matrix(ratings: pl.DataFrame) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(raters, grades, documents x raters grades with NaN where a rater gave no grade)."""
    graded = ratings.filter(pl.col("grade_status") == columns.GRADED)
    raters = sorted(ratings[columns.RATER].unique().to_list())
    wide = (graded.select("query_id", "doc_id", columns.RATER, pl.col("grade").cast(pl.Float64))
            .pivot(on=columns.RATER, index=["query_id", "doc_id"], values="grade")
            .sort("query_id", "doc_id"))
    matrix = np.column_stack([wide[r].to_numpy() if r in wide.columns
                              else np.full(wide.height, np.nan) for r in raters]) if raters else (
        np.empty((0, 0)))
    grades = graded["grade"]
    if grades.len() and grades.max() - grades.min() >= MAX_GRADES:
        raise AgreementError(f"agreement reads grades as categories, at most {MAX_GRADES:,} "
                             f"from the lowest to the highest; these span {grades.min()} to "
                             f"{grades.max()}")
    values = (np.arange(grades.min(), grades.max() + 1) if grades.len()
              else np.empty(0, np.int64))
    return raters, values, matrix.astype(np.float64)


def confusion(a: np.ndarray, b: np.ndarray, grades: np.ndarray) -> np.ndarray:
    """Counts of (grade of a, grade of b) over the documents both graded."""
    k = len(grades)
    if k == 0:  # no rater gave a grade
        return np.zeros((0, 0), np.int64)
    both = ~np.isnan(a) & ~np.isnan(b)
    i = (a[both] - grades[0]).astype(np.int64)
    j = (b[both] - grades[0]).astype(np.int64)
    return np.bincount(i * k + j, minlength=k * k).reshape(k, k)


def cohen_kappa(table: np.ndarray, grades: np.ndarray, quadratic: bool = False) -> float | None:
    """1 - observed / expected disagreement, from the confusion matrix."""
    n = table.sum()
    if n == 0:
        return None
    weights = ((grades[:, None] - grades[None, :]) ** 2).astype(np.float64) if quadratic else (
        1.0 - np.eye(len(grades)))
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / n
    disagreement = (weights * expected).sum()
    if disagreement == 0:
        return None
    return float(1.0 - (weights * table).sum() / disagreement)


def krippendorff_alpha(matrix: np.ndarray, grades: np.ndarray, level: str) -> float | None:
    """Krippendorff's alpha from the coincidence matrix of the documents with at least two
    grades; ``level`` ``interval`` (squared difference) or ``ordinal`` (squared ranks)."""
    if matrix.size == 0 or len(grades) == 0:
        return None
    k = len(grades)
    present = ~np.isnan(matrix)
    counts = np.zeros((matrix.shape[0], k))
    rows, raters = np.nonzero(present)
    np.add.at(counts, (rows, (matrix[rows, raters] - grades[0]).astype(np.int64)), 1)
    pairable = counts.sum(axis=1)
    counts = counts[pairable >= 2]
    pairable = pairable[pairable >= 2]
    if len(pairable) == 0:
        return None
    scaled = counts / (pairable - 1)[:, None]
    coincidence = scaled.T @ counts - np.diag(scaled.sum(axis=0))
    marginal = coincidence.sum(axis=1)
    n = marginal.sum()
    if level == "interval":
        distance = (grades[:, None] - grades[None, :]).astype(np.float64) ** 2
    else:
        cumulative = np.cumsum(marginal)
        low, high = np.minimum.outer(np.arange(k), np.arange(k)), np.maximum.outer(
            np.arange(k), np.arange(k))
        between = cumulative[high] - np.r_[0.0, cumulative][low]
        distance = (between - (marginal[:, None] + marginal[None, :]) / 2) ** 2
    expected = (np.outer(marginal, marginal) * distance).sum()
    if expected == 0:
        return None
    return float(1.0 - (n - 1) * (coincidence * distance).sum() / expected)


def fleiss_kappa(matrix: np.ndarray, grades: np.ndarray) -> tuple[float | None, int]:
    """(Fleiss' kappa, documents) over the documents every rater graded."""
    full = matrix[~np.isnan(matrix).any(axis=1)]
    n_docs, n_raters = full.shape
    if n_docs == 0 or n_raters < 2:
        return None, int(n_docs)
    counts = np.zeros((n_docs, len(grades)))
    for r in range(n_raters):  # a column per rater: a handful, never a loop over documents
        counts[np.arange(n_docs), (full[:, r] - grades[0]).astype(np.int64)] += 1
    share = counts.sum(axis=0) / (n_docs * n_raters)
    per_doc = ((counts ** 2).sum(axis=1) - n_raters) / (n_raters * (n_raters - 1))
    chance = (share ** 2).sum()
    if chance == 1:
        return None, int(n_docs)
    return float((per_doc.mean() - chance) / (1 - chance)), int(n_docs)


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float | None:
    """Kendall's tau-b of two orders (ties in either counted as in scipy's default)."""
    keep = ~np.isnan(x) & ~np.isnan(y)
    x, y = x[keep], y[keep]
    if len(x) < 2:
        return None
    i, j = np.triu_indices(len(x), 1)
    dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    untied_x, untied_y = (dx != 0).sum(), (dy != 0).sum()
    if untied_x == 0 or untied_y == 0:
        return None
    return float((dx * dy).sum() / np.sqrt(untied_x * untied_y))


def rater_pairs(raters: list[str], grades: np.ndarray, matrix: np.ndarray) -> list[dict]:
    pairs = []
    for a, b in combinations(range(len(raters)), 2):
        table = confusion(matrix[:, a], matrix[:, b], grades)
        both = ~np.isnan(matrix[:, a]) & ~np.isnan(matrix[:, b])
        pairs.append({
            "rater_a": raters[a], "rater_b": raters[b], "overlap": int(both.sum()),
            "cohen_kappa": cohen_kappa(table, grades),
            "cohen_kappa_quadratic": cohen_kappa(table, grades, quadratic=True),
            "mean_difference": float(np.mean(matrix[both, a] - matrix[both, b]))
            if both.any() else None,
            "confusion": {"grades": [int(g) for g in grades], "counts": table.tolist()},
        })
    return pairs


def ndcg_by_rater(ratings: pl.DataFrame, candidates: pl.DataFrame, spec: EvaluationSpec,
                  raters: list[str]) -> pl.DataFrame:
    """The mean of each of the spec's headline measures (by default its nDCG@K) per ranker
    under each rater alone, and under the spec's rule when it has one: rater, ranker, cutoff,
    measure, mean (over the queries with a number)."""
    headline = list(spec.headline_measures)
    specs = [(rater, spec.replace(raters=f"rater:{rater}")) for rater in raters]
    if spec.raters is not None:
        specs.append((RULE, spec))
    frames = []
    for name, under in specs:  # one scoring pass per rater: every query at once
        per_query = with_measure_columns(score(candidates, ratings, under.headline_only())).filter(
            pl.col("measure").is_in(headline))
        frames.append(per_query.group_by("ranker", "cutoff", "measure").agg(
            pl.col("value").mean().alias("mean")).with_columns(rater=pl.lit(name)))
    if not frames:
        return pl.DataFrame(schema={"rater": pl.String, "ranker": pl.String,
                                    "cutoff": pl.Int64, "measure": pl.String,
                                    "mean": pl.Float64})
    order = {name: i for i, name in enumerate(headline)}
    return (pl.concat(frames).select("rater", "ranker", "cutoff", "measure", "mean")
            .sort("rater", "ranker", pl.col("measure").replace_strict(order)))


def ranker_order_taus(ndcg: pl.DataFrame, raters: list[str]) -> list[dict]:
    """Kendall's tau-b between the rankers' means under each pair of raters, per measure (of
    :func:`ndcg_by_rater`, in its order)."""
    out = []
    for (measure, cutoff), rows in ndcg.group_by("measure", "cutoff",
                                                 maintain_order=True):
        wide = rows.pivot(on="rater", index="ranker", values="mean").sort("ranker")
        for a, b in combinations(raters, 2):
            x, y = (wide[r].cast(pl.Float64).fill_null(np.nan).to_numpy() for r in (a, b))
            out.append({"rater_a": a, "rater_b": b, "cutoff": cutoff, "measure": measure,
                        "tau": kendall_tau_b(x, y)})
    return out


def check_ratings(ratings: pl.DataFrame, spec: EvaluationSpec, source: str) -> None:
    """Refuse, naming ``source``, a version without a rater column, and a spec whose raters
    rule cannot apply to its raters (without a rule each rater is taken alone)."""
    if not is_rated(ratings):
        raise InputError(source, [violation(
            columns.RATER, "agreement needs a version with a rater column (several raters)",
            [])])
    if spec.raters is not None:
        check_rule(spec, True, ratings[columns.RATER].unique().to_list(), source)


def agreement(ratings: pl.DataFrame, spec: EvaluationSpec,
              candidates: pl.DataFrame | None = None) -> dict:
    """The agreement document (``ndcg-eval agreement --json``) of a version with raters."""
    raters, grades, matrix = graded_matrix(ratings)
    fleiss, fleiss_documents = fleiss_kappa(matrix, grades)
    kinds = {}
    if columns.RATER_KIND in ratings.columns:
        kinds = dict(ratings.select(columns.RATER, columns.RATER_KIND).unique(columns.RATER)
                     .sort(columns.RATER).iter_rows())
    document = {
        "raters": [{"rater": r, "rater_kind": kinds.get(r), "graded": int(
            (~np.isnan(matrix[:, k])).sum())} for k, r in enumerate(raters)],
        "rule": spec.raters,
        "pairs": rater_pairs(raters, grades, matrix),
        "krippendorff_alpha_ordinal": krippendorff_alpha(matrix, grades, "ordinal"),
        "krippendorff_alpha_interval": krippendorff_alpha(matrix, grades, "interval"),
        "fleiss_kappa": fleiss,
        "fleiss_documents": fleiss_documents,
    }
    if candidates is not None:
        ndcg = ndcg_by_rater(ratings, candidates, spec, raters)
        document["ndcg"] = ndcg.to_dicts()
        document["kendall_tau"] = ranker_order_taus(ndcg, raters)
    return document
