"""``ndcg-eval judge`` end to end against the test server: the documented command writes a
judgment version that the readers, ``ndcg-eval score`` and ``ndcg-eval agreement`` read; every
fault of the server ends in a clear outcome with nothing half-published; a stopped run, run
again, asks nothing twice; the API key is in no file written and in no output."""

from __future__ import annotations

import logging
import shlex
from pathlib import Path

import polars as pl
import pytest

from evaluation_pipeline import settings
from evaluation_pipeline.cli import help_text
from evaluation_pipeline.cli.main import main
from evaluation_pipeline.io.readers import read_judgments
from evaluation_pipeline.judging.cache import DATABASE
from evaluation_pipeline.judging.prompt import default_template, passage
from schemas.columns import JUDGE_COLUMNS
from tests.support.judge_server import UNPARSEABLE, JudgeServer
from tests.unit.judging.inputs import documents, judge_argv, make_inputs

SECRET = "sk-judge-test-5f1c0ffee0ddba11"
REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def inputs(tmp_path):
    return make_inputs(tmp_path / "inputs")


def leftovers(folder: Path) -> list[str]:
    """Files of ``folder`` that are neither the cache nor an input: what a run published."""
    return sorted(p.name for p in folder.iterdir() if p.name != ".ndcg-eval-judge-cache")


def test_the_output_is_a_judgment_version_with_its_provenance(inputs, tmp_path, capsys):
    out = tmp_path / "out" / "llm-v1.csv"
    with JudgeServer(inputs.grades) as server:
        assert main(judge_argv(inputs, server.base_url, out, "--temperature", "0.2")) == 0
        assert server.calls == 9 and set(server.models) == {"test-model"}
    printed = capsys.readouterr()
    assert "wrote" in printed.out and "9 graded, 0 unknown" in printed.out
    assert "judge: 9/9 pairs (0 from the cache)" in printed.err
    version = read_judgments(out)
    template = default_template()
    assert version["rater"].unique().to_list() == [f"test-model@{template.sha256[:12]}"]
    assert version["rater_kind"].unique().to_list() == ["llm"]
    assert version["judgment_version"].unique().to_list() == ["llm-v1"]
    assert set(JUDGE_COLUMNS) <= set(version.columns)
    assert version["judge_template_sha256"].unique().to_list() == [template.sha256]
    assert version["judge_temperature"].unique().to_list() == ["0.2"]
    truth = {row["doc_id"]: row["grade"] for row in documents()}
    assert {d: g for d, g in version.select("doc_id", "grade").iter_rows()} == {
        d: truth[d] for _, d in inputs.pairs()}
    assert leftovers(out.parent) == ["llm-v1.csv"]


def test_an_unparseable_reply_is_unknown_with_its_reason(inputs, tmp_path):
    out = tmp_path / "llm.csv"
    with JudgeServer(inputs.grades, faults=["unparseable"]) as server:
        assert main(judge_argv(inputs, server.base_url, out, "--concurrency", "1")) == 0
    version = read_judgments(out)
    unknown = version.filter(pl.col("grade_status") == "unknown")
    assert unknown.height == 1 and unknown["grade"].to_list() == [None]
    assert unknown["judge_answer"].to_list() == [UNPARSEABLE]
    assert unknown["judge_reason"].to_list()[0].startswith("no grade in the reply")


def test_the_budgets(inputs, tmp_path, capsys):
    with JudgeServer(inputs.grades) as server:
        argv = judge_argv(inputs, server.base_url, tmp_path / "a.csv")
        argv[argv.index("--budget") + 1] = "4"
        assert main(argv) == 0
        assert read_judgments(tmp_path / "a.csv").height == 4 and server.calls == 4
        # The first four are cached; a token budget of one answer, one at a time, adds one.
        argv = judge_argv(inputs, server.base_url, tmp_path / "b.csv", "--budget-tokens", "1",
                          "--concurrency", "1")
        assert main(argv) == 0
        assert read_judgments(tmp_path / "b.csv").height == 5 and server.calls == 5
    assert "left 4 pairs unjudged" in capsys.readouterr().out


@pytest.mark.parametrize(("faults", "always", "words"), [
    (None, "503", "HTTP 503"),
    (None, "401", "HTTP 401"),
    (None, "truncated", "RemoteProtocolError"),
    (None, "not_json", "a malformed answer"),
    (["500", "429"], "503", "HTTP 503"),
    (None, "429", "HTTP 429"),
])
def test_every_fault_ends_clearly_with_nothing_published(inputs, tmp_path, capsys, faults,
                                                         always, words):
    out = tmp_path / "out" / "llm.csv"
    out.parent.mkdir()
    out.write_text("the version before\n")
    with JudgeServer(inputs.grades, faults=faults, always=always) as server:
        argv = judge_argv(inputs, server.base_url, out, "--retries", "1")
        assert main(argv) == 1
    err = capsys.readouterr().err
    assert "ndcg-eval: error: the judge failed" in err and words in err
    assert f"Nothing was written to {out}" in err
    assert out.read_text() == "the version before\n"
    assert leftovers(out.parent) == ["llm.csv"]  # no temporary file either


