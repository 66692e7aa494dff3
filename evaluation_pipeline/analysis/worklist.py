"""What to judge next: the holes of an evaluation in the order their grades would most narrow
the bounds of its headline numbers (contract section 3, rule 8).

A hole (rule 7) is a candidate with an ``unknown`` grade, a candidate without a row in the
version, or under ``ideal: all_judged`` an ``unknown`` row of the query that no ranker
returned. Each hole gets a score by *what-if scoring*: the query is scored again, once for every
grade the hole may take, with that hole graded and every other hole still open, by the
project's own scorer (``metric.ndcg.score``), so that the narrowing it measures is the exact one
of rule 7's bounds and not an approximation of them. Every what-if query is a copy of its query
under a new id, and all of them are scored in one call over whole columns (in chunks that cap
the copied rows), never one query at a time.

The order is deterministic: by ``expected_narrowing`` (rounded to 1e-12, so that float noise
cannot reorder equal scores), then ``query_id``, then ``doc_id``. No Dagster here: the command
(``cli.holes_command``) and the asset (``orchestration.worklist_asset``) both call
:func:`worklist`.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from evaluation_pipeline.metric.ndcg import score
from evaluation_pipeline.metric.raters import combine_ratings, is_rated
from evaluation_pipeline.spec import EvaluationSpec
from schemas import columns
from schemas.errors import EvaluationError

# The worklist's columns, in file order; query_text only when the queries table has it. The
# last two make the file, once its grades are filled in, a judgment version (contract section 1):
# every row is written as `graded`, so a row left without a grade is refused when it is read,
# rather than landed as a grade nobody gave.
COLUMNS = ("priority", "expected_narrowing", "guaranteed_narrowing", "query_id", "query_text",
           "doc_id", "rankers", "best_position", "bound_width", "grade", "grade_status")
# Scores within this of each other are ties (then query_id, doc_id decide).
ROUNDING = 12
# The most rows (candidates and judgments) copied for one call of the scorer: the what-if
# copies of a query are made in chunks of whole queries below this.
CHUNK_ROWS = 2_000_000
RANKER_SEPARATOR = ","


class WorklistError(EvaluationError):
    """An option of the worklist that cannot apply (a budget below 1)."""


def headline_cutoff(spec: EvaluationSpec) -> int:
    """The cutoff whose macro NDCG per ranker the worklist narrows: the spec's largest, the one
    the report's traces and the nightly drill-down read."""
    return max(spec.cutoffs)


def worklist(judgments: pl.DataFrame, candidates: pl.DataFrame, spec: EvaluationSpec,
             queries: pl.DataFrame | None = None, budget: int | None = None) -> pl.DataFrame:
    """The holes of ``candidates`` (one ranker or several) under ``judgments`` and ``spec``, in
    priority order (contract section 3, rule 8), the first ``budget`` of them when given.

    ``queries``: the queries table (``weight``, and ``query_text`` when it has one); without it
    every query weighs 1, with it a query without a row weighs 0 (as ``weighted_ndcg``)."""
    if budget is not None and budget < 1:
        raise WorklistError(f"--budget {budget}: give a number of holes >= 1")
    if is_rated(judgments):
        # The spec's rule makes the one grade per document the bounds read; the what-if
        # versions are then plain versions, scored without a rule.
        judgments = combine_ratings(judgments, spec)
        spec = spec.replace(raters=None)
    version = judgments.select(*columns.JUDGMENT_KEY, "grade", "grade_status")
    graded = version.filter(pl.col("grade_status") == columns.GRADED)["grade"]
    # The hole grades of the whole version, fixed for the what-if copies: a copy holds one
    # query, whose own largest grade may be below the version's (rule 7).
    top = spec.max_grade if spec.max_grade is not None else int(graded.max() or 0)
    k = headline_cutoff(spec)
    spec_k = spec.replace(cutoffs=(k,), max_grade=top)
    run = candidates.select(*_run_columns(candidates, spec))

    widths = _widths(score(run, version, spec_k))
    weights = _weights(widths["query_id"].unique(), queries)
    total_weight = float(weights["weight"].sum())
    holes = _holes(run, version, spec, k)
    # A query without a row in the version is not judged: it has no bounds to narrow.
    holes = holes.join(version.select("query_id").unique(), on="query_id", how="semi")
    per_query = (widths.group_by("query_id")
                 .agg(pl.col("width").sum().alias("width_sum"),
                      pl.col("width").max().alias("bound_width"))
                 .join(weights, on="query_id", how="left")
                 .with_columns(pl.col("weight").fill_null(0.0)))
    holes = holes.join(per_query, on="query_id", how="left").with_columns(
        pl.col("width_sum", "bound_width", "weight").fill_null(0.0))
    narrowing = _narrowing(holes, run, version, spec_k, top, graded)
    holes = holes.join(narrowing, on=["query_id", "doc_id"], how="left").with_columns(
        pl.col("expected", "guaranteed").fill_null(0.0))
    scale = 1.0 / total_weight if total_weight > 0 else 0.0
    ordered = holes.with_columns(
        (pl.col("expected") * scale).round(ROUNDING).alias("expected_narrowing"),
        (pl.col("guaranteed") * scale).round(ROUNDING).alias("guaranteed_narrowing"),
    ).sort(["expected_narrowing", "query_id", "doc_id"], descending=[True, False, False])
    if budget is not None:
        ordered = ordered.head(budget)
    ordered = ordered.with_columns(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("priority"),
        pl.lit(None, dtype=pl.Int64).alias("grade"),
        pl.lit(columns.GRADED).alias("grade_status"),
    )
    if queries is not None and "query_text" in queries.columns:
        ordered = ordered.join(queries.select("query_id", "query_text"), on="query_id",
                               how="left", maintain_order="left")
    return ordered.select([c for c in COLUMNS if c in ordered.columns])


