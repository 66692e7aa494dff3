"""The worklist of holes (contract section 3, rule 8): its scores against a plain recomputation
from brute-force bounds, its order and tie-break, the judgment file it becomes once graded, and
the simulation the issue asks for: grading its top N narrows the total bound width at least as
much as N holes in depth-pool order, and more than N random holes."""

from __future__ import annotations

from collections import Counter

import numpy as np
import polars as pl
import pytest

from evaluation_pipeline.analysis.worklist import (
    WorklistError,
    fill_version,
    headline_cutoff,
    worklist,
)
from evaluation_pipeline.io.readers import read_judgments
from evaluation_pipeline.metric.ndcg import score
from evaluation_pipeline.spec import EvaluationSpec, profile
from schemas import InputError
from schemas.rules.judgment_rules import JUDGMENTS
from tests.support.bounds_oracle import brute_force_bounds
from tests.support.bounds_oracle import holes as oracle_holes
from tests.support.refusals import assert_names, violation

# -- small random cases -----------------------------------------------------------------------


def small_case(seed: int, rankers=("r1", "r2"), n_queries=4, top=2):
    """(run, version, queries) with a few holes per query: unknown rows, candidates without a
    row, and unknown rows no ranker returned; scores on a coarse grid, so that ties occur."""
    rng = np.random.default_rng(seed)
    runs, rows = [], []
    for q in range(n_queries):
        qid = f"q{q}"
        docs = [f"d{i}" for i in range(6)]
        for doc in docs:
            kind = rng.choice(["graded", "graded", "unknown", "none"])
            if kind == "graded":
                rows.append((qid, doc, int(rng.integers(0, top + 1)), "graded"))
            elif kind == "unknown":
                rows.append((qid, doc, None, "unknown"))
        rows.append((qid, "extra", None, "unknown"))  # a hole under all_judged only
        for ranker in rankers:
            for doc in rng.choice(docs, size=int(rng.integers(2, 5)), replace=False):
                runs.append((ranker, qid, str(doc), float(rng.integers(0, 4))))
    rows.append(("q0", "anchor", top, "graded"))  # the version's largest grade is top
    run = pl.DataFrame(runs, schema=["ranker", "query_id", "doc_id", "score"], orient="row")
    version = pl.DataFrame(rows, schema={"query_id": pl.String, "doc_id": pl.String,
                                         "grade": pl.Int64, "grade_status": pl.String},
                           orient="row")
    queries = pl.DataFrame({"query_id": [f"q{q}" for q in range(n_queries)],
                            "weight": rng.integers(0, 5, n_queries).astype(float)})
    return run, version, queries


def plain_worklist(run: pl.DataFrame, version: pl.DataFrame, spec: EvaluationSpec,
                   weights: dict[str, float] | None) -> dict[tuple[str, str], tuple]:
    """Rule 8 written out with Python loops and the brute-force bounds of tests.support:
    {(query_id, doc_id): (expected_narrowing, guaranteed_narrowing, rankers, best_position)}."""
    k = headline_cutoff(spec)
    graded = [g for g, s in zip(version["grade"], version["grade_status"]) if s == "graded"]
    top = spec.max_grade if spec.max_grade is not None else max(graded)
    counts = Counter(g for g in graded if g <= top)
    shares = [counts[g] / sum(counts.values()) for g in range(top + 1)]
    judged_of: dict[str, dict] = {}
    for q, d, g, s in version.iter_rows():
        judged_of.setdefault(q, {})[d] = "u" if s == "unknown" else g
    lists: dict[tuple[str, str], list] = {}
    for r, q, d, s in run.select("ranker", "query_id", "doc_id", "score").iter_rows():
        lists.setdefault((q, r), []).append((d, s, 0))
    rankers = sorted(run["ranker"].unique())
    queries = sorted(set(run["query_id"]) | set(version["query_id"]))

    def weight(q):
        return 1.0 if weights is None else weights.get(q, 0.0)

    def width_sum(q, judged):
        total = 0.0
        for r in rankers:
            if (q, r) not in lists:
                continue  # missing from the run: its bounds are its number
            others = [d for o in rankers if o != r for d, _, _ in lists.get((q, o), [])]
            least, greatest = brute_force_bounds(lists[q, r], judged, spec, k, top, others)
            total += 0.0 if least is None else greatest - least
        return total

    total_weight = sum(weight(q) for q in queries)
    found = {}
    for q in sorted(judged_of):
        judged = judged_of[q]
        docs = sorted({h for r in rankers if (q, r) in lists
                       for h in oracle_holes(lists[q, r], judged, spec)})
        if spec.ideal == "all_judged":
            docs = sorted(set(docs) | {d for d, g in judged.items() if g == "u"})
        now = width_sum(q, judged)
        for doc in docs:
            narrowing = [weight(q) * (now - width_sum(q, {**judged, doc: g}))
                         if weight(q) > 0 and now > 0 else 0.0 for g in range(top + 1)]
            places = {}
            for r in rankers:
                ranked = sorted(lists.get((q, r), []), key=lambda c: -c[1])
                for d, s, _ in ranked:
                    if d == doc:
                        places[r] = 1 + sum(1 for _, t, _ in ranked if t > s)
            top_k = sorted(r for r, p in places.items() if p <= k)
            found[q, doc] = (sum(p * n for p, n in zip(shares, narrowing)) / total_weight,
                             min(narrowing) / total_weight, ",".join(top_k) or None,
                             min(places.values()) if places else None)
    return found