def test_the_deadline_ends_the_run_with_nothing_published(inputs, tmp_path, capsys):
    out = tmp_path / "llm.csv"
    with JudgeServer(inputs.grades, always="slow", slow_seconds=2) as server:
        assert main(judge_argv(inputs, server.base_url, out, "--deadline", "0.5")) == 1
    assert "deadline" in capsys.readouterr().err and not out.exists()


def test_a_stopped_run_run_again_asks_nothing_twice(inputs, tmp_path):
    out = tmp_path / "llm.csv"
    # Four answers, then the server refuses every call: the run stops, its answers kept.
    with JudgeServer(inputs.grades, faults=[None] * 4, always="401") as server:
        assert main(judge_argv(inputs, server.base_url, out, "--concurrency", "1")) == 1
        first = dict(server.answered)
    assert sum(first.values()) == 4 and not out.exists()
    with JudgeServer(inputs.grades) as server:
        assert main(judge_argv(inputs, server.base_url, out)) == 0
        again = dict(server.answered)
    assert server.calls == 5 and not set(first) & set(again)
    assert read_judgments(out).height == 9
    # And a third run asks nothing at all.
    with JudgeServer(inputs.grades) as server:
        assert main(judge_argv(inputs, server.base_url, tmp_path / "again.csv")) == 0
        assert server.calls == 0
    assert (tmp_path / "again.csv").read_bytes().replace(b"again", b"llm") == out.read_bytes()


def test_another_model_or_template_is_another_question(inputs, tmp_path):
    template = tmp_path / "short-v1.txt"
    template.write_text("{query}\n{passage}\nReply ##final score: N (0-3).\n")
    with JudgeServer(inputs.grades) as server:
        assert main(judge_argv(inputs, server.base_url, tmp_path / "a.csv")) == 0
        assert main(judge_argv(inputs, server.base_url, tmp_path / "b.csv",
                               "--template", str(template))) == 0
        assert server.calls == 18
    a, b = (read_judgments(tmp_path / name) for name in ("a.csv", "b.csv"))
    assert a["rater"][0] != b["rater"][0]  # so the two versions' content hashes differ


def test_the_api_key_is_in_no_file_and_no_output(inputs, tmp_path, capsys, caplog,
                                                 monkeypatch):
    monkeypatch.setenv(settings.JUDGE_API_KEY.name, SECRET)
    caplog.set_level(logging.DEBUG)
    with JudgeServer(inputs.grades, faults=["429", "500", "truncated", "unparseable"]) as server:
        assert main(judge_argv(inputs, server.base_url, tmp_path / "ok.csv")) == 0
    with JudgeServer(inputs.grades, always="401") as server:
        assert main(judge_argv(inputs, server.base_url, tmp_path / "failed.csv",
                               "--cache", str(tmp_path / "other-cache"))) == 1
    assert set(server.authorizations) == {f"Bearer {SECRET}"}
    printed = capsys.readouterr()
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert tmp_path / ".ndcg-eval-judge-cache" / DATABASE in written
    for path in written:
        assert SECRET.encode() not in path.read_bytes(), path
    for text in (printed.out, printed.err, caplog.text):
        assert SECRET not in text


def test_a_pair_without_text_is_refused_by_name_before_any_call(inputs, tmp_path, capsys):
    documents = pl.read_csv(inputs.documents).with_columns(
        text=pl.when(pl.col("doc_id") == "D12").then(None).otherwise(pl.col("text")))
    documents.filter(pl.col("doc_id") != "D23").write_csv(inputs.documents)
    with JudgeServer(inputs.grades) as server:
        assert main(judge_argv(inputs, server.base_url, tmp_path / "llm.csv")) == 2
        assert server.calls == 0
    err = capsys.readouterr().err
    assert "the document has no text" in err and "'q2/D12'" in err
    assert "the document is not in" in err and "'q3/D23'" in err
    assert str(inputs.worklist) in err and not (tmp_path / "llm.csv").exists()


def test_a_query_without_text_is_refused_by_name(inputs, tmp_path, capsys):
    pl.DataFrame({"query_id": ["q1", "q2", "q3"], "query_text": ["pump seal leak", None, ""]}
                 ).write_csv(inputs.queries)
    with JudgeServer(inputs.grades) as server:
        assert main(judge_argv(inputs, server.base_url, tmp_path / "llm.csv")) == 2
        assert server.calls == 0
    err = capsys.readouterr().err
    assert "the query has no text" in err and "'q2/D11'" in err and "'q3/D21'" in err


