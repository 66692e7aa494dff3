"""The worklist's scores when the spec's headline names measures beside its plain nDCG@K
(contract section 3, rule 8, with the ``headline:`` field of section 2): each hole's expected
narrowing of the bounds of every headline measure, and their sum.

Per headline measure m, the *width* of a (ranker, query) is ``value_max - value_min`` of its
per-query row for m, 0 where it has none (null bounds, or ``missing_from_run``); ``W_m(q)``
sums the query's widths over the rankers, in name order. For a hole h of q and each grade g it
may take, ``W_m(q | h = g)`` is that sum with h graded g and every other hole still open,
computed exactly: q's blocks, every ranker's, are *scored again*, as copies, by the scorer
itself (``metric.ndcg.score_candidates``: the NDCG kernel's bounds for nDCG@K, the measures'
pass, ``metric.measures.kernels`` and ``extremes.bounds``, for the others), against a copy of
q's judgment rows with h's row graded g (or added, for a document without one). So each
what-if width is, to the last bit, the number scoring the version with h graded would give.

The combination: per hole,

- ``narrowing_m(g) = w(q) * (W_m(q) - W_m(q | h = g))``, 0 for a query without a weight or
  without a width of m (as the nDCG worklist has it);
- ``expected_m = sum_g p(g) * narrowing_m(g) / sum w``: how much the sum over the rankers of
  m's traffic-weighted mean width is expected to shrink (``p``: the shares of the grades among
  the version's graded rows, as ``worklist.grade_shares``);
- ``expected_narrowing = sum_m expected_m``: a plain sum, every measure weighing alike. The
  measures' values, and so their widths, lie in [0, 1] (all but DCG, whose widths count in
  its own units), so one unit of mean width of any of them counts as much as one of another;
  a measure whose bounds never move (Judged@k: both 1) adds 0;
- ``guaranteed_narrowing = min_g sum_m narrowing_m(g) / sum w``: the narrowing of that sum
  whatever grade h gets.

The grades a hole may take are those of rule 7: 0 to the top grade (the spec's ``max_grade``,
else the version's largest), under an explicit gain map the ones it lists in that range.

Cost: one scoring of the holes' queries as they are, and one of the what-if copies, whose
rows number sum over holes of |grades| x (the rows of the hole's query in the run, every
ranker's, plus its rows in the version). The copies are made by joins (no Python loop per row
or per hole) and scored in chunks of about ``CHUNK_ROWS`` rows, so memory stays bounded
whatever the number of holes. Measured here with a headline of nDCG@10, RR(rel=2)@10,
AP(rel=2)@100 and R@100: the example data (57 holes, 3 rankers of 24 candidates a query, 4
grades) in 0.04 to 0.05 s against 0.01 s for the nDCG worklist; 4,742 holes of 400 queries
of 3 rankers' 30 candidates (2.3M rows of copies) in 1.0 to 1.6 s against 0.1 s (two shared
cores). The time grows as the rows of copies do: with the holes, and with the length of each
hole's query, so a query of n rows with h holes costs h x |grades| x n rows.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import polars as pl

from evaluation_pipeline.metric import pool_holes
from evaluation_pipeline.metric.hashing import pool_blocks
from evaluation_pipeline.metric.ndcg import index_judgments, score_candidates
from evaluation_pipeline.spec import EvaluationSpec
from schemas import columns

# About this many rows of copies (run and version) are scored at once.
CHUNK_ROWS = 1_000_000
_COPY = "_copy"


class MeasureNarrowing(NamedTuple):
    """Per hole, weighted by w(q) but not divided by sum w: ``by_measure`` (holes x measures,
    the expected narrowing of each measure), ``expected`` (their sum) and ``guaranteed``; per
    query of the holes' ``q`` numbering, ``widest``: the widest (ranker, measure) width."""

    measures: tuple[str, ...]
    by_measure: np.ndarray
    expected: np.ndarray
    guaranteed: np.ndarray
    widest: np.ndarray


def narrows_other_measures(spec: EvaluationSpec) -> bool:
    """Whether the spec's headline names a measure other than a plain nDCG@K of the spec;
    if not, the worklist narrows nDCG at the headline cutoff alone, as it always has."""
    others = {str(m) for m in spec.other_measures}
    return any(name in others for name in spec.headline_measures)