SPECS = [
    EvaluationSpec(cutoffs=(3,)),
    EvaluationSpec(cutoffs=(1, 2), gain="linear", ideal="all_judged"),
    EvaluationSpec(cutoffs=(4,), no_positive="zero", ideal="all_judged"),
    EvaluationSpec(cutoffs=(5,), gain="linear", no_positive="one"),
    EvaluationSpec(cutoffs=(2,), max_grade=3),
]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.spec_id)
@pytest.mark.parametrize("weighted", [False, True])
def test_scores_are_the_plain_recomputation(seed, spec, weighted):
    run, version, queries = small_case(seed)
    table = queries if weighted else None
    got = worklist(version, run, spec, table)
    expected = plain_worklist(run, version, spec,
                              dict(queries.iter_rows()) if weighted else None)
    assert set(zip(got["query_id"], got["doc_id"])) == set(expected)
    for row in got.iter_rows(named=True):
        want = expected[row["query_id"], row["doc_id"]]
        assert row["expected_narrowing"] == pytest.approx(want[0], abs=1e-9)
        assert row["guaranteed_narrowing"] == pytest.approx(want[1], abs=1e-9)
        assert (row["rankers"], row["best_position"]) == want[2:]
    # The order: narrowing high to low, then query_id, then doc_id; priority 1..n.
    keys = list(zip(-got["expected_narrowing"], got["query_id"], got["doc_id"]))
    assert keys == sorted(keys)
    assert got["priority"].to_list() == list(range(1, got.height + 1))
    assert got["grade"].null_count() == got.height
    assert set(got["grade_status"]) <= {"graded"}


def test_the_order_is_the_same_for_any_row_order():
    run, version, queries = small_case(3)
    spec = EvaluationSpec(cutoffs=(3,))
    first = worklist(version, run, spec, queries)
    again = worklist(version.sample(fraction=1.0, shuffle=True, seed=1),
                     run.sample(fraction=1.0, shuffle=True, seed=2),
                     spec, queries.reverse())
    assert first.equals(again)


def test_equal_narrowings_are_ordered_by_query_then_document():
    # Two copies of one query and, in each, two unjudged documents tied in score: all four
    # holes narrow the bounds alike, so query_id and then doc_id decide.
    runs, rows = [], []
    for qid in ("qb", "qa"):
        runs += [("r", qid, "top", 3.0), ("r", qid, "y", 2.0), ("r", qid, "x", 2.0),
                 ("r", qid, "low", 1.0), ("r", qid, "mid", 0.5)]
        rows += [(qid, "top", 2, "graded"), (qid, "low", 0, "graded"), (qid, "mid", 1, "graded")]
    run = pl.DataFrame(runs, schema=["ranker", "query_id", "doc_id", "score"], orient="row")
    version = pl.DataFrame(rows, schema=["query_id", "doc_id", "grade", "grade_status"],
                           orient="row")
    got = worklist(version, run, EvaluationSpec(cutoffs=(3,)))
    assert got.select("query_id", "doc_id").rows() == [
        ("qa", "x"), ("qa", "y"), ("qb", "x"), ("qb", "y")]
    assert got["expected_narrowing"].n_unique() == 1
    assert got["expected_narrowing"][0] > 0


