"""``agreement()`` held to ``ndcg-eval agreement --json`` on the same data, from a file, a
DataFrame, an Arrow table and the dict of one qrels per rater; a version without raters is
refused as the CLI refuses it. ``Evaluation.summary`` carries the bounds of each mean over every
grading of the holes, as the per-query bounds give them."""

from __future__ import annotations

import json

import polars as pl
import pytest

from evaluation_pipeline import agreement, evaluate
from evaluation_pipeline.cli.main import main
from schemas.errors import InputError
from tests.support.paths import EXAMPLES, P28, V2

RATED = EXAMPLES / "raters" / "maint-raters.csv"
RULE = "cutoffs: [5, 10]\nraters: prefer:h1,h2,llm-judge\n"


def cli_json(capsys, *argv) -> dict:
    capsys.readouterr()
    assert main([str(a) for a in argv]) == 0
    return json.loads(capsys.readouterr().out)


def ratings() -> pl.DataFrame:
    return pl.read_csv(RATED, schema_overrides={"query_id": pl.String})


@pytest.fixture
def spec_file(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text(RULE)
    return path


def test_agreement_is_the_clis_document(capsys, spec_file):
    shown = cli_json(capsys, "agreement", "--judgments", RATED, "--run", P28, "--spec",
                     spec_file, "--json")
    assert {n["rater"] for n in shown["ndcg"]} == {"h1", "h2", "llm-judge", "rule"}
    assert agreement(RATED, P28, spec=spec_file) == shown
    pool = pl.concat([pl.read_parquet(p) for p in sorted(P28.glob("*.parquet"))])
    assert agreement(ratings(), pool, spec=spec_file) == shown
    assert agreement(ratings().to_arrow(), pool.to_arrow(), spec=spec_file) == shown
    # Without a run: the raters' agreement alone, as the command without --run.
    assert agreement(RATED) == cli_json(capsys, "agreement", "--judgments", RATED, "--json")


def test_one_qrels_per_rater_is_the_version_of_their_rows(capsys, tmp_path, spec_file):
    frame = ratings()
    # The dict carries no rater_kind: the CLI reads the same rows without it.
    frame.drop("rater_kind").write_csv(tmp_path / "maint-raters.csv")
    shown = cli_json(capsys, "agreement", "--judgments", tmp_path / "maint-raters.csv",
                     "--run", P28, "--spec", spec_file, "--json")
    qrels: dict = {}
    for rater, query, doc, grade, status in frame.select(
            "rater", "query_id", "doc_id", "grade", "grade_status").rows():
        qrels.setdefault(rater, {}).setdefault(query, {})[doc] = (
            grade if status == "graded" else -1)
    runs: dict = {}
    for ranker, query, doc, score in pl.concat(
            [pl.read_parquet(p) for p in sorted(P28.glob("*.parquet"))]).select(
            "ranker", "query_id", "doc_id", "score").rows():
        runs.setdefault(ranker, {}).setdefault(query, {})[doc] = score
    document = agreement(qrels, runs, spec=spec_file, judgment_version="maint-raters",
                         pool=P28.name)
    assert document == shown
    assert [r["rater_kind"] for r in document["raters"]] == [None] * 3


def test_a_version_without_raters_is_refused_naming_the_input():
    with pytest.raises(InputError, match="agreement needs a version with a rater column") as no:
        agreement({"q1": {"a": 1, "b": 0}})
    assert no.value.source == "judgments (dict)"
    with pytest.raises(InputError, match="agreement needs a version with a rater column"):
        agreement(V2, P28)


def test_the_summary_carries_the_bounds_of_each_mean():
    result = evaluate(V2, P28)
    rows = result.per_query.filter(pl.col("every_grading_scored")).group_by(
        "ranker", "cutoff").agg(pl.len().alias("n"), pl.col("ndcg_min").mean().alias("low"),
                                pl.col("ndcg_max").mean().alias("high"))
    expected = {(r, k): (n, low, high) for r, k, n, low, high in rows.rows()}
    summary = result.summary
    assert summary.height == len(expected) == 6
    for ranker, cutoff, n, low, high, macro in summary.select(
            "ranker", "cutoff", "n_bounded", "macro_ndcg_min", "macro_ndcg_max",
            "macro_ndcg").rows():
        assert (n, pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12)) == (
            expected[ranker, cutoff])
        assert low <= high and n > 0 and macro is not None
    # The columns summary.json has come first, as before, and its numbers are unchanged.
    record = result.summary_record()["results"]
    assert summary["macro_ndcg"].to_list() == [r["macro_ndcg"] for r in record]