def hole_grades(spec: EvaluationSpec, top: int) -> np.ndarray:
    """The grades a hole may take (rule 7): 0..top, or under a gain map the ones it lists in
    that range."""
    if isinstance(spec.gain, str):
        return np.arange(top + 1, dtype=np.int64)
    return np.array(sorted(g for g, _ in spec.gain if 0 <= g <= top), dtype=np.int64)


def grade_shares_of(graded: pl.Series, grades: np.ndarray, top: int) -> np.ndarray:
    """The share of each of ``grades`` among the version's graded rows; equal shares when
    none of them is graded. Over 0..top these are ``worklist.grade_shares``'."""
    counts = np.bincount(graded.to_numpy().astype(np.int64), minlength=top + 1)[grades].astype(
        np.float64) if len(graded) else np.zeros(len(grades))
    if counts.sum() == 0:
        return np.full(len(grades), 1.0 / len(grades))
    return counts / counts.sum()


def measure_narrowing(version: pl.DataFrame, run: pl.DataFrame, spec: EvaluationSpec,
                      rankers: list[str], query_ids: pl.Series, weight: np.ndarray,
                      hole_q: np.ndarray, hole_doc: pl.Series, top: int, graded: pl.Series
                      ) -> MeasureNarrowing:
    """The narrowings of the module docstring.

    ``version``: query_id, doc_id, grade, grade_status (one grade per document: a rule of
    raters already applied); ``run``: the candidates' scoring columns; ``rankers``: the run's,
    sorted; ``query_ids`` and ``weight``: per query number q; ``hole_q``, ``hole_doc``: each
    hole's query number and doc_id; ``top``: the top grade of rule 7; ``graded``: the
    version's graded grades."""
    measures = spec.headline_measures
    scoring = spec.headline_only().replace(max_grade=top)
    grades = hole_grades(scoring, top)
    shares = grade_shares_of(graded, grades, top)
    n_holes, n_grades, n_measures = len(hole_q), len(grades), len(measures)
    by_measure = np.zeros((n_holes, n_measures))
    expected = np.zeros(n_holes)
    guaranteed = np.zeros(n_holes)
    widest = np.zeros(len(query_ids))
    if n_holes == 0 or n_grades == 0:
        return MeasureNarrowing(measures, by_measure, expected, guaranteed, widest)
    # Only the holes' queries are copied: the rest of the run and the version is left out.
    asked = np.unique(hole_q)
    named = query_ids.gather(asked).implode()
    scorer = _Copies(version.filter(pl.col("query_id").is_in(named)),
                     run.filter(pl.col("query_id").is_in(named)), scoring, rankers, measures,
                     top)

    # The queries as they are: W_m(q), and the widest width of each.
    base_sums, base_widest = scorer.width_sums(pl.DataFrame({
        "query_id": query_ids.gather(asked), "doc_id": pl.Series([None] * len(asked),
                                                                 dtype=pl.String),
        "grade": pl.Series([None] * len(asked), dtype=pl.Int64)}))
    now = np.zeros((len(query_ids), n_measures))
    now[asked] = base_sums
    widest[asked] = base_widest

    # The what-ifs of the holes that can narrow something: a query with a weight and a width.
    live = (weight[hole_q] > 0) & (now[hole_q].sum(axis=1) > 0)
    chosen = np.flatnonzero(live)
    cost = scorer.rows_of(query_ids.gather(hole_q[chosen])) * n_grades
    for part in _chunks(cost, CHUNK_ROWS):
        holes = chosen[part]
        copies = pl.DataFrame({
            "query_id": query_ids.gather(np.repeat(hole_q[holes], n_grades)),
            "doc_id": hole_doc.gather(np.repeat(holes, n_grades)),
            "grade": np.tile(grades, len(holes)),
        })
        after, _ = scorer.width_sums(copies)
        after = after.reshape(len(holes), n_grades, n_measures)
        q = hole_q[holes]
        w = weight[q][:, None, None]
        before = now[q][:, None, :]
        narrowing = np.where(before > 0, w * (before - after), 0.0)
        mean = np.zeros((len(holes), n_measures))
        for g in range(n_grades):
            mean = mean + narrowing[:, g, :] * shares[g]
        by_measure[holes] = mean
        total = narrowing[:, :, 0]
        for m in range(1, n_measures):
            total = total + narrowing[:, :, m]
        guaranteed[holes] = total.min(axis=1)
    expected = by_measure[:, 0].copy()
    for m in range(1, n_measures):
        expected = expected + by_measure[:, m]
    return MeasureNarrowing(measures, by_measure, expected, guaranteed, widest)


