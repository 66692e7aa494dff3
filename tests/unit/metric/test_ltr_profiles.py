"""The `lightgbm`, `xgboost` and `xgboost_minus` profiles against the libraries' own numbers,
the `ties: rank` rule and `no_positive: one`.

The oracles train small rankers on generated data built to stress the conventions: coarse
features and few trees or leaves (many tied predictions), queries without a positive grade, and
single-document queries. The validation NDCG@{1,3,5,10} each library prints while training is
held to the profile's per-cutoff mean, with the run's rank = the input order within each query
(both libraries keep equal predictions in input order).
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation_pipeline.aggregation.aggregate_table import aggregate
from evaluation_pipeline.cli.main import main
from evaluation_pipeline.metric.ndcg import score
from evaluation_pipeline.spec import FIELDS, SpecError, profile, spec_from_mapping
from schemas.ranks import RANK_REQUIRED, RANK_UNIQUE
from tests.support.refusals import assert_names

CUTOFFS = (1, 3, 5, 10)
TOLERANCE = 1e-9


def learning_to_rank_data(seed: int, n_queries: int = 60):
    """(features, grades, query sizes): grades 0..4 driven by two coarse features; every fifth
    query has no positive grade and every seventh a single document."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 25, n_queries)
    sizes[::7] = 1
    n = int(sizes.sum())
    features = rng.integers(0, 3, (n, 3)).astype(np.float64)  # 27 distinct rows: many ties
    grade = np.clip(features[:, 0] + features[:, 1] + rng.integers(-1, 2, n) - 1, 0, 4)
    query = np.repeat(np.arange(n_queries), sizes)
    grade[np.isin(query, np.arange(0, n_queries, 5))] = 0
    return features, grade.astype(np.int64), sizes


def as_run(scores: np.ndarray, grades: np.ndarray, sizes: np.ndarray, seed: int = 0):
    """(candidates, judgments) of one validation set: doc_ids that do not follow the input
    order (a doc_id tie rule would not reproduce the libraries), rank = input order."""
    query = np.repeat(np.arange(len(sizes)), sizes)
    rank = np.concatenate([np.arange(1, s + 1) for s in sizes])
    doc = np.random.default_rng(seed).permutation(len(query))
    query_ids = [f"q{q:03d}" for q in query]
    doc_ids = [f"d{d:05d}" for d in doc]
    candidates = pl.DataFrame({
        "candidate_pool": "validation", "ranker": "model", "query_id": query_ids,
        "doc_id": doc_ids, "score": scores.astype(np.float64), "rank": rank,
    })
    judgments = pl.DataFrame({
        "query_id": query_ids, "doc_id": doc_ids, "grade": grades,
        "grade_status": "graded", "judgment_version": "validation",
    })
    return candidates, judgments


def profile_means(name, candidates: pl.DataFrame, judgments: pl.DataFrame) -> dict:
    """Macro NDCG per cutoff under a profile (by name) or a spec."""
    spec = profile(name) if isinstance(name, str) else name
    rows = score(candidates, judgments, spec.replace(cutoffs=CUTOFFS))
    table = aggregate(rows).filter(pl.col("slice_column") == "all")
    return dict(zip(table["cutoff"].to_list(), table["macro_ndcg"].to_list()))


def assert_close(means: dict, printed: dict) -> None:
    for k in CUTOFFS:
        assert abs(means[k] - printed[k]) <= TOLERANCE, (k, means[k], printed[k])


# -- the libraries' own numbers --------------------------------------------------------------


