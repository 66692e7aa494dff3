"""What to judge next: the holes of an evaluation in the order their grades would most narrow
the bounds of its headline numbers (contract section 3, rule 8).

A hole (rule 7) is a candidate with an ``unknown`` grade, a candidate without a row in the
version, or under ``ideal: all_judged`` an ``unknown`` row of the query that no ranker
returned. Each hole gets a score by *what-if scoring*: the bounds of rule 7 of its query again,
once for every grade the hole may take, with that hole graded and every other hole still open,
so that the narrowing it measures is the exact one of rule 7's bounds and not an approximation
of them.

The what-ifs are not copies of the query scored anew: one compiled pass over the run's
(ranker, query) blocks grades and ranks each block once, with the scorer's own steps
(``metric.kernels.dcg``, ``metric.kernels.bounds``), and calls the scorer's bounds step with
one hole graded at a time, so each what-if width is the number scoring the copy would give, to
the last bit. Grading a hole changes a block's bounds in one of three ways only:

- a hole the ranker places where it has a discount weight at K (its place, or its tie group's
  first place under ``ties: average``, is <= K): its own what-if, hole by hole;
- a hole of the block without a weight (past K), or under ``all_judged`` a document the ranker
  did not return (an ``unknown`` row, or another ranker's candidate the version lacks: both
  are holes of the block outside its candidates): it only leaves the holes that raise the
  ideal and adds its gain to the graded ideal, the same for every such hole of the block, so
  one what-if per block and grade serves them all (they are exchangeable);
- under ``ideal: candidates``, a document the ranker did not return: nothing changes.

So a block costs one bounds call per weighted hole and grade plus one per grade, whatever its
number of holes past K, and the width sum of a query with a hole graded adds, ranker by ranker,
the block's what-if of the hole's kind.

When the spec's headline names other measures (RR, AP, P, R, ...: the ``headline:`` field),
the holes are the same and are ordered by the narrowing of every headline measure's bounds,
summed over the measures, each what-if scored by the scorer on a copy of the hole's query
(``analysis.worklist_measures``, whose docstring gives the combination rule and the cost);
the column ``narrowing_by_measure`` then gives each measure's part, as a JSON object from the
measure's canonical name to its expected narrowing, and ``bound_width`` is the widest of the
query's (ranker, headline measure) widths. ``rankers`` and ``best_position`` stay as above (the
top K at the largest nDCG cutoff). A headline of plain nDCG@K's alone (the default among them)
keeps the worklist above, at the largest cutoff, row for row.

The order is deterministic: by ``expected_narrowing`` (rounded to 1e-12, so that float noise
cannot reorder equal scores), then ``query_id``, then ``doc_id``. No Dagster here: the command
(``cli.holes_command``) and the asset (``orchestration.worklist_asset``) both call
:func:`worklist`.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from evaluation_pipeline.analysis.worklist_measures import (
    measure_narrowing,
    narrows_other_measures,
)
from evaluation_pipeline.metric import discounts, pool_holes
from evaluation_pipeline.metric.gains import gains_for_grades
from evaluation_pipeline.metric.hashing import pool_blocks
from evaluation_pipeline.metric.kernels.codes import (
    NOT_RETURNED,
    PAST_K,
)
from evaluation_pipeline.metric.ndcg import (
    _NO_POSITIVE_CODES,
    _TIES,
    _ranks,
    index_judgments,
    run_scores,
)
from evaluation_pipeline.metric.raters import combine_ratings, is_rated
from evaluation_pipeline.spec import EvaluationSpec
from schemas import columns
from schemas.errors import EvaluationError
from schemas.ranks import check_ranks

# The worklist's columns, in file order; query_text only when the queries table has it. The
# last two make the file, once its grades are filled in, a judgment version (contract section 1):
# every row is written as `graded`, so a row left without a grade is refused when it is read,
# rather than landed as a grade nobody gave.
# narrowing_by_measure only when the headline names measures beside the plain nDCG@K.
COLUMNS = ("priority", "expected_narrowing", "guaranteed_narrowing", "narrowing_by_measure",
           "query_id", "query_text", "doc_id", "rankers", "best_position", "bound_width",
           "grade", "grade_status")
# Scores within this of each other are ties (then query_id, doc_id decide).
ROUNDING = 12
RANKER_SEPARATOR = ","
class WorklistError(EvaluationError):
    """An option of the worklist that cannot apply (a budget below 1)."""


def headline_cutoff(spec: EvaluationSpec) -> int:
    """The cutoff whose macro NDCG per ranker the worklist narrows: the largest of the
    headline's plain nDCG@K (by default the spec's largest, the one the report's traces and the
    nightly drill-down read), else the spec's largest."""
    named = [k for k in spec.cutoffs if f"nDCG@{k}" in spec.headline_measures]
    return max(named or spec.cutoffs)


