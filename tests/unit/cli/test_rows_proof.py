"""compare and report read per-query rows back from folders written earlier: rows that no
longer hold the bytes recorded beside them (the stamp in a report's report.json, a score
folder's summary.json, the pipeline's scores manifest) are refused, named, before any number
is computed from them."""

from __future__ import annotations

import json

import polars as pl
import pytest

from evaluation_pipeline.cli.main import main
from evaluation_pipeline.cli.results import ResultsError, load_results, rows_alteration
from evaluation_pipeline.io.landing import file_sha256
from evaluation_pipeline.io.storage import scores_file
from evaluation_pipeline.orchestration.scoring import ScoringEngine, score_evaluation
from tests.support.paths import P28, V2
from tests.support.refusals import assert_names
from tests.unit.orchestration import test_published_hashes as published_hashes
from tests.unit.orchestration.test_published_hashes import POOL, SPEC, VERSION

FAST = ["--bootstrap", "200"]

# The published storage of test_published_hashes, a fixture found under this name: bound here
# rather than imported, so that the test naming it as a parameter does not shadow an import.
published = published_hashes.published


def _set_one_ndcg(path):
    rows = pl.read_parquet(path)
    rows.with_columns(ndcg=pl.when(pl.col("query_id") == rows["query_id"].max()).then(0.123)
                      .otherwise(pl.col("ndcg"))).write_parquet(path)


@pytest.fixture
def reported(tmp_path):
    out = tmp_path / "scored"
    assert main(["score", "--judgments", str(V2), "--run", str(P28), "--out", str(out),
                 "--report", *FAST]) == 0
    return out


def test_a_report_records_the_hash_of_its_rows(reported):
    (recorded,) = json.loads((reported / "report.json").read_text())["stamp"]["files"]
    assert recorded["name"] == "per_query.parquet"
    assert recorded["sha256"] == file_sha256(reported / "per_query.parquet")
    load_results(reported)  # proven: read


def test_altered_rows_of_a_report_are_refused_by_compare_and_report(reported, capsys):
    rows = reported / "per_query.parquet"
    _set_one_ndcg(rows)
    with pytest.raises(ResultsError) as refused:
        load_results(reported)
    assert_names(refused, str(rows))
    capsys.readouterr()
    assert main(["compare", str(reported), "--cutoff", "10", *FAST]) != 0
    assert_names(capsys.readouterr().err, str(rows))
    assert main(["report", str(reported), "--out", str(reported.parent / "again"), *FAST]) != 0


def test_altered_scores_of_the_pipeline_are_refused(published):
    score_evaluation(published, ScoringEngine(), POOL, VERSION, SPEC)
    rows = published.path(*scores_file(POOL, VERSION, SPEC.spec_id))
    assert rows_alteration(rows.parent, rows) is None
    _set_one_ndcg(rows)
    with pytest.raises(ResultsError) as refused:
        load_results(rows.parent, None)
    assert_names(refused, str(rows))


def test_altered_rows_of_a_score_folder_are_refused(tmp_path):
    out = tmp_path / "scored"
    assert main(["score", "--judgments", str(V2), "--run", str(P28), "--out", str(out)]) == 0
    assert json.loads((out / "summary.json").read_text())["stamp"]["files"][0]["name"] == (
        "per_query.parquet")
    load_results(out)
    _set_one_ndcg(out / "per_query.parquet")
    with pytest.raises(ResultsError) as refused:
        load_results(out)
    assert_names(refused, str(out / "per_query.parquet"))