@pytest.mark.parametrize("seed", [1, 2])
def test_lightgbm_profile_reproduces_lambdarank_validation_ndcg(seed):
    lightgbm = pytest.importorskip("lightgbm")
    x, y, sizes = learning_to_rank_data(seed)
    xv, yv, sizes_v = learning_to_rank_data(seed + 100)
    model = lightgbm.LGBMRanker(n_estimators=3, num_leaves=3, min_child_samples=5,
                                verbose=-1, random_state=seed)
    model.fit(x, y, group=sizes, eval_X=(xv,), eval_y=(yv,), eval_group=[sizes_v],
              eval_at=list(CUTOFFS))
    printed = {k: model.evals_result_["valid_0"][f"ndcg@{k}"][-1] for k in CUTOFFS}
    candidates, judgments = as_run(model.predict(xv, raw_score=True), yv, sizes_v, seed)
    # The data is as hard as intended: tied predictions and queries without a positive grade.
    assert candidates.select(pl.struct("query_id", "score").is_duplicated().mean()).item() > 0.3
    assert_close(profile_means("lightgbm", candidates, judgments), printed)
    # Each of the two conventions no other profile declares moves the mean on this data.
    for changed in ({"ties": "doc_id"}, {"no_positive": "zero"}):
        moved = profile_means(profile("lightgbm").replace(**changed), candidates, judgments)
        assert max(abs(moved[k] - printed[k]) for k in CUTOFFS) > 1e-3, changed


@pytest.mark.parametrize("seed", [3, 4])
def test_xgboost_profiles_reproduce_rank_ndcg_validation_ndcg(seed):
    xgboost = pytest.importorskip("xgboost")
    x, y, sizes = learning_to_rank_data(seed)
    xv, yv, sizes_v = learning_to_rank_data(seed + 100)
    qid, qid_v = (np.repeat(np.arange(len(s)), s) for s in (sizes, sizes_v))
    metrics = [f"ndcg@{k}" for k in CUTOFFS] + [f"ndcg@{k}-" for k in CUTOFFS]
    model = xgboost.XGBRanker(objective="rank:ndcg", n_estimators=3, max_depth=2,
                              tree_method="hist", eval_metric=metrics, random_state=seed)
    model.fit(x, y, qid=qid, eval_set=[(xv, yv)], eval_qid=[qid_v], verbose=False)
    history = model.evals_result()["validation_0"]
    candidates, judgments = as_run(model.predict(xv, output_margin=True), yv, sizes_v, seed)
    assert candidates.select(pl.struct("query_id", "score").is_duplicated().mean()).item() > 0.3
    assert_close(profile_means("xgboost", candidates, judgments),
                 {k: history[f"ndcg@{k}"][-1] for k in CUTOFFS})
    assert_close(profile_means("xgboost_minus", candidates, judgments),
                 {k: history[f"ndcg@{k}-"][-1] for k in CUTOFFS})


# -- ties: rank and no_positive: one, as properties ------------------------------------------

# A few queries of a few documents, scores from three values (ties everywhere), grades 0..3.
_queries = st.lists(
    st.lists(st.tuples(st.sampled_from([0.0, 0.5, 1.0]), st.integers(0, 3)),
             min_size=1, max_size=8),
    min_size=1, max_size=5,
)


def _run_of(queries, rank_seed: int):
    rng = np.random.default_rng(rank_seed)
    rows, judged = [], []
    for q, documents in enumerate(queries):
        ranks = rng.permutation(len(documents)) + 1  # any ranks, unique within the query
        for d, ((value, grade), rank) in enumerate(zip(documents, ranks)):
            rows.append(("p", "r", f"q{q}", f"d{d}", value, int(rank)))
            judged.append((f"q{q}", f"d{d}", grade, "graded", "v"))
    candidates = pl.DataFrame(rows, orient="row", schema=[
        "candidate_pool", "ranker", "query_id", "doc_id", "score", "rank"])
    judgments = pl.DataFrame(judged, orient="row", schema=[
        "query_id", "doc_id", "grade", "grade_status", "judgment_version"])
    return candidates, judgments


@settings(max_examples=60, deadline=None)
@given(_queries, st.integers(0, 2**16), st.integers(0, 2**16))
def test_reordering_the_rows_never_changes_the_result_when_ranks_are_given(queries, ranks, order):
    candidates, judgments = _run_of(queries, ranks)
    spec = profile("lightgbm").replace(cutoffs=(1, 2, 5))
    expected = score(candidates, judgments, spec)
    shuffled = candidates.sample(fraction=1.0, shuffle=True, seed=order)
    assert score(shuffled, judgments, spec).equals(expected)
    # The rank decides: equal scores in rank order give the NDCG of that order.
    listed = candidates.sort(["query_id", "score", "rank"], descending=[False, True, False])
    by_order = score(listed.with_columns(rank=pl.int_range(1, pl.len() + 1).over("query_id")),
                     judgments, spec)
    assert by_order["ndcg"].equals(expected["ndcg"])


