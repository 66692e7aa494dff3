"""``explain()`` and ``reconcile()`` held to ``ndcg-eval explain --json`` and ``ndcg-eval
reconcile --json`` on the same data; in-memory inputs give the same documents as their files;
bad input and options are refused as the CLI refuses them, naming the input, column and rows."""

from __future__ import annotations

import json

import polars as pl
import pytest

from evaluation_pipeline import evaluate, explain, reconcile
from evaluation_pipeline.api.functions import ApiOptionError
from evaluation_pipeline.cli.main import main
from evaluation_pipeline.spec import SpecError, profile
from schemas.errors import EvaluationError, InputError
from tests.support.paths import P28, V2


def cli_json(capsys, *argv) -> object:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_explain_is_the_clis_trace(capsys):
    shown = cli_json(capsys, "explain", "--judgments", str(V2), "--run", str(P28),
                     "--query", "boiler-32", "--ranker", "dense-v2", "--json")
    traces = explain(V2, P28, query="boiler-32", ranker="dense-v2")
    assert [t.to_dict() for t in traces] == [
        {k: v for k, v in t.items() if k not in ("candidate_pool", "spec_id", "conventions")}
        for t in shown]
    one = explain(V2, P28, query="boiler-32", ranker="dense-v2", cutoff=5, spec="trec_eval")
    rows = evaluate(V2, P28, spec="trec_eval", cutoffs=[5]).per_query.filter(
        (pl.col("query_id") == "boiler-32") & (pl.col("ranker") == "dense-v2"))
    assert one.cutoff == 5 and one.ndcg == rows["ndcg"].item() is not None


def test_explain_on_a_one_ranker_frame_names_it_by_ranker():
    pool = pl.read_parquet(P28 / "dense-v2.parquet").drop("ranker", "candidate_pool")
    trace = explain(V2, pool, query="boiler-32", ranker="dense-v2", cutoff=10)
    assert trace.to_dict() == explain(V2, P28, query="boiler-32", ranker="dense-v2",
                                      cutoff=10).to_dict()


def test_reconcile_is_the_clis_document(capsys):
    shown = cli_json(capsys, "reconcile", "--judgments", str(V2), "--run", str(P28),
                     "--from", "default", "--to", "trec_eval", "--cutoff", "10", "--json")
    assert reconcile(V2, P28, "default", "trec_eval", cutoffs=[10]) == shown
    frames = reconcile(pl.read_csv(V2, schema_overrides={"query_id": pl.String}),
                       pl.concat([pl.read_parquet(p) for p in sorted(P28.glob("*.parquet"))]),
                       "default", profile("trec_eval"), cutoffs=[10])
    assert frames["walk"] == shown["walk"] and frames["lineage"] == shown["lineage"]


def test_a_bad_grade_in_a_dict_is_named_with_its_column_and_row():
    with pytest.raises(InputError) as refused:
        evaluate({"q1": {"a": 1, "b": 2.5}}, {"q1": {"a": 1.0, "b": 0.5}})
    assert refused.value.source == "judgments (dict)"
    assert "'grade'" in str(refused.value) and "row 2" in str(refused.value)
    assert "ndcg-eval-" not in str(refused.value)  # never the temporary file


def test_a_missing_column_of_a_frame_is_named():
    with pytest.raises(InputError) as refused:
        evaluate(pl.DataFrame({"query_id": ["q"], "doc_id": ["d"], "grade": [1]}),
                 {"q": {"d": 1.0}})
    assert refused.value.source == "judgments (polars DataFrame)"
    assert "grade_status" in str(refused.value)


def test_a_flat_dict_is_refused_naming_its_keys():
    with pytest.raises(InputError) as refused:
        evaluate({"q1": {"a": 1}}, {"q1": [("a", 1.0)]})
    assert refused.value.source == "run (dict)" and "'q1'" in str(refused.value)


def test_other_inputs_and_options_are_refused_before_anything_is_read(tmp_path):
    with pytest.raises(InputError, match="expected a path"):
        evaluate(42, {"q": {"d": 1.0}})
    with pytest.raises(InputError, match="no such file"):
        evaluate(tmp_path / "absent.csv", P28)
    with pytest.raises(ApiOptionError, match="engine 'fast'"):
        evaluate(V2, P28, engine="fast")
    with pytest.raises(SpecError, match="neither a profile"):
        evaluate(V2, P28, spec="no-such-profile")
    with pytest.raises(EvaluationError, match="baseline"):
        evaluate(V2, P28).report(baseline="nobody")
    with pytest.raises(EvaluationError, match="ci_level"):
        evaluate(V2, P28).report(ci_level=2)