def test_a_budget_keeps_the_first_holes_and_below_one_is_refused():
    run, version, queries = small_case(0)
    spec = EvaluationSpec(cutoffs=(3,))
    every = worklist(version, run, spec, queries)
    assert worklist(version, run, spec, queries, budget=3).equals(every.head(3))
    with pytest.raises(WorklistError) as refused:
        worklist(version, run, spec, queries, budget=0)
    assert_names(refused, "--budget", "0")


def test_a_query_the_version_does_not_judge_has_no_holes_listed():
    run, version, _ = small_case(1)
    unjudged = pl.DataFrame({"ranker": ["r1"], "query_id": ["new"], "doc_id": ["n1"],
                             "score": [1.0]})
    got = worklist(version, pl.concat([run, unjudged]), EvaluationSpec(cutoffs=(3,)))
    assert "new" not in got["query_id"].to_list()


# -- the file it becomes ----------------------------------------------------------------------


def test_filled_in_it_is_a_judgment_version_alone_and_appended(tmp_path):
    run, version, queries = small_case(2)
    spec = EvaluationSpec(cutoffs=(3,))
    listed = worklist(version, run, spec, queries.with_columns(
        pl.format("text of {}", "query_id").alias("query_text")), budget=5)
    assert "query_text" in listed.columns and listed["rankers"].null_count() < listed.height
    blank = tmp_path / "worklist.csv"
    listed.write_csv(blank)
    # Unfilled, it is refused: a graded row needs a grade, nothing lands as a grade nobody gave.
    with pytest.raises(InputError) as refused:
        read_judgments(blank, version="v2")
    # Every listed row, by its line in the file (the header is line 1).
    violation(refused, "grade", JUDGMENTS.rule("graded_rows_have_a_grade"), source=blank,
              rows=range(2, 7), count=5)
    filled = tmp_path / "v2.csv"
    pl.read_csv(blank, infer_schema=False).with_columns(
        pl.Series("grade", [str(i % 3) for i in range(listed.height)])).write_csv(filled)
    alone = read_judgments(filled)
    assert alone["judgment_version"].unique().to_list() == ["v2"]
    assert alone["grade"].to_list() == [i % 3 for i in range(listed.height)]
    assert {"priority", "rankers", "query_text"} <= set(alone.columns)  # passed through

    merged = tmp_path / "v3.csv"
    fill_version(version.with_columns(pl.lit("v1").alias("judgment_version")), alone,
                 "v3").write_csv(merged)
    new = read_judgments(merged)
    assert new.height == version.join(alone, on=["query_id", "doc_id"], how="anti").height \
        + alone.height
    assert new["judgment_version"].unique().to_list() == ["v3"]
    # Every listed hole is graded now: the new version's holes are the others.
    every = worklist(version, run, spec, queries)
    left = worklist(new, run, spec, queries)
    keys = ["query_id", "doc_id"]
    assert set(left.select(keys).rows()) == set(every.select(keys).rows()) - set(
        listed.select(keys).rows())


# -- the simulation ---------------------------------------------------------------------------


def judged_data(seed: int, n_queries=30, rankers=("a", "b", "c"), n_docs=14, depth=10):
    """A fully judged data set: every document of a query graded 0..3 (mostly 0), three
    rankers each returning `depth` of them with scores that follow the grades with noise, and
    query weights from 1 to 49."""
    rng = np.random.default_rng(seed)
    runs, rows = [], []
    shares = np.array([0.5, 0.25, 0.15, 0.1])
    for q in range(n_queries):
        qid = f"q{q:02d}"
        grades = rng.choice(4, size=n_docs, p=shares)
        rows += [(qid, f"d{i:02d}", int(g), "graded") for i, g in enumerate(grades)]
        for ranker in rankers:
            picked = rng.choice(n_docs, size=depth, replace=False)
            noisy = np.round(grades[picked] + rng.normal(0, 1.0, size=depth), 1)
            runs += [(ranker, qid, f"d{i:02d}", float(s)) for i, s in zip(picked, noisy)]
    run = pl.DataFrame(runs, schema=["ranker", "query_id", "doc_id", "score"], orient="row")
    truth = pl.DataFrame(rows, schema={"query_id": pl.String, "doc_id": pl.String,
                                       "grade": pl.Int64, "grade_status": pl.String},
                         orient="row")
    weights = pl.DataFrame({"query_id": [f"q{q:02d}" for q in range(n_queries)],
                            "weight": rng.integers(1, 50, n_queries).astype(float)})
    return run, truth, weights, rng