@settings(max_examples=60, deadline=None)
@given(_queries, st.integers(0, 2**16))
def test_no_positive_one_scores_exactly_one_and_keeps_the_status(queries, ranks):
    candidates, judgments = _run_of(queries, ranks)
    for name in ("default", "trec_eval", "sklearn", "lightgbm"):
        spec = profile(name).replace(no_positive="one", cutoffs=(1, 3))
        rows = score(candidates, judgments, spec).join(
            judgments.group_by("query_id").agg(positive=(pl.col("grade") > 0).any()),
            on="query_id")
        without = rows.filter(~pl.col("positive"))
        assert (without["status"] == "no_positive").all()
        assert (without["ndcg"] == 1.0).all()
        assert not (rows.filter(pl.col("positive"))["status"] == "no_positive").any()


# -- the new fields, declared and validated --------------------------------------------------


def test_the_new_values_are_declared_and_others_refused():
    assert profile("xgboost") == profile("lightgbm")
    assert profile("xgboost_minus") == profile("xgboost").replace(no_positive="zero")
    assert spec_from_mapping({"profile": "lightgbm", "gain": {0: 0, 1: 1, 2: 3}}).ties == "rank"
    # The field, the value refused, and each value it takes.
    for field, value in (("ties", "input"), ("no_positive", "half")):
        with pytest.raises(SpecError) as refused:
            profile("default").replace(**{field: value})
        choices = next(f.choices for f in FIELDS if f.name == field)
        assert_names(refused, repr(field), repr(value), *choices)
    assert "rank" in next(f.choices for f in FIELDS if f.name == "ties")
    assert "ties by the run's rank" in profile("lightgbm").describe()
    assert "queries without a positive grade scored 1" in profile("lightgbm").describe()


def _inputs(tmp_path, candidates: pl.DataFrame, judgments: pl.DataFrame, suffix: str):
    run, judged = tmp_path / f"run{suffix}", tmp_path / "judgments.csv"
    if suffix == ".parquet":
        candidates.write_parquet(run)
    else:
        candidates.write_csv(run)
    judgments.write_csv(judged)
    return ["--judgments", str(judged), "--run", str(run)]


@pytest.mark.parametrize("engine", ["local", "streaming"])
@pytest.mark.parametrize("broken, rule", [
    (lambda c: c.drop("rank"), RANK_REQUIRED),
    (lambda c: c.with_columns(rank=pl.lit(1)), RANK_UNIQUE),
])
def test_ties_rank_without_usable_ranks_is_refused_before_anything_is_written(
        tmp_path, capsys, engine, broken, rule):
    candidates, judgments = _run_of([[(1.0, 1), (1.0, 0)], [(0.5, 2)]], 0)
    suffix = ".parquet" if engine == "streaming" else ".csv"
    out = tmp_path / "out"
    args = ["score", *_inputs(tmp_path, broken(candidates), judgments, suffix),
            "--profile", "lightgbm", "--engine", engine, "--out", str(out)]
    assert main(args) == 2
    # The CLI prints the refusal: the file, the column and the rule as schemas.ranks words it.
    assert_names(capsys.readouterr().err, str(tmp_path / f"run{suffix}"), "'rank'", rule)
    assert not out.exists()


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_rank_column_in_the_run_reproduces_the_api(tmp_path, suffix):
    candidates, judgments = _run_of([[(1.0, 1), (1.0, 0), (0.5, 3)], [(0.5, 0)], [(1.0, 2)]], 5)
    out = tmp_path / "out"
    assert main(["score", *_inputs(tmp_path, candidates, judgments, suffix),
                 "--profile", "lightgbm", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    expected = score(candidates, judgments, profile("lightgbm"))
    for result in summary["results"]:
        rows = expected.filter(pl.col("cutoff") == result["cutoff"])
        assert result["macro_ndcg"] == rows["ndcg"].mean()
        assert result["status_counts"]["no_positive"] == 1
        assert "1 without a positive grade scored 1" in result["sentence"]
