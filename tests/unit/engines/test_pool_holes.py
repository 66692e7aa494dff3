"""Another ranker's unjudged documents are holes of every ranker of the query under ``ideal:
all_judged`` (contract section 3, rule 7), and every engine counts them alike: the streaming
engine, whose batches hold one ranker at a time, gives the in-memory engine's rows exactly."""

from __future__ import annotations

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from evaluation_pipeline.engines import score_files
from evaluation_pipeline.spec import EvaluationSpec, profile
from tests.support.unshared_pool import RANKERS, unshared_pool

SPECS = {
    "trec_eval": profile("trec_eval"),
    "average": EvaluationSpec(cutoffs=(3, 10), ideal="all_judged", no_positive="zero",
                              unjudged="zero"),
    "candidates": EvaluationSpec(cutoffs=(5,), unjudged="zero"),
}


def _scored(judgments, run, spec, out, engine):
    score_files(judgments, run, spec, out, engine=engine, batch_rows=13, progress=False)
    return pl.read_parquet(out)


@pytest.mark.parametrize("name", list(SPECS))
def test_streaming_equals_local_on_a_pool_with_unshared_unjudged_documents(tmp_path, name):
    judgments, pool = unshared_pool(tmp_path)
    spec = SPECS[name]
    local = _scored(judgments, pool, spec, tmp_path / "local.parquet", "local")
    streamed = _scored(judgments, pool, spec, tmp_path / "stream.parquet", "streaming")
    assert_frame_equal(local, streamed)
    # Each ranker scored alone: under all_judged the pool adds holes (other rankers'
    # documents), and widens some bounds; under the candidates ideal it changes nothing.
    alone = pl.concat([_scored(judgments, pool / f"{r}.parquet", spec,
                               tmp_path / f"{r}.parquet", "local") for r in RANKERS])
    keys = ["ranker", "query_id", "cutoff"]
    both = local.join(alone, on=keys, suffix="_alone")
    assert both.height == local.height
    if spec.ideal == "candidates":
        assert (both["n_holes"] == both["n_holes_alone"]).all()
        return
    assert (both["n_holes"] >= both["n_holes_alone"]).all()
    assert (both["n_holes"] > both["n_holes_alone"]).sum() > 20
    scored = both.filter(pl.col("status") != "not_judged")
    assert (scored["ndcg_min"] <= scored["ndcg_min_alone"]).all()
    assert (scored["ndcg_max"] - scored["ndcg_min"] > scored["ndcg_max_alone"]
            - scored["ndcg_min_alone"] + 1e-12).any()
    missing = both.filter(pl.col("status") == "missing_from_run")
    assert missing.height and (missing["n_holes"] > missing["n_holes_alone"]).any()


@pytest.mark.parametrize("raters", ["rater:h1", "prefer:h2,h1", "majority:higher"])
def test_a_version_with_raters_counts_the_documents_its_rule_leaves_unjudged(tmp_path, raters):
    # Under rater:h1 a document only h2 rated has no row: another ranker's copy of it is a hole.
    judgments, pool = unshared_pool(tmp_path, raters=True)
    spec = profile("trec_eval").replace(raters=raters)
    local = _scored(judgments, pool, spec, tmp_path / "local.parquet", "local")
    streamed = _scored(judgments, pool, spec, tmp_path / "stream.parquet", "streaming")
    assert_frame_equal(local, streamed)