def punch_holes(truth: pl.DataFrame, run: pl.DataFrame, rng, share=0.35) -> pl.DataFrame:
    """The version with a share of the candidates' grades taken away: half of them made
    unknown, half removed (unjudged)."""
    candidates = run.select("query_id", "doc_id").unique().sort("query_id", "doc_id")
    punched = candidates.filter(pl.Series(rng.random(candidates.height) < share))
    unknown = pl.Series(rng.random(punched.height) < 0.5)
    removed = truth.join(punched.filter(~unknown), on=["query_id", "doc_id"], how="anti")
    made_unknown = punched.filter(unknown).with_columns(pl.lit(True).alias("open"))
    return removed.join(made_unknown, on=["query_id", "doc_id"], how="left").select(
        "query_id", "doc_id",
        pl.when(pl.col("open")).then(None).otherwise(pl.col("grade")).alias("grade"),
        pl.when(pl.col("open")).then(pl.lit("unknown")).otherwise(pl.col("grade_status"))
        .alias("grade_status"))


def total_width(run, version, spec, weights) -> float:
    """Sum over queries x rankers of weight x (ndcg_max - ndcg_min) at the headline K, by
    the project's own scoring."""
    rows = score(run, version, spec.replace(cutoffs=(headline_cutoff(spec),)))
    rows = rows.join(weights, on="query_id", how="left")
    return float(((rows["ndcg_max"] - rows["ndcg_min"]).fill_null(0.0)
                  * rows["weight"].fill_null(0.0)).sum())


def graded(version, truth, chosen: pl.DataFrame) -> pl.DataFrame:
    """``version`` with the chosen holes given their true grades."""
    filled = chosen.select("query_id", "doc_id").join(
        truth.select("query_id", "doc_id", "grade"), on=["query_id", "doc_id"]).with_columns(
        pl.lit("graded").alias("grade_status"))
    return fill_version(version, filled, "next")


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("spec", [profile("default"), profile("trec_eval")],
                         ids=["default", "trec_eval"])
@pytest.mark.parametrize("weighted", [True, False], ids=["traffic", "unweighted"])
def test_grading_the_top_of_the_worklist_narrows_the_bounds_most(seed, spec, weighted):
    run, truth, weights, rng = judged_data(seed)
    if not weighted:
        weights = weights.with_columns(pl.lit(1.0).alias("weight"))
    version = punch_holes(truth, run, rng)
    listed = worklist(version, run, spec, weights)
    depth_pool = listed.sort("best_position", "query_id", "doc_id", nulls_last=True)
    before = total_width(run, version, spec, weights)
    assert listed.height > 100 and before > 0
    ahead = []  # whether the worklist did strictly better than depth-pool order, per N
    for n in (5, 10, 20, 40):
        ours = total_width(run, graded(version, truth, listed.head(n)), spec, weights)
        by_depth = total_width(run, graded(version, truth, depth_pool.head(n)), spec, weights)
        at_random = [total_width(run, graded(version, truth, listed.sample(n, seed=s)), spec,
                                 weights) for s in range(3)]
        assert ours <= by_depth + 1e-9, (n, ours, by_depth)
        assert ours < min(at_random), (n, ours, at_random)
        assert ours < before
        ahead.append(ours < by_depth - 1e-9)
    # Depth-pool order itself would pass the checks above; the worklist must also beat it.
    assert any(ahead), ahead


# -- the shared what-ifs ----------------------------------------------------------------------