def narrowed_measures(spec: EvaluationSpec) -> tuple[str, ...]:
    """The measures whose bounds the worklist narrows: nDCG at the headline cutoff, or, when
    the spec's headline names other measures, the headline measures (canonical names)."""
    if narrows_other_measures(spec):
        return spec.headline_measures
    return (f"nDCG@{headline_cutoff(spec)}",)


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
    # The hole grades of the whole version (rule 7), fixed for every what-if: grading a hole
    # must not move the top grade the other holes may take.
    top = spec.max_grade if spec.max_grade is not None else int(graded.max() or 0)
    k = headline_cutoff(spec)
    # The headline goes: it may name a cutoff below K (its measures are narrowed apart).
    spec_k = spec.replace(cutoffs=(k,), max_grade=top, headline=None)
    run = candidates.select(*_run_columns(candidates, spec))
    if spec.needs_rank:
        check_ranks(run, "candidates")  # as the scorer checks a frame
    blocks = pool_blocks(run)
    index = index_judgments(version, spec_k)
    found = _what_ifs(blocks, index, spec_k)

    rankers = sorted(blocks.keys["ranker"].unique().to_list())
    per_query, block_of = _per_query(blocks, index, found, rankers, queries)
    holes = _holes(blocks, found, version, per_query, rankers, spec.ideal == "all_judged")
    del blocks, index  # the blocks' doc order and string buffers: hundreds of MB at 10M rows
    by_measure = None
    if narrows_other_measures(spec):
        del found
        measured = measure_narrowing(
            version, run, spec, rankers, per_query["query_id"], per_query["weight"].to_numpy(),
            holes["q"], holes["doc_id"], top, graded)
        expected, guaranteed = measured.expected, measured.guaranteed
        by_measure = dict(zip(measured.measures, measured.by_measure.T))
        per_query = per_query.with_columns(pl.Series("bound_width", measured.widest))
    else:
        expected, guaranteed = _narrowing(holes, block_of, per_query, found, spec_k, top,
                                          graded, spec.ideal == "all_judged")
        del found
    # Σ w: over the queries the evaluation has rows for.
    total_weight = float(per_query.filter("has_rows")["weight"].sum())
    scale = 1.0 / total_weight if total_weight > 0 else 0.0
    # The order first, on numbers (per_query is sorted by query_id, so its row number orders
    # as query_id does; ``doc_order`` orders a query's holes as doc_id does); the output's
    # strings are then gathered once, for the rows kept. A multi-column sort with the doc_id
    # strings took 8 s of 9M holes at 10M rows, lexsort on numbers 2.5 s.
    keys = pl.DataFrame({
        "expected": expected * scale, "guaranteed": guaranteed * scale}).with_columns(
        pl.col("expected", "guaranteed").round(ROUNDING))
    del expected, guaranteed
    doc_order = holes.get("doc_order")
    if doc_order is None:
        doc_order = holes["doc_id"].rank("min").to_numpy()
    order = pl.Series(np.lexsort((doc_order, holes["q"], -keys["expected"].to_numpy())))
    if budget is not None:
        order = order.head(budget)
    kept = order.to_numpy()
    q = holes["q"][kept]
    best = holes["best_position"][kept]
    ordered = pl.DataFrame({
        "expected_narrowing": keys["expected"].gather(order),
        "guaranteed_narrowing": keys["guaranteed"].gather(order),
        "query_id": per_query["query_id"].gather(q),
        "doc_id": holes["doc_id"].gather(order),
        "rankers": _ranker_names(holes["places"][kept], rankers, k),
        "best_position": pl.Series(best).set(pl.Series(best == 0), None),
        "bound_width": per_query["bound_width"].gather(q),
    })
    if by_measure is not None:
        ordered = ordered.with_columns(_by_measure(by_measure, scale, kept))
    ordered = ordered.with_columns(
        pl.int_range(1, pl.len() + 1, dtype=pl.Int64).alias("priority"),
        pl.lit(None, dtype=pl.Int64).alias("grade"),
        pl.lit(columns.GRADED).alias("grade_status"),
    )
    if queries is not None and "query_text" in queries.columns:
        ordered = ordered.join(queries.select("query_id", "query_text"), on="query_id",
                               how="left", maintain_order="left")
    return ordered.select([c for c in COLUMNS if c in ordered.columns])