@pytest.mark.parametrize(("extra", "words"), [
    (["--budget", "0"], "--budget 0"),
    (["--concurrency", "0"], "--concurrency 0"),
    (["--deadline", "0"], "--deadline 0"),
    (["--temperature", "3"], "--temperature 3"),
    (["--judgment-version", "a b"], "judgment version name 'a b'"),
])
def test_a_bad_option_is_refused_before_anything_is_read(inputs, tmp_path, capsys, extra,
                                                         words):
    argv = judge_argv(inputs, "http://127.0.0.1:9/v1", tmp_path / "llm.csv")
    if extra[0] == "--budget":
        argv[argv.index("--budget") + 1] = extra[1]
        extra = []
    assert main(argv + extra) == 2
    assert words in capsys.readouterr().err


def test_no_budget_no_run(inputs, tmp_path, capsys):
    argv = judge_argv(inputs, "http://127.0.0.1:9/v1", tmp_path / "llm.csv")
    del argv[argv.index("--budget"):argv.index("--budget") + 2]
    assert main(argv) == 2
    assert "give --budget N (pairs) or --budget-tokens T" in capsys.readouterr().err


def _judge_the_example(argv: list[str], worklist: pl.DataFrame) -> pl.DataFrame:
    """Run ``argv`` (the help's example) against a server that grades every pair 2."""
    documents = pl.read_csv("examples/data/documents.csv")
    queries = pl.read_csv("examples/data/queries.csv")
    table = worklist.join(queries, on="query_id").join(documents, on="doc_id")
    grades = {(q, passage(t, x)): 2 for q, t, x in
              table.select("query_text", "title", "text").iter_rows()}
    with JudgeServer(grades) as server:
        argv[argv.index("--judge-url") + 1] = server.base_url
        assert main(argv) == 0
        assert server.calls == worklist.height
    judged = read_judgments("out/judged.csv")
    assert judged.height == worklist.height and judged["grade"].to_list() == [2] * judged.height
    return judged


def test_the_documented_command_on_the_bundled_data(tmp_path, monkeypatch):
    """help's example: a worklist of the bundled data's unjudged candidates, its queries and
    documents tables."""
    (tmp_path / "examples").symlink_to(REPO / "examples")
    monkeypatch.chdir(tmp_path)
    pool = pl.read_parquet(f"{help_text.POOL}/bm25-v3.parquet")
    judged = pl.read_csv(help_text.JUDGMENTS, infer_schema=False)
    holes = pool.join(judged, on=["query_id", "doc_id"], how="anti").sort(
        "query_id", "doc_id").head(6).select("query_id", "doc_id")
    Path("out").mkdir()
    holes.write_csv("out/worklist.csv")
    _judge_the_example(shlex.split(help_text.COMMANDS["judge"][1])[1:], holes)


def test_score_and_agreement_read_the_version(inputs, tmp_path, capsys):
    out = tmp_path / "llm.csv"
    with JudgeServer(inputs.grades, accuracy=0.5) as server:
        assert main(judge_argv(inputs, server.base_url, out)) == 0
    rater = read_judgments(out)["rater"][0]
    spec = tmp_path / "llm.yaml"
    spec.write_text(f"raters: rater:{rater}\n")
    assert main(["score", "--judgments", str(out), "--run", str(inputs.run), "--spec",
                 str(spec), "--out", str(tmp_path / "scored")]) == 0
    assert (tmp_path / "scored" / "per_query.parquet").is_file()
    # People's grades and the judge's in one version: agreement over the pairs both graded.
    people = read_judgments(out).select("query_id", "doc_id").head(5).with_columns(
        grade=pl.lit(1, pl.Int64), grade_status=pl.lit("graded"), rater=pl.lit("alice"),
        rater_kind=pl.lit("human"))
    mixed = pl.concat([people, pl.read_csv(out, infer_schema=False).select(
        "query_id", "doc_id", pl.col("grade").cast(pl.Int64), "grade_status", "rater",
        "rater_kind")]).with_columns(judgment_version=pl.lit("mixed"))
    mixed.write_csv(tmp_path / "mixed.csv")
    capsys.readouterr()
    assert main(["agreement", "--judgments", str(tmp_path / "mixed.csv"), "--json"]) == 0
    assert '"alice"' in capsys.readouterr().out


@pytest.mark.slow
def test_from_the_worklist_of_holes_to_a_scored_version(tmp_path, monkeypatch):
    """holes, judge and score in a row on the bundled data (the worklist's kernels compile
    on a first run: slow)."""
    (tmp_path / "examples").symlink_to(REPO / "examples")
    monkeypatch.chdir(tmp_path)
    assert main(shlex.split(help_text.COMMANDS["holes"][1])[1:] + [
        "--budget", "6", "--out", "out/worklist.csv"]) == 0
    worklist = pl.read_csv("out/worklist.csv")
    judged = _judge_the_example(shlex.split(help_text.COMMANDS["judge"][1])[1:], worklist)
    Path("llm.yaml").write_text(f"raters: rater:{judged['rater'][0]}\n")
    assert main(["score", "--judgments", "out/judged.csv", "--spec", "llm.yaml", "--run",
                 help_text.POOL, "--out", "out/scored"]) == 0
