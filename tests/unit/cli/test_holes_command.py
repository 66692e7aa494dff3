"""``ndcg-eval holes``: the worklist printed or written as a CSV file, its options checked
before anything is written, and the file, graded, landed as a version that narrows the bounds."""

from __future__ import annotations

import shlex

import polars as pl
import pytest

from evaluation_pipeline.analysis.worklist import fill_version
from evaluation_pipeline.cli import help_text
from evaluation_pipeline.cli.holes_command import CSV_SUFFIX
from evaluation_pipeline.cli.main import EXIT_BAD_INPUT, main
from evaluation_pipeline.io.readers import read_judgments
from tests.support.paths import REPO
from tests.support.refusals import assert_names

JUDGMENTS = str(REPO / help_text.JUDGMENTS)
POOL = str(REPO / help_text.POOL)
QUERIES = str(REPO / "examples" / "data" / "queries.csv")
BASE = ["holes", "--judgments", JUDGMENTS, "--run", POOL]


def test_the_help_example_prints_the_first_holes(tmp_path, monkeypatch, capsys):
    (tmp_path / "examples").symlink_to(REPO / "examples")
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(help_text.COMMANDS["holes"][1])
    assert main(argv[1:]) == 0
    lines = capsys.readouterr().out.splitlines()
    # The inputs by name and content hash, as score names them, and the conventions.
    assert lines[0].startswith("judgments maint-v2 (sha256 19d07e57e337), pool pool-2026-11-28 "
                               "(sha256 c86c9da5ccf8), spec ")
    assert lines[1].startswith("conventions: gain 2^g-1, log2 discount")
    assert "NDCG@10" in lines[2] and "3 rankers" in lines[2]
    table = lines[lines.index("") + 1:]
    assert table[0].split()[:3] == ["priority", "query_id", "doc_id"]
    assert [line.split()[0] for line in table[2:]] == ["1", "2", "3", "4", "5"]
    assert list(tmp_path.iterdir()) == [tmp_path / "examples"]  # nothing written


def test_out_writes_the_printed_order_as_a_csv_file(tmp_path, capsys):
    assert main([*BASE, "--queries", QUERIES]) == 0
    lines = capsys.readouterr().out.splitlines()
    # The table's rows: after the blank line, its header and its rule.
    printed = [line.split()[1:3] for line in lines[lines.index("") + 3:]]
    out = tmp_path / "worklist.csv"
    assert main([*BASE, "--queries", QUERIES, "--out", str(out)]) == 0
    assert f"wrote {out}" in capsys.readouterr().out
    written = pl.read_csv(out, infer_schema=False)
    assert [list(pair) for pair in written.select("query_id", "doc_id").rows()] == printed
    assert written.columns == ["priority", "expected_narrowing", "guaranteed_narrowing",
                               "query_id", "query_text", "doc_id", "rankers", "best_position",
                               "bound_width", "grade", "grade_status"]
    assert written["grade"].null_count() == written.height
    assert [p.name for p in tmp_path.iterdir()] == ["worklist.csv"]  # no temporary left


def test_the_spec_options_choose_the_cutoff(capsys):
    assert main([*BASE, "--cutoff", "3", "--budget", "2"]) == 0
    out = capsys.readouterr().out
    assert "NDCG@3" in out and "queries weigh 1 each" in out
    assert main([*BASE, "--profile", "trec_eval", "--budget", "2"]) == 0
    assert "NDCG@10" in capsys.readouterr().out


@pytest.mark.parametrize("options, suffix", [
    (["--budget", "0"], False),
    (["--out", "{tmp}/worklist.txt"], True),  # the one refusal that names the suffix to give
    (["--out", "{tmp}"], False),
    (["--out", JUDGMENTS], False),
])
def test_bad_options_are_refused_before_anything_is_written(tmp_path, capsys, options, suffix):
    options = [o.replace("{tmp}", str(tmp_path)) for o in options]
    before = sorted(tmp_path.iterdir())
    assert main([*BASE, *options]) == EXIT_BAD_INPUT
    wanted = f"*{CSV_SUFFIX}"
    assert_names(capsys.readouterr().err, *options, *[wanted] * suffix,
                 absent=[wanted] * (not suffix))
    assert sorted(tmp_path.iterdir()) == before


def test_a_refused_input_leaves_an_earlier_worklist_as_it_was(tmp_path, capsys):
    out = tmp_path / "worklist.csv"
    out.write_text("earlier\n")
    bad = tmp_path / "bad.csv"
    bad.write_text("query_id,doc_id,grade,grade_status\nq,d,2.5,graded\n")
    assert main(["holes", "--judgments", str(bad), "--run", POOL, "--out", str(out)]) == 2
    assert_names(capsys.readouterr().err, str(bad), "'grade'", rows=[2], row_label="line")
    assert out.read_text() == "earlier\n"


def test_graded_and_landed_the_worklist_narrows_the_bounds(tmp_path, capsys):
    out = tmp_path / "worklist.csv"
    assert main([*BASE, "--queries", QUERIES, "--budget", "6", "--out", str(out)]) == 0
    graded = tmp_path / "graded.csv"
    pl.read_csv(out, infer_schema=False).with_columns(pl.lit("0").alias("grade")).write_csv(
        graded)
    landed = tmp_path / "maint-v3.csv"
    fill_version(read_judgments(JUDGMENTS), read_judgments(graded, version="maint-v3"),
                 "maint-v3").write_csv(landed)
    for judgments, folder in ((JUDGMENTS, "before"), (str(landed), "after")):
        assert main(["score", "--judgments", judgments, "--run", POOL,
                     "--out", str(tmp_path / folder)]) == 0
    capsys.readouterr()
    widths = {}
    for folder in ("before", "after"):
        rows = pl.read_parquet(tmp_path / folder / "per_query.parquet").filter(
            pl.col("cutoff") == 10)
        widths[folder] = ((rows["ndcg_max"] - rows["ndcg_min"]).fill_null(0).sum(),
                          rows["n_holes"].sum())
    assert widths["after"][0] < widths["before"][0]
    assert widths["after"][1] < widths["before"][1]
    # The next worklist lists none of the graded holes.
    assert main(["holes", "--judgments", str(landed), "--run", POOL, "--out",
                 str(tmp_path / "next.csv")]) == 0
    again = pl.read_csv(tmp_path / "next.csv", infer_schema=False)
    done = set(pl.read_csv(out, infer_schema=False).select("query_id", "doc_id").rows())
    assert not done & set(again.select("query_id", "doc_id").rows())