def _by_measure(by_measure: dict[str, np.ndarray], scale: float, kept: np.ndarray
                ) -> pl.Series:
    """``narrowing_by_measure``: per hole kept, a JSON object from each headline measure's name
    to its expected narrowing (rounded as ``expected_narrowing``), in the headline's order: a
    string, which the CSV file carries as one field."""
    parts = pl.DataFrame({name: values[kept] * scale for name, values in by_measure.items()})
    encoded = parts.select(pl.struct(pl.all().round(ROUNDING)).struct.json_encode())
    return encoded.to_series().alias("narrowing_by_measure")


def _run_columns(candidates: pl.DataFrame, spec: EvaluationSpec) -> list[str]:
    names = ["ranker", "query_id", "doc_id", "score"]
    return [*names, columns.RANK] if spec.needs_rank else names


def _weights(query_ids: pl.Series, queries: pl.DataFrame | None) -> pl.DataFrame:
    frame = query_ids.to_frame("query_id")
    if queries is None:
        return frame.with_columns(pl.lit(1.0).alias("weight"))
    return frame.join(queries.select("query_id", pl.col("weight").cast(pl.Float64)),
                      on="query_id", how="left").with_columns(pl.col("weight").fill_null(0.0))


def grade_shares(graded: pl.Series, top: int) -> np.ndarray:
    """The share of each grade 0..top among the version's graded rows: the chance a hole takes
    it, for ``expected_narrowing``; equal shares when no graded row lies in 0..top."""
    counts = np.bincount(graded.to_numpy(), minlength=top + 1)[: top + 1].astype(np.float64)
    if counts.sum() == 0:
        return np.full(top + 1, 1.0 / (top + 1))
    return counts / counts.sum()


# -- the what-if pass ---------------------------------------------------------------------------