def tied_case(seed: int, rankers=("a", "b", "c"), n_queries=5, n_docs=12, top=3):
    """(run, version) with several rankers, scores on a grid of six values (so that tie
    groups straddle any small K), each ranker returning most of the documents: many holes past
    K in every list, unknown rows no ranker returned, and documents only some rankers
    return. The run has a ``rank`` column (each list's order), for ``ties: rank``."""
    rng = np.random.default_rng(seed)
    runs, rows = [], []
    for q in range(n_queries):
        qid = f"q{q}"
        for i in range(n_docs):
            kind = rng.choice(["graded", "graded", "unknown", "none"])
            if kind == "graded":
                rows.append((qid, f"d{i:02d}", int(rng.integers(0, top + 1)), "graded"))
            elif kind == "unknown":
                rows.append((qid, f"d{i:02d}", None, "unknown"))
        rows += [(qid, "out1", None, "unknown"), (qid, "out2", None, "unknown")]
        for ranker in rankers:
            picked = rng.choice(n_docs, size=int(rng.integers(n_docs - 3, n_docs + 1)),
                                replace=False)
            scores = rng.integers(0, 6, size=len(picked)).astype(float)
            order = np.lexsort((picked, -scores))
            runs += [(ranker, qid, f"d{picked[j]:02d}", float(scores[j]), place + 1)
                     for place, j in enumerate(order)]
    rows.append(("q0", "anchor", top, "graded"))
    run = pl.DataFrame(runs, schema=["ranker", "query_id", "doc_id", "score", "rank"],
                       orient="row")
    version = pl.DataFrame(rows, schema={"query_id": pl.String, "doc_id": pl.String,
                                         "grade": pl.Int64, "grade_status": pl.String},
                           orient="row")
    return run, version


def scored_worklist(run: pl.DataFrame, version: pl.DataFrame, spec: EvaluationSpec
                    ) -> dict[tuple[str, str], tuple[float, float]]:
    """Rule 8 as written: every hole's what-if by the project's scorer, on a copy of its query
    (under an id of its own) with that hole graded, for each grade; W(q | h = g) added ranker
    by ranker in name order: {(query_id, doc_id): (expected_narrowing,
    guaranteed_narrowing)}, unweighted."""
    k = headline_cutoff(spec)
    graded = version.filter(pl.col("grade_status") == "graded")["grade"]
    top = spec.max_grade if spec.max_grade is not None else int(graded.max())
    spec_k = spec.replace(cutoffs=(k,), max_grade=top)  # the hole grades stay the version's
    counts = Counter(g for g in graded.to_list() if g <= top)
    shares = [counts[g] / sum(counts.values()) for g in range(top + 1)]
    rankers = sorted(run["ranker"].unique())

    def width_sums(candidates, judgments):
        rows = score(candidates, judgments, spec_k).filter(pl.col("cutoff") == k)
        widths = {(r, q): (hi - lo if hi is not None and lo is not None else 0.0)
                  for r, q, lo, hi in rows.select("ranker", "query_id", "ndcg_min",
                                                  "ndcg_max").iter_rows()}
        sums = {}
        for q in {q for _, q in widths}:
            total = 0.0
            for r in rankers:
                total = total + widths.get((r, q), 0.0)
            sums[q] = total
        return sums

    now = width_sums(run, version)
    judged = {(q, d): s for q, d, _, s in version.iter_rows()}
    holes = {(q, d) for q, d in run.select("query_id", "doc_id").iter_rows()
             if judged.get((q, d), "unknown") == "unknown" and q in set(version["query_id"])}
    if spec.ideal == "all_judged":
        holes |= {h for h, s in judged.items() if s == "unknown"}
    copies_run, copies_version = [], []
    for q, d in sorted(holes):
        for g in range(top + 1):
            copy = f"{q}|{d}|{g}"
            copies_run.append(run.filter(pl.col("query_id") == q).with_columns(
                pl.lit(copy).alias("query_id")))
            copies_version += [
                version.filter((pl.col("query_id") == q) & (pl.col("doc_id") != d))
                .with_columns(pl.lit(copy).alias("query_id")),
                pl.DataFrame({"query_id": [copy], "doc_id": [d], "grade": [g],
                              "grade_status": ["graded"]}, schema=version.schema)]
    after = width_sums(pl.concat(copies_run), pl.concat(copies_version))
    found = {}
    for q, d in holes:
        narrowing = [now.get(q, 0.0) - after.get(f"{q}|{d}|{g}", 0.0)
                     if now.get(q, 0.0) > 0 else 0.0 for g in range(top + 1)]
        found[q, d] = (sum(n * p for n, p in zip(narrowing, shares)) / len(now),
                       min(narrowing) / len(now))
    return found


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("spec", [
    EvaluationSpec(cutoffs=(4,)),
    EvaluationSpec(cutoffs=(2, 5), ideal="all_judged"),
    EvaluationSpec(cutoffs=(3,), ideal="all_judged", gain="linear", no_positive="one"),
    EvaluationSpec(cutoffs=(4,), ties="doc_id", ideal="all_judged", no_positive="zero"),
    EvaluationSpec(cutoffs=(4,), ties="trec_eval", max_grade=4),
    EvaluationSpec(cutoffs=(3,), ties="rank", ideal="all_judged"),
], ids=lambda s: s.spec_id)
def test_holes_past_k_share_one_what_if_that_is_each_ones_own(seed, spec):
    # The worklist grades each hole a ranker weighs at K on its own, and gives the holes past
    # K in a list (and under all_judged the unknown rows no ranker returned) one what-if per
    # list and grade. Each hole's numbers must still be those of its own what-if, scored by
    # the scorer on the version with that hole graded: with tie groups across K under
    # average, several rankers, documents only some rankers return, and all_judged.
    run, version = tied_case(seed)
    k = headline_cutoff(spec)
    got = worklist(version, run, spec)
    want = scored_worklist(run, version, spec)
    assert set(zip(got["query_id"], got["doc_id"])) == set(want)
    for q, d, expected, guaranteed in got.select(
            "query_id", "doc_id", "expected_narrowing", "guaranteed_narrowing").iter_rows():
        assert expected == pytest.approx(want[q, d][0], abs=1e-12), (q, d)
        assert guaranteed == pytest.approx(want[q, d][1], abs=1e-12), (q, d)
    # The case has what the shared what-ifs stand for: holes past K in every list, and, under
    # average, holes in a tie group that straddles K (first place <= K, not all inside).
    past_k = got.filter(pl.col("rankers").is_null() & pl.col("best_position").is_not_null())
    assert past_k.height > 0 and past_k["expected_narrowing"].max() > 0
    if spec.ties == "average":
        placed = run.with_columns(
            pl.col("score").rank("min", descending=True).over("ranker", "query_id")
            .alias("first"),
            pl.col("score").rank("max", descending=True).over("ranker", "query_id")
            .alias("last"))
        assert placed.filter((pl.col("first") <= k) & (pl.col("last") > k)).height > 0
    if spec.ideal == "all_judged":
        assert got.filter(pl.col("doc_id").str.starts_with("out"))["expected_narrowing"] \
            .max() > 0