def _run_columns(candidates: pl.DataFrame, spec: EvaluationSpec) -> list[str]:
    names = ["ranker", "query_id", "doc_id", "score"]
    return [*names, columns.RANK] if spec.needs_rank else names


def _widths(per_query: pl.DataFrame) -> pl.DataFrame:
    """Per (ranker, query): ``ndcg_max - ndcg_min`` at the one cutoff scored, 0 where the
    query has no bounds (no grading gives it a number, or it is not judged)."""
    return per_query.select(
        "ranker", "query_id",
        (pl.col("ndcg_max") - pl.col("ndcg_min")).fill_null(0.0).alias("width"))


def _weights(query_ids: pl.Series, queries: pl.DataFrame | None) -> pl.DataFrame:
    frame = query_ids.to_frame("query_id")
    if queries is None:
        return frame.with_columns(pl.lit(1.0).alias("weight"))
    return frame.join(queries.select("query_id", pl.col("weight").cast(pl.Float64)),
                      on="query_id", how="left").with_columns(pl.col("weight").fill_null(0.0))


def places(run: pl.DataFrame, spec: EvaluationSpec) -> pl.DataFrame:
    """Each candidate's place in its ranker's list (rule 6's order): under ``ties: average``
    the first place of its tie group, the one it shares the group's discount from."""
    group = ["ranker", "query_id"]
    if spec.ties == "average":
        return run.with_columns(pl.col("score").rank("min", descending=True).over(group)
                                .cast(pl.Int64).alias("position"))
    tie_key, descending = {"doc_id": ("doc_id", False), "trec_eval": ("doc_id", True),
                           "rank": (columns.RANK, False)}[spec.ties]
    ranked = run.sort([*group, "score", tie_key], descending=[False, False, True, descending])
    return ranked.with_columns((pl.int_range(pl.len()).over(group) + 1).cast(pl.Int64)
                               .alias("position"))


def _holes(run: pl.DataFrame, version: pl.DataFrame, spec: EvaluationSpec, k: int
           ) -> pl.DataFrame:
    """One row per hole (query_id, doc_id): whether the version has a row for it, the rankers
    that place it in their top K and its best place over the rankers (null when none returned
    it)."""
    placed = places(run, spec).join(version.select(*columns.JUDGMENT_KEY, "grade_status"),
                                    on=list(columns.JUDGMENT_KEY), how="left")
    open_candidates = placed.filter(pl.col("grade_status").is_null()
                                    | (pl.col("grade_status") == columns.UNKNOWN))
    candidate_holes = open_candidates.group_by(columns.JUDGMENT_KEY).agg(
        pl.col("grade_status").first().is_not_null().alias("in_version"),
        pl.col("ranker").filter(pl.col("position") <= k).sort()
        .str.join(RANKER_SEPARATOR).alias("rankers"),
        pl.col("position").min().alias("best_position"),
    ).with_columns(
        # No ranker places it in its top K: it narrows the bounds through the ideal alone.
        pl.when(pl.col("rankers") != "").then(pl.col("rankers")).alias("rankers"))
    if spec.ideal != "all_judged":
        return candidate_holes
    # Under all_judged an unknown row joins the ideal of every ranker of its query once graded.
    unreturned = version.filter(pl.col("grade_status") == columns.UNKNOWN).join(
        run.select(columns.JUDGMENT_KEY).unique(), on=list(columns.JUDGMENT_KEY), how="anti")
    return pl.concat([candidate_holes, unreturned.select(
        *columns.JUDGMENT_KEY, pl.lit(True).alias("in_version"),
        pl.lit(None, dtype=pl.String).alias("rankers"),
        pl.lit(None, dtype=pl.Int64).alias("best_position"))])


def grade_shares(graded: pl.Series, top: int) -> np.ndarray:
    """The share of each grade 0..top among the version's graded rows: the chance a hole takes
    it, for ``expected_narrowing``; equal shares when no graded row lies in 0..top."""
    counts = np.bincount(graded.to_numpy(), minlength=top + 1)[: top + 1].astype(np.float64)
    if counts.sum() == 0:
        return np.full(top + 1, 1.0 / (top + 1))
    return counts / counts.sum()