def _what_ifs(blocks, index, spec_k: EvaluationSpec) -> dict[str, np.ndarray]:
    """The kernel's pass over the run's blocks (``metric.kernels.what_if.what_if_blocks``), as
    named arrays; a large run in two halves of its blocks, the second on a helper thread (the
    kernel releases the GIL, and each half writes its own blocks' rows). The compiled modules
    are imported here, not at the top: every command imports this module (``cli.main``)."""
    from evaluation_pipeline.metric.kernels.dcg import CandidateBlocks, QueryJudgments, Rules
    from evaluation_pipeline.metric.kernels.loading import read_only
    from evaluation_pipeline.metric.kernels.threads import helper
    n_values, n_blocks = len(index.hole_gains), blocks.n_blocks
    found = {"base": np.zeros(n_blocks), "past_k": np.zeros((n_blocks, n_values))}
    names = ("row", "place", "ref", "grade_class", "own")
    if blocks.frame.height == 0:
        return {**found, **dict(zip(names, (*(np.zeros(0, np.int64),) * 3,
                                            np.zeros(0, np.int8), np.zeros((0, n_values)))))}
    facts = blocks.keys.join(index.queries, on="query_id", how="left", maintain_order="left")
    k = spec_k.cutoffs[0]
    arguments = read_only((
        CandidateBlocks(blocks.starts, blocks.order, run_scores(blocks, spec_k), blocks.docs,
                        _ranks(blocks, spec_k)),
        QueryJudgments(facts["j_lo"].fill_null(0).to_numpy(),
                       facts["j_hi"].fill_null(0).to_numpy(), index.order, index.docs,
                       index.grades["grade_class"].to_numpy(), index.grades["gain"].to_numpy(),
                       pool_holes.per_block(blocks.keys, pool_holes.of_pool(
                           blocks.frame, blocks.keys["ranker"].n_unique(), index.grades,
                           spec_k))),
        Rules(np.array([k], dtype=np.int64), discounts.prefix(spec_k.discount, k),
              _TIES[spec_k.ties], spec_k.unknown != "exclude", spec_k.unjudged != "exclude",
              spec_k.ideal == "candidates", index.hole_gains,
              _NO_POSITIVE_CODES[spec_k.no_positive],
              discounts.kernel_denominators(spec_k.discount, k)),
    ))
    from evaluation_pipeline.metric.kernels.what_if import what_if_blocks as kernel


    def part(first: int, last: int) -> tuple:
        return kernel(*arguments, first, last, found["base"], found["past_k"])

    n = blocks.frame.height
    if n < _SPLIT_ROWS or n_blocks < 2:
        parts = [part(0, n_blocks)]
    else:
        middle = min(max(int(np.searchsorted(blocks.starts, n // 2)), 1), n_blocks - 1)
        second = helper("worklist").submit(part, middle, n_blocks)
        parts = [part(0, middle), second.result()]
    # The second half numbers its own what-ifs from 0: after the first half's.
    n_own = len(parts[0][4]) // n_values
    if len(parts) == 2:
        ref = parts[1][2]
        ref[ref >= 0] += n_own
    for name, arrays in zip(names, zip(*parts)):
        found[name] = np.concatenate(arrays) if len(arrays) > 1 else arrays[0]
    found["own"] = found["own"].reshape(-1, n_values)
    return found


# Below this many rows the run is one part: the threshold of ``metric.kernels.blocks``'s split
# of the doc_id ordering, taken as it is (this kernel costs more per row, so it is safe).
_SPLIT_ROWS = 1_000_000


def _ranker_names(places: np.ndarray, rankers: list[str], k: int) -> pl.Series:
    """Per hole, the rankers placing it in their top K, by name, comma-separated; null for
    none."""
    named = pl.DataFrame({str(r): places[:, r] for r in range(len(rankers))}).select(
        pl.concat_str([pl.when(pl.col(str(r)).is_between(1, k)).then(pl.lit(name))
                       for r, name in enumerate(rankers)], separator=RANKER_SEPARATOR,
                      ignore_nulls=True).alias("rankers"))["rankers"]
    return named.replace("", None)


# -- from blocks to holes -----------------------------------------------------------------------


def _per_query(blocks, index, found, rankers: list[str], queries: pl.DataFrame | None
               ) -> tuple[pl.DataFrame, np.ndarray]:
    """Per query of the run or the version: ``has_rows`` (the evaluation has per-query rows for
    it: the run's queries, and the version's with a positive gain, which get
    ``missing_from_run`` rows), ``weight``, ``width_sum`` (W(q), added ranker by ranker in
    name order, a ranker without the query adding 0) and ``bound_width`` (the widest); and the
    block of each (query, ranker), -1 where the ranker did not return the query."""
    keys = blocks.keys.select("query_id", _ranker_number("ranker", rankers).alias("r"))
    with_rows = keys["query_id"]
    if keys.height:
        with_rows = pl.concat([with_rows, index.queries.filter(pl.col("n_positive") > 0)[
            "query_id"]])
    every = pl.concat([with_rows, index.queries["query_id"]]).unique().sort()
    frame = _weights(every, queries).with_columns(
        pl.col("query_id").is_in(with_rows.implode()).alias("has_rows"))
    q = keys.join(frame.with_row_index("q").select("query_id", pl.col("q").cast(pl.Int64)),
                  on="query_id", how="left", maintain_order="left")["q"].to_numpy()
    block_of = np.full((frame.height, len(rankers)), -1, np.int64)
    block_of[q, keys["r"].to_numpy()] = np.arange(keys.height)
    widths = np.where(block_of >= 0, found["base"][np.maximum(block_of, 0)], 0.0)
    width_sum = np.zeros(frame.height)
    for r in range(len(rankers)):
        width_sum = width_sum + widths[:, r]
    return frame.with_columns(
        pl.Series("width_sum", width_sum),
        pl.Series("bound_width", widths.max(axis=1, initial=0.0))), block_of


def _ranker_number(column: str, rankers: list[str]) -> pl.Expr:
    """A ranker's place in ``rankers`` (sorted by name)."""
    return pl.col(column).replace_strict(rankers, list(range(len(rankers))),
                                         return_dtype=pl.Int64)


def _holes(blocks, found, version: pl.DataFrame, per_query: pl.DataFrame, rankers: list[str],
           all_judged: bool) -> dict:
    """The holes, each (query_id, doc_id) once: ``q`` (row of ``per_query``), ``doc_id``,
    and per ranker (columns in name order) its kind (``codes``: the row of its
    own what-ifs, ``PAST_K`` or ``NOT_RETURNED``) and its place (``places``, 0 for none);
    ``best_position``, 0 for none; ``doc_order``, numbers that order a query's holes as their
    doc_ids, when known without a string sort. Candidates of a not-judged query are none (the
    kernel skips them); under ``all_judged`` the version's ``unknown`` rows no ranker returned
    are."""
    rows = found["row"]
    block = np.searchsorted(blocks.starts, rows, side="right") - 1
    keys = blocks.keys.select("query_id", "ranker").with_row_index("block").join(
        per_query.select("query_id").with_row_index("q"), on="query_id", how="left",
        maintain_order="left")
    block_q = keys["q"].cast(pl.Int64).to_numpy()
    block_r = keys.select(_ranker_number("ranker", rankers))["ranker"].to_numpy()
    doc_id = blocks.frame["doc_id"].gather(rows)
    q = block_q[block]
    if len(rankers) == 1:
        # One list per query: each hole row is its own hole, and the kernel's arrays serve as
        # they are (no copies: 10M rows make 9M holes).
        # A row's place in its block's doc_id order (``blocks.order``) orders the query's holes.
        place_in_order = np.empty(len(blocks.order), np.int64)
        place_in_order[blocks.order] = np.arange(len(blocks.order))
        holes = {"q": q, "doc_id": doc_id,
                 "codes": found["ref"].reshape(-1, 1), "places": found["place"].reshape(-1, 1),
                 "doc_order": place_in_order[rows]}
        del place_in_order
    else:
        # The same document may be a hole of several rankers' blocks: number the distinct
        # (query, document) pairs.
        paired = pl.DataFrame({"q": q, "doc_id": doc_id}).with_row_index("i").sort("q", "doc_id")
        first = (paired["q"] != paired["q"].shift()) | (paired["doc_id"] != paired["doc_id"]
                                                          .shift())
        number = np.empty(len(rows), np.int64)
        number[paired["i"].to_numpy()] = first.fill_null(True).cum_sum().to_numpy() - 1
        n = int(number.max()) + 1 if len(rows) else 0
        ranker = block_r[block]
        codes = np.full((n, len(rankers)), NOT_RETURNED, np.int64)
        codes[number, ranker] = found["ref"]
        places = np.zeros((n, len(rankers)), np.int64)
        places[number, ranker] = found["place"]
        # Holes are numbered in (query, doc_id) order.
        holes = {"q": np.empty(n, np.int64),
                 "codes": codes, "places": places, "doc_order": np.arange(n)}
        holes["q"][number] = q
        first_row = np.empty(n, np.int64)
        first_row[number] = np.arange(len(rows))
        holes["doc_id"] = doc_id.gather(first_row)
    if all_judged:
        # Unknown rows no ranker returned: holes of every ranker of the query, without a place.
        outside = version.filter(pl.col("grade_status") == columns.UNKNOWN).join(
            blocks.frame.select(columns.JUDGMENT_KEY).unique(), on=list(columns.JUDGMENT_KEY),
            how="anti").join(per_query.select("query_id").with_row_index("q"), on="query_id",
                             how="left")
        m, width = outside.height, len(rankers)
        # They fall among the candidates' holes by doc_id: the order is found on the strings.
        holes = {"q": np.r_[holes["q"], outside["q"].cast(pl.Int64).to_numpy()],
                 "doc_id": pl.concat([holes["doc_id"], outside["doc_id"]]),
                 "codes": np.r_[holes["codes"], np.full((m, width), PAST_K, np.int64)],
                 "places": np.r_[holes["places"], np.zeros((m, width), np.int64)]}
    masked = np.where(holes["places"] > 0, holes["places"], np.iinfo(np.int64).max)
    best = masked.min(axis=1, initial=np.iinfo(np.int64).max)
    holes["best_position"] = np.where(best == np.iinfo(np.int64).max, 0, best)
    return holes


def _narrowing(holes: dict, block_of: np.ndarray, per_query: pl.DataFrame, found: dict,
               spec_k: EvaluationSpec, top: int, graded: pl.Series, all_judged: bool
               ) -> tuple[np.ndarray, np.ndarray]:
    """Per hole, the weighted narrowing of W(q) expected over ``grade_shares`` and guaranteed
    (the least over the grades), by ``metric.kernels.what_if.narrow_holes``."""
    gains = gains_for_grades(np.arange(top + 1), spec_k)
    # Grades with one gain share their what-ifs (found per distinct gain, ascending).
    value = np.searchsorted(np.unique(gains), gains)
    from evaluation_pipeline.metric.kernels.what_if import narrow_holes as narrow

    return narrow(holes["q"], holes["codes"], block_of, per_query["width_sum"].to_numpy(),
                  per_query["weight"].to_numpy(), found["base"], found["past_k"], found["own"],
                  value, grade_shares(graded, top), all_judged)


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
