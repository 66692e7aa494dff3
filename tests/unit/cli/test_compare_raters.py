"""``ndcg-eval compare --judgments`` of two versions with raters lists the documents whose
grade under the results' rule changed, not the ratings."""

from __future__ import annotations

import polars as pl

from evaluation_pipeline.cli.main import main
from evaluation_pipeline.metric.raters import combine_ratings
from evaluation_pipeline.spec import EvaluationSpec
from tests.support.raters import pool_over, rated_version


def test_regraded_documents_are_those_of_the_rules_grades(tmp_path, capsys):
    old = rated_version(61)
    regrade = (pl.col("rater") == "h2") & (pl.col("grade_status") == "graded")
    new = old.with_columns(pl.when(regrade & (pl.col("query_id") < "q08"))
                           .then((pl.col("grade") + 1) % 4).otherwise("grade").alias("grade"),
                           judgment_version=pl.lit("rated-v2"))
    old.write_csv(tmp_path / "old.csv")
    new.write_csv(tmp_path / "new.csv")
    pool_over(old, 62).write_parquet(tmp_path / "run.parquet")
    (tmp_path / "spec.yaml").write_text("raters: prefer:h1,h2\n")
    for name in ("old", "new"):
        assert main(["score", "--judgments", str(tmp_path / f"{name}.csv"), "--run",
                     str(tmp_path / "run.parquet"), "--spec", str(tmp_path / "spec.yaml"),
                     "--out", str(tmp_path / f"out-{name}")]) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "out-old"), str(tmp_path / "out-new"),
                 "--judgments", str(tmp_path / "old.csv"), str(tmp_path / "new.csv")]) == 0
    spec = EvaluationSpec(raters="prefer:h1,h2")
    both = combine_ratings(old, spec).join(combine_ratings(new, spec), on=["query_id", "doc_id"])
    changed = both.filter(pl.col("grade").ne_missing(pl.col("grade_right"))).height
    assert 0 < changed < old.filter(regrade & (pl.col("query_id") < "q08")).height
    assert f"0 added, 0 removed, {changed} regraded" in capsys.readouterr().out