def _narrowing(holes: pl.DataFrame, run: pl.DataFrame, version: pl.DataFrame,
               spec_k: EvaluationSpec, top: int, graded: pl.Series) -> pl.DataFrame:
    """Per hole of a query with a weighted width: the weighted narrowing of the sum of its
    rankers' widths at K, expected over ``grade_shares`` and guaranteed (the least over the
    grades), each from a what-if copy of the query with the hole graded."""
    live = holes.filter((pl.col("width_sum") > 0) & (pl.col("weight") > 0))
    empty = pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String,
                                 "expected": pl.Float64, "guaranteed": pl.Float64})
    if live.height == 0:
        return empty
    shares = pl.DataFrame({"what_if_grade": np.arange(top + 1, dtype=np.int64),
                           "share": grade_shares(graded, top)})
    # One scenario per (hole, grade); its id names the what-if copy of the query.
    scenarios = (live.select(*columns.JUDGMENT_KEY, "in_version", "width_sum", "weight")
                 .sort(columns.JUDGMENT_KEY)
                 .join(shares, how="cross")
                 .with_row_index("scenario")
                 .with_columns(pl.col("scenario").cast(pl.String).alias("what_if")))
    chunks = _chunks(scenarios, run, version)
    widths = [_what_if_widths(scenarios.join(chunk, on="query_id", how="semi"), run, version,
                              spec_k)
              for chunk in chunks]
    scored = scenarios.join(pl.concat(widths), on="what_if", how="left").with_columns(
        (pl.col("weight") * (pl.col("width_sum") - pl.col("what_if_width").fill_null(0.0)))
        .alias("narrowing"))
    return scored.group_by(columns.JUDGMENT_KEY).agg(
        (pl.col("narrowing") * pl.col("share")).sum().alias("expected"),
        pl.col("narrowing").min().alias("guaranteed"))


def _chunks(scenarios: pl.DataFrame, run: pl.DataFrame, version: pl.DataFrame
            ) -> list[pl.DataFrame]:
    """The scenarios' queries in chunks whose what-if copies hold about CHUNK_ROWS rows."""
    size = (scenarios.group_by("query_id").len("copies")
            .join(run.group_by("query_id").len("candidates"), on="query_id", how="left")
            .join(version.group_by("query_id").len("rows"), on="query_id", how="left")
            .fill_null(0).sort("query_id")
            .with_columns((pl.col("copies") * (pl.col("candidates") + pl.col("rows") + 1))
                          .cum_sum().alias("reach")))
    size = size.with_columns((pl.col("reach") // CHUNK_ROWS).alias("chunk"))
    return [part.select("query_id") for part in size.partition_by("chunk", maintain_order=True)]


def _what_if_widths(scenarios: pl.DataFrame, run: pl.DataFrame, version: pl.DataFrame,
                    spec_k: EvaluationSpec) -> pl.DataFrame:
    """The sum over rankers of the width at K of every scenario's copy of its query: the
    candidates and version rows of the query under the scenario's id, the hole graded."""
    keys = scenarios.select("what_if", "query_id", pl.col("doc_id").alias("hole"),
                            "in_version", "what_if_grade")
    copied_run = keys.select("what_if", "query_id").join(run, on="query_id").drop(
        "query_id").rename({"what_if": "query_id"})
    copied = keys.join(version, on="query_id").with_columns(
        (pl.col("doc_id") == pl.col("hole")).alias("is_hole"))
    copied_version = pl.concat([
        copied.select(
            pl.col("what_if").alias("query_id"), "doc_id",
            pl.when(pl.col("is_hole")).then(pl.col("what_if_grade")).otherwise(pl.col("grade"))
            .alias("grade"),
            pl.when(pl.col("is_hole")).then(pl.lit(columns.GRADED))
            .otherwise(pl.col("grade_status")).alias("grade_status")),
        keys.filter(~pl.col("in_version")).select(
            pl.col("what_if").alias("query_id"), pl.col("hole").alias("doc_id"),
            pl.col("what_if_grade").alias("grade"),
            pl.lit(columns.GRADED).alias("grade_status")),
    ])
    rows = _widths(score(copied_run.select(run.columns), copied_version, spec_k))
    return rows.group_by("query_id").agg(pl.col("width").sum().alias("what_if_width")).rename(
        {"query_id": "what_if"})


def fill_version(version: pl.DataFrame, filled: pl.DataFrame, name: str) -> pl.DataFrame:
    """A new judgment version: ``version``'s rows, each replaced by the worklist's row of the
    same (query_id, doc_id) when ``filled`` (a worklist with its grades filled in, as read by
    ``io.readers.read_judgments``) has one, all named ``name``. The worklist's own columns
    (priority, rankers, ...) are left out; the version's other columns stay on its rows."""
    kept = version.join(filled.select(columns.JUDGMENT_KEY), on=list(columns.JUDGMENT_KEY),
                        how="anti")
    added = filled.select(*columns.JUDGMENT_KEY, "grade", "grade_status")
    return pl.concat([kept, added], how="diagonal_relaxed").with_columns(
        pl.lit(name).alias("judgment_version"))