def test_holes_past_k_of_one_kind_have_equal_numbers():
    # Within a query, the holes every ranker places past K that the same rankers return are
    # exchangeable: one what-if stands for them all, so their numbers are equal, not merely
    # close.
    run, version = tied_case(4, rankers=("a",), n_docs=16)
    got = worklist(version, run, EvaluationSpec(cutoffs=(3,)))
    past_k = got.filter(pl.col("rankers").is_null())
    by_query = past_k.group_by("query_id").agg(
        pl.col("expected_narrowing").n_unique().alias("expected"),
        pl.col("guaranteed_narrowing").n_unique().alias("guaranteed"), pl.len())
    assert by_query["len"].max() > 1
    assert by_query["expected"].max() == 1 and by_query["guaranteed"].max() == 1


@pytest.mark.parametrize("seed", range(4))
def test_bound_width_is_the_widest_of_the_scored_widths_of_the_query(seed):
    # Under all_judged another ranker's unjudged document widens this ranker's bounds too: the
    # worklist's widths are the per-query rows' own, at the headline cutoff.
    spec = EvaluationSpec(cutoffs=(2, 4), ideal="all_judged", max_grade=2)
    run, version, _ = small_case(seed, rankers=("r1", "r2", "r3"))
    got = worklist(version, run, spec)
    rows = score(run, version, spec).filter(pl.col("cutoff") == headline_cutoff(spec))
    widest = dict(rows.group_by("query_id").agg(
        (pl.col("ndcg_max") - pl.col("ndcg_min")).fill_null(0.0).max()).iter_rows())
    assert got.height
    for q, width in zip(got["query_id"], got["bound_width"]):
        assert width == pytest.approx(widest[q], abs=1e-12)
