"""The trec_eval profile reproduces trec_eval's own test outputs (`ndcg_cut_K`, 4 decimals).

Runs through the CLI (`ndcg-eval score --profile trec_eval`), reading the TREC files as a user
would. Skips with a reason when the conformance data beside the repository is absent.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from evaluation_pipeline.cli.main import main

CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)


def expected_ndcg_cut(out_file: Path) -> dict[tuple[str, int], float]:
    """{(query_id or 'all', K): value} from a `trec_eval -q` output file."""
    expected = {}
    for line in out_file.read_text().splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[0].startswith("ndcg_cut_"):
            expected[(fields[1], int(fields[0].removeprefix("ndcg_cut_")))] = float(fields[2])
    assert expected, f"no ndcg_cut lines in {out_file}"
    return expected


def run_cli(tmp_path, qrels, results, spec_text):
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(spec_text)
    out = tmp_path / "out"
    args = ["score", "--judgments", str(qrels), "--run", str(results), "--format", "trec",
            "--spec", str(spec_file), "--out", str(out)]
    for k in CUTOFFS:
        args += ["--cutoff", str(k)]
    assert main(args) == 0
    return pl.read_parquet(out / "per_query.parquet")


@pytest.mark.parametrize(
    ("qrels", "results", "out_file", "spec_text"),
    [
        ("qrels.test", "results.test", "out.test.aq", "profile: trec_eval\n"),
        ("qrels.rel_level", "results.test", "out.test.aql", "profile: trec_eval\n"),
        # trec_eval -c: queries judged but absent from the run score 0.
        ("qrels.test", "results.trunc", "out.test.aqc",
         "profile: trec_eval\nmissing_from_run: zero\n"),
    ],
    ids=["aq", "aql-graded-negative", "aqc-truncated-complete"],
)
def test_ndcg_cut_matches_trec_eval(conformance_dir, tmp_path, qrels, results, out_file, spec_text):
    expected = expected_ndcg_cut(conformance_dir / out_file)
    rows = run_cli(tmp_path, conformance_dir / qrels, conformance_dir / results, spec_text)

    checked = 0
    for row in rows.iter_rows(named=True):
        key = (row["query_id"], row["cutoff"])
        assert key in expected, f"trec_eval printed no value for {key}"
        assert round(row["ndcg"], 4) == pytest.approx(expected[key], abs=1e-9), key
        checked += 1
    # trec_eval prints a line per evaluated query and cutoff; we must cover each one.
    assert checked == sum(1 for q, _ in expected if q != "all")
    # The mean over rows with a number is trec_eval's `all` (with -c, missing queries count 0).
    means = rows.group_by("cutoff").agg(pl.col("ndcg").mean())
    for k, mean in means.iter_rows():
        assert round(mean, 4) == pytest.approx(expected[("all", k)], abs=1e-9), k
