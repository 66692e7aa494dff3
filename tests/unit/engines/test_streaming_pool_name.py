"""Every engine that runs here refuses a run naming another pool (or version) than the one
asked for with the local engine's error: the same class, file, column, rule and rows.

A pool folder ``otherpool`` whose run file says ``candidate_pool=bigpool`` was refused by
``--engine local`` and ``auto`` and scored by ``--engine streaming``, labelled ``bigpool``.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from evaluation_pipeline.cli.main import main
from evaluation_pipeline.engines import score_files
from evaluation_pipeline.spec import profile
from schemas.errors import InputError

ENGINES = ("local", "streaming", "auto")  # spark is optional, and not run here


def judgments_file(folder: Path, version: str = "maint-v2") -> Path:
    path = folder / "judgments.parquet"
    pl.DataFrame({
        "query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "c"], "grade": [2, 0, 1],
        "grade_status": ["graded"] * 3, "judgment_version": [version] * 3,
    }).write_parquet(path)
    return path


def run_file(folder: Path, pool: str, *, statistics: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "bm25.parquet"
    pl.DataFrame({
        "candidate_pool": [pool] * 3, "ranker": ["bm25"] * 3, "query_id": ["q1", "q1", "q2"],
        "doc_id": ["a", "b", "c"], "score": [2.0, 1.0, 3.0],
    }).write_parquet(path, statistics=statistics)
    return path


def refusal(engine: str, judgments: Path, run: Path, out: Path, **names) -> InputError:
    with pytest.raises(InputError) as refused:
        score_files(judgments, run, profile("default"), out, engine=engine, progress=False,
                    **names)
    assert not out.exists()
    return refused.value


def fields(error: InputError) -> tuple:
    """What a refusal names: the file, and each violation's column, rule, rows and values."""
    return error.source, error.row_label, [
        (v.column, v.rule, v.rows, v.examples, v.count) for v in error.violations]


@pytest.mark.parametrize("statistics", [True, False], ids=["footer", "rows"])
def test_a_pool_folder_whose_file_names_another_pool_is_refused_alike(tmp_path, statistics):
    judgments = judgments_file(tmp_path)
    run = run_file(tmp_path / "otherpool", "bigpool", statistics=statistics)
    refused = {engine: refusal(engine, judgments, run.parent, tmp_path / engine / "pq.parquet")
               for engine in ENGINES}
    local = refused["local"]
    assert local.source == str(run)
    assert [(v.column, v.rows) for v in local.violations] == [("candidate_pool", (1, 2, 3))]
    assert "'otherpool'" in local.violations[0].rule
    for engine in ENGINES:
        assert fields(refused[engine]) == fields(local), engine


def test_a_run_naming_another_pool_than_the_flag_is_refused_alike(tmp_path):
    judgments = judgments_file(tmp_path)
    run = run_file(tmp_path / "bigpool", "bigpool")
    refused = {engine: refusal(engine, judgments, run, tmp_path / engine / "pq.parquet",
                               pool="otherpool") for engine in ENGINES}
    assert refused["local"].violations[0].column == "candidate_pool"
    for engine in ENGINES:
        assert fields(refused[engine]) == fields(refused["local"]), engine


def test_a_version_naming_another_than_the_flag_is_refused_alike(tmp_path):
    judgments = judgments_file(tmp_path, version="maint-v3")
    run = run_file(tmp_path / "pool", "pool")
    refused = {engine: refusal(engine, judgments, run.parent, tmp_path / engine / "pq.parquet",
                               judgment_version="maint-v2") for engine in ENGINES}
    assert refused["local"].source == str(judgments)
    assert refused["local"].violations[0].column == "judgment_version"
    for engine in ENGINES:
        assert fields(refused[engine]) == fields(refused["local"]), engine


def test_the_matching_names_still_score_and_label_the_pool(tmp_path):
    judgments = judgments_file(tmp_path)
    run = run_file(tmp_path / "bigpool", "bigpool", statistics=False)
    for engine in ENGINES:
        result = score_files(judgments, run.parent, profile("default"),
                             tmp_path / engine / "pq.parquet", engine=engine, progress=False,
                             judgment_version="maint-v2")
        assert result.lineage.candidate_pool == "bigpool", engine


@pytest.mark.parametrize("engine", ENGINES)
def test_the_command_exits_2_and_writes_nothing(tmp_path, capsys, engine):
    judgments = judgments_file(tmp_path)
    run = run_file(tmp_path / "otherpool", "bigpool")
    out = tmp_path / "out"
    code = main(["score", "--judgments", str(judgments), "--run", str(run.parent), "--out",
                 str(out), "--engine", engine])
    assert code == 2
    assert not out.exists()
    message = capsys.readouterr().err
    assert str(run) in message and "column 'candidate_pool'" in message