def _chunks(cost: np.ndarray, limit: int) -> list[np.ndarray]:
    """Consecutive index ranges of ``cost`` of about ``limit`` in sum each (at least one
    item each)."""
    if len(cost) == 0:
        return []
    ends = np.cumsum(cost)
    bounds = [0]
    while bounds[-1] < len(cost):
        start = bounds[-1]
        reached = ends[start - 1] if start else 0
        stop = int(np.searchsorted(ends, reached + limit, side="right"))
        bounds.append(max(stop, start + 1))
    return [np.arange(a, b) for a, b in zip(bounds[:-1], bounds[1:])]


class _Copies:
    """Scores copies of queries, each under an id of its own, with at most one document
    graded: the scorer's own steps, on the copies' blocks and judgment rows."""

    def __init__(self, version: pl.DataFrame, run: pl.DataFrame, spec: EvaluationSpec,
                 rankers: list[str], measures: tuple[str, ...], top: int) -> None:
        self.spec, self.rankers, self.measures, self.top = spec, rankers, measures, top
        # Each query's rows together, every ranker's in name order: copies made in copy order
        # then come grouped by (copy, ranker), and nothing is sorted again.
        self.run = run.sort("query_id", "ranker", maintain_order=True)
        self.version = version.select(*columns.JUDGMENT_KEY, "grade", "grade_status")
        self.size = pl.concat([self.run.group_by("query_id").len(),
                               self.version.group_by("query_id").len()]).group_by(
            "query_id").agg(pl.col("len").sum().cast(pl.Int64))

    def rows_of(self, query_ids: pl.Series) -> np.ndarray:
        """Rows (run and version) of a copy of each query."""
        return query_ids.to_frame("query_id").join(
            self.size, on="query_id", how="left", maintain_order="left")["len"].fill_null(
            0).to_numpy()

    def width_sums(self, copies: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Per row of ``copies`` (query_id, and doc_id graded ``grade``, or null for none):
        ``W_m`` of the copy (copies x measures, added ranker by ranker in name order) and
        its widest (ranker, measure) width."""
        n = copies.height
        keyed = copies.with_row_index(_COPY).with_columns(pl.col(_COPY).cast(pl.Int64))
        run = keyed.select(_COPY, "query_id").join(
            self.run, on="query_id", how="inner", maintain_order="left").with_columns(
            pl.col(_COPY).cast(pl.String).alias("query_id")).drop(_COPY)
        kept = keyed.select(_COPY, "query_id", pl.col("doc_id").alias("_hole")).join(
            self.version, on="query_id", how="inner", maintain_order="left").filter(
            pl.col("_hole").is_null() | (pl.col("doc_id") != pl.col("_hole"))).drop("_hole")
        graded = keyed.filter(pl.col("doc_id").is_not_null()).select(
            _COPY, "query_id", "doc_id", "grade", pl.lit(columns.GRADED).alias("grade_status"))
        judgments = pl.concat([kept, graded], how="vertical_relaxed").sort(
            _COPY, maintain_order=True).with_columns(
            pl.col(_COPY).cast(pl.String).alias("query_id")).drop(_COPY)
        blocks = pool_blocks(run)
        index = index_judgments(judgments, self.spec, top_grade=self.top)
        pool = pool_holes.of_pool(blocks.frame, len(self.rankers), index.grades, self.spec)
        rows = score_candidates(blocks, index, self.spec, pool).filter(
            pl.col("measure").is_in(list(self.measures))).select(
            pl.col("query_id").cast(pl.Int64),
            pl.col("ranker").replace_strict(self.rankers, list(range(len(self.rankers))),
                                            return_dtype=pl.Int64),
            pl.col("measure").replace_strict(list(self.measures),
                                             list(range(len(self.measures))),
                                             return_dtype=pl.Int64),
            (pl.col("value_max") - pl.col("value_min")).fill_null(0.0).fill_nan(0.0)
            .alias("width"))
        widths = np.zeros((n, len(self.rankers), len(self.measures)))
        widths[rows["query_id"].to_numpy(), rows["ranker"].to_numpy(),
               rows["measure"].to_numpy()] = rows["width"].to_numpy()
        sums = np.zeros((n, len(self.measures)))
        for r in range(len(self.rankers)):
            sums = sums + widths[:, r, :]
        return sums, widths.max(axis=(1, 2), initial=0.0)
