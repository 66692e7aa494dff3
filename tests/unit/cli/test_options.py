"""Options a user gets wrong: a clear message, exit status 2, and nothing written.

Under ``score --report`` the report options are checked before per_query.parquet and
summary.json are written, so a refused option leaves --out absent, or as it was.
"""

from __future__ import annotations

import hashlib
import shutil

import polars as pl
import pytest

from evaluation_pipeline.cli.main import EXIT_BAD_INPUT, main
from tests.support.paths import EXAMPLES
from tests.support.refusals import assert_names

LANDING = EXAMPLES / "landing"
V1, V2 = LANDING / "judgments" / "maint-v1.csv", LANDING / "judgments" / "maint-v2.csv"
P28, P29 = LANDING / "pools" / "pool-2026-11-28", LANDING / "pools" / "pool-2026-11-29"
QUERIES = EXAMPLES / "queries.csv"
RANKERS = ["'bm25-v3'", "'dense-v2'", "'hybrid-v1'"]
FAST = ["--bootstrap", "200"]

# (extra score arguments, what stderr names: the option, the value refused, what may be given)
REPORT_OPTION_ERRORS = {
    "ci-level above 1": (["--ci-level", "1.5"], ["ci_level", "1.5"]),
    "ci-level of 0": (["--ci-level", "0"], ["ci_level", "0.0"]),
    "no resamples": (["--bootstrap", "0"], ["n_bootstrap", "0"]),
    "missing slice column": (["--queries", str(QUERIES), "--slice", "site", *FAST], ["['site']"]),
    "unknown baseline": (["--baseline", "bm25-v4", *FAST], ["'bm25-v4'", *RANKERS]),
}


def contents(folder) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def refused(argv: list[str], capsys) -> str:
    """stderr of a command that must exit 2 without a traceback, printing nothing else."""
    assert main(argv) == EXIT_BAD_INPUT
    printed = capsys.readouterr()
    assert printed.out == ""
    # The CLI's error line starts as docs/cli.md shows it: scripts and readers look for it.
    assert printed.err.startswith("ndcg-eval: error: ") and "Traceback" not in printed.err
    return printed.err


@pytest.mark.parametrize("extra, names", REPORT_OPTION_ERRORS.values(),
                         ids=REPORT_OPTION_ERRORS.keys())
def test_score_report_refuses_an_option_before_writing_anything(tmp_path, capsys, extra, names):
    out = tmp_path / "out"
    err = refused(["score", "--judgments", str(V2), "--run", str(P28), "--out", str(out),
                   "--report", *extra], capsys)
    assert_names(err, *names)
    assert not out.exists()


@pytest.mark.parametrize("extra, names", [REPORT_OPTION_ERRORS["unknown baseline"],
                                          REPORT_OPTION_ERRORS["missing slice column"]],
                         ids=["unknown baseline", "missing slice column"])
def test_a_refused_option_leaves_an_earlier_result_as_it_was(tmp_path, capsys, extra, names):
    out = tmp_path / "out"
    assert main(["score", "--judgments", str(V1), "--run", str(P28), "--out", str(out)]) == 0
    before = contents(out)
    capsys.readouterr()
    err = refused(["score", "--judgments", str(V2), "--run", str(P28), "--out", str(out),
                   "--report", *extra], capsys)
    assert_names(err, *names)
    assert contents(out) == before


@pytest.mark.parametrize("extra, names", [REPORT_OPTION_ERRORS["ci-level above 1"],
                                          REPORT_OPTION_ERRORS["missing slice column"]],
                         ids=["ci-level above 1", "missing slice column"])
def test_the_streaming_engine_refuses_report_options_before_scoring(tmp_path, capsys, extra,
                                                                    names):
    judgments = tmp_path / "maint-v2.parquet"
    pl.read_csv(V2, schema_overrides={"grade": pl.Int64}).write_parquet(judgments)
    out = tmp_path / "out"
    err = refused(["score", "--judgments", str(judgments), "--run", str(P28 / "bm25-v3.parquet"),
                   "--engine", "streaming", "--out", str(out), "--report", *extra], capsys)
    assert_names(err, *names)
    assert not out.exists()


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    out = tmp_path_factory.mktemp("scored") / "s"
    assert main(["score", "--judgments", str(V2), "--run", str(P28), "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize("extra, names", [
    (["--ci-level", "1.5"], ["ci_level", "1.5"]),
    (["--queries", str(QUERIES), "--slice", "site"], ["['site']"]),
    (["--baseline", "bm25-v4"], ["'bm25-v4'", *RANKERS]),
], ids=["ci-level", "slice", "baseline"])
def test_report_refuses_an_option_before_writing_anything(scored, tmp_path, capsys, extra,
                                                          names):
    out = tmp_path / "report"
    err = refused(["report", str(scored), "--out", str(out), *FAST, *extra], capsys)
    assert_names(err, *names)
    assert not out.exists()


def test_compare_refuses_an_unknown_baseline(scored, capsys):
    err = refused(["compare", str(scored), "--baseline", "bm25-v4", *FAST], capsys)
    assert_names(err, "'bm25-v4'", *RANKERS)


def test_compare_refuses_a_pool_diff_over_two_judgment_version_names(tmp_path, capsys):
    # The same grades under two names: one content hash, so the results count as one version
    # for the comparison, but a pool diff needs a single version name to report under.
    grades = pl.read_csv(V2, infer_schema=False).drop("judgment_version")
    for name in ("a", "b"):
        grades.write_csv(tmp_path / f"{name}.csv")
    for name, pool in (("a", P28), ("b", P29)):
        assert main(["score", "--judgments", str(tmp_path / f"{name}.csv"), "--run", str(pool),
                     "--out", str(tmp_path / name)]) == 0
    capsys.readouterr()
    err = refused(["compare", str(tmp_path / "a"), str(tmp_path / "b"),
                   "--pools", str(P28), str(P29), *FAST], capsys)
    assert_names(err, "'a'", "'b'")  # the two judgment version names


def test_compare_refuses_a_judgment_diff_over_two_pool_names(tmp_path, capsys):
    # The same candidates in two folders, without a pool column: one content hash, two names.
    for name in ("x", "y"):
        shutil.copytree(P28, tmp_path / name)
        for run in (tmp_path / name).glob("*.parquet"):
            pl.read_parquet(run).drop("candidate_pool").write_parquet(run)
    for judgments, pool in ((V1, "x"), (V2, "y")):
        assert main(["score", "--judgments", str(judgments), "--run", str(tmp_path / pool),
                     "--out", str(tmp_path / f"out-{pool}")]) == 0
    capsys.readouterr()
    err = refused(["compare", str(tmp_path / "out-x"), str(tmp_path / "out-y")], capsys)
    assert_names(err, "'x'", "'y'")  # the two candidate pool names
