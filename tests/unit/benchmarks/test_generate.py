"""The benchmark's data generator: its size arguments and the files it writes (valid input)."""

from __future__ import annotations

import argparse
import importlib.util

import pytest

from evaluation_pipeline.io.readers import read_candidates, read_judgments
from tests.support.paths import REPO

_spec = importlib.util.spec_from_file_location(
    "bench_generate", REPO / "benchmarks" / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)


@pytest.mark.parametrize("text, rows", [("1M", 1_000_000), ("10m", 10_000_000),
                                        ("2.5M", 2_500_000), ("500k", 500_000),
                                        ("1_000_000", 1_000_000), ("1200", 1200),
                                        ("8.2M", 8_200_000)])
def test_sizes_read_as_the_readme_writes_them(text, rows):
    assert generate.size_rows(text) == rows


@pytest.mark.parametrize("text", ["", "M", "ten", "1G", "0", "-5", "-1M"])
def test_a_bad_size_is_an_argument_error(text):
    with pytest.raises(argparse.ArgumentTypeError, match="not a row count"):
        generate.size_rows(text)


def test_the_command_line_takes_the_readme_sizes(monkeypatch, tmp_path):
    made = []
    monkeypatch.setattr(generate, "generate", lambda rows, *rest: made.append(rows) or
                        generate.data_paths(rows, tmp_path))
    monkeypatch.setattr(generate.pq, "read_metadata", lambda path: type("M", (), {"num_rows": 0}))
    generate.main(["--rows", "1M", "--rows", "500k", "--out", str(tmp_path)])
    assert made == [1_000_000, 500_000]


def test_file_names_tell_sizes_apart(tmp_path):
    assert generate.data_paths(10_000_000, tmp_path)[1].name == "run-10M.parquet"
    assert generate.data_paths(1_500_000, tmp_path)[1].name == "run-1500000.parquet"
    assert generate.data_paths(1_000_000, tmp_path) != generate.data_paths(1_500_000, tmp_path)


def test_generated_files_are_valid_input_with_what_the_benchmark_needs(tmp_path):
    judgments_path, run_path = generate.generate(20_000, 100, 7, tmp_path)
    judgments = read_judgments(judgments_path)
    run = read_candidates(run_path)
    assert run.height == 20_000
    assert set(judgments["grade_status"].unique()) == {"graded", "unknown"}
    joined = run.join(judgments, on=["query_id", "doc_id"], how="left")
    assert joined["grade_status"].null_count() > 0  # unjudged candidates
    assert joined.group_by("query_id", "score").len()["len"].max() > 1  # exact score ties
