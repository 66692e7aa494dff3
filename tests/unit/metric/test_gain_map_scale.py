"""An explicit gain map declares the grades of its scale: it scores data whose every grade it
covers even where the bounds over the holes grade a hole on a scale with gaps (TF-Ranking's
``gain_fn = label / 2`` over the grades {0, 1, 3}), and the bounds then grade each hole with
the map's own grades."""

from __future__ import annotations

import itertools
import math

import polars as pl
import pytest

from evaluation_pipeline.metric.gains import GainError
from evaluation_pipeline.metric.ndcg import score
from evaluation_pipeline.spec import EvaluationSpec

# label / 2 over the grades TF-Ranking's test has.
HALF = {0: 0.0, 1: 0.5, 3: 1.5}


def log2p1(x: float) -> float:
    return math.log2(1.0 + x)


def frames(labels: list[int | None], scores: list[float]):
    docs = [f"d{i}" for i in range(len(labels))]
    judgments = pl.DataFrame({"query_id": "q", "doc_id": [d for d, g in zip(docs, labels)
                                                          if g is not None],
                              "grade": [g for g in labels if g is not None],
                              "grade_status": "graded"})
    candidates = pl.DataFrame({"ranker": "r", "query_id": "q", "doc_id": docs, "score": scores})
    return candidates, judgments


def test_tf_ranking_ndcg_with_a_custom_gain_fn():
    # tensorflow_ranking/python/metrics_impl_test.py,
    # test_ndcg_should_operate_on_graded_relevance_with_custom_gain_fn: scores [4, 3, 2, 1],
    # labels [0, 3, 1, 0], gain_fn = label / 2, every place counted.
    candidates, judgments = frames([0, 3, 1, 0], [4.0, 3.0, 2.0, 1.0])
    spec = EvaluationSpec(gain=HALF, cutoffs=[4], ties="doc_id")
    row = score(candidates, judgments, spec).row(0, named=True)
    dcg = (3.0 / 2.0) / log2p1(2.0) + (1.0 / 2.0) / log2p1(3.0)
    max_dcg = (3.0 / 2.0) / log2p1(1.0) + (1.0 / 2.0) / log2p1(2.0)
    assert row["status"] == "scored"
    assert row["ndcg"] == pytest.approx(dcg / max_dcg, abs=1e-12)
    assert row["ndcg_min"] == row["ndcg_max"] == row["ndcg"]  # no hole: the number itself


@pytest.mark.parametrize("unjudged", ["zero", "exclude"])
def test_the_bounds_grade_a_hole_with_the_maps_grades(unjudged):
    labels = [0, None, 3, 1, None]  # two unjudged candidates
    candidates, judgments = frames(labels, [5.0, 4.0, 3.0, 2.0, 1.0])
    spec = EvaluationSpec(gain=HALF, cutoffs=[3, 5], unjudged=unjudged, ties="doc_id")
    rows = score(candidates, judgments, spec).sort("cutoff")
    for k, row in zip((3, 5), rows.iter_rows(named=True)):
        values = []
        for grading in itertools.product(sorted(HALF), repeat=2):  # each hole, each map grade
            filled = list(labels)
            filled[1], filled[4] = grading
            c, j = frames(filled, [5.0, 4.0, 3.0, 2.0, 1.0])
            values.append(score(c, j, spec.replace(cutoffs=[k]))["ndcg"][0])
        assert row["ndcg_min"] == pytest.approx(min(values), abs=1e-12)
        assert row["ndcg_max"] == pytest.approx(max(values), abs=1e-12)


def test_a_grade_the_map_leaves_out_is_still_refused_where_a_row_has_it():
    candidates, judgments = frames([0, 2, 1], [3.0, 2.0, 1.0])
    with pytest.raises(GainError, match="no gain for grade"):
        score(candidates, judgments, EvaluationSpec(gain=HALF))


def test_the_measures_bound_dcg_with_the_maps_grades():
    labels = [0, None, 3, 1, None]
    candidates, judgments = frames(labels, [5.0, 4.0, 3.0, 2.0, 1.0])
    spec = EvaluationSpec(gain=HALF, unjudged="zero", ties="doc_id",
                          measures=["nDCG@3", "DCG@3", "P@3"])
    rows = score(candidates, judgments, spec).filter(pl.col("measure") != "nDCG@3")
    for row in rows.iter_rows(named=True):
        values = []
        for grading in itertools.product(sorted(HALF), repeat=2):
            filled = list(labels)
            filled[1], filled[4] = grading
            c, j = frames(filled, [5.0, 4.0, 3.0, 2.0, 1.0])
            values.append(score(c, j, spec).filter(
                pl.col("measure") == row["measure"])["value"][0])
        assert (row["value_min"], row["value_max"]) == pytest.approx(
            (min(values), max(values)), abs=1e-12), row["measure"]
