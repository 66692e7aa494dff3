"""One way to score, in bounded memory: ``auto`` streams Parquet that would not fit the
budget in memory, unsorted inputs go through the external sort under the memory budget, and the
rows and content hashes are the in-memory path's, through the CLI and through the Dagster assets
(the slow cases under ``slow/`` and ``tests/pipeline/slow/``). Results are read back with their
lineage columns read once.

The pool is the bounded ingest's test pool (several shuffled ranker files) under its small
budget (``tests.support.pools.BUDGET``), or ``WHOLE_SORT_BUDGET`` for the streaming
engine's own sorts of an unsorted run. Where a sort must spill (through the Dagster assets, and
the streaming engine with no disk to spill to), the large pool and budget that the bounded
ingest's tests show to spill (``large_pool_folder``, ``SPILL_BUDGET``).
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest

from evaluation_pipeline import settings
from evaluation_pipeline.cli.main import EXIT_BAD_INPUT, main
from evaluation_pipeline.cli.results import read_with_lineage
from evaluation_pipeline.engines import choice, score_files
from evaluation_pipeline.engines.choice import choose_engine, in_memory_peak
from evaluation_pipeline.evaluation import Lineage, LineageError, evaluate
from evaluation_pipeline.ingest.publish import publish_judgments, publish_pool
from evaluation_pipeline.ingest.verify import (
    Verified,
    candidate_set_disagreements,
    verify_published,
)
from evaluation_pipeline.io.budget import Budget
from evaluation_pipeline.io.readers import read_judgments, read_pool
from evaluation_pipeline.io.storage import judgments_file, pool_file, scores_file
from evaluation_pipeline.orchestration.resources import EvaluationStorage
from evaluation_pipeline.orchestration.scoring import ScoringEngine, score_published
from evaluation_pipeline.spec import profile
from schemas.errors import InputError
from tests.support.pools import BUDGET, POOL, VERSION, candidates, land_judgments, shuffled

WHOLE_SORT_BUDGET = Budget.of("160MB")


@pytest.fixture
def inputs(tmp_path):
    """(judgments file, pool folder): three shuffled Parquet ranker files and shuffled
    judgments of 30% of the candidates, none of it in key order."""
    rng = np.random.default_rng(11)
    base = candidates(rng)
    folder = tmp_path / "landing" / "pools" / POOL
    folder.mkdir(parents=True)
    for ranker in ("bm25", "dense", "hybrid"):
        scores = pl.Series("score", np.round(rng.normal(size=base.height), 1))
        shuffled(base.with_columns(scores), rng).write_parquet(folder / f"{ranker}.parquet",
                                                               row_group_size=20_000)
    (folder / "_READY").touch()
    return land_judgments(base, rng, tmp_path, row_group_size=20_000), folder


def test_auto_scores_in_memory_what_fits_the_budget_and_streams_the_rest(inputs, tmp_path,
                                                                         monkeypatch):
    judgments, pool = inputs
    roomy = Budget.of("2GB", tmp_path)
    # 450k rows: the estimate is some 0.41 GB, within 2 GB, above the 160 MB of BUDGET.
    assert 0.35e9 < in_memory_peak(footers(judgments, pool)) < 0.5e9
    assert choose_engine(judgments, pool, budget=roomy) == "local"
    assert choose_engine(judgments, pool, budget=BUDGET) == "streaming"
    monkeypatch.setenv(settings.MEMORY_LIMIT.name, f"{BUDGET.memory_limit}B")
    assert choose_engine(judgments, pool) == "streaming"  # the budget from the environment
    monkeypatch.setattr(choice, "IN_MEMORY_MAX_ROWS", 1000)
    assert choose_engine(judgments, pool, budget=roomy) == "streaming"  # no faster in memory
    # What the streaming engine does not read is scored in memory, whatever the budget.
    assert choose_engine(judgments, pool, run_format="csv", budget=BUDGET) == "local"
    csv = tmp_path / "grades.csv"
    pl.read_parquet(judgments).write_csv(csv)
    assert choose_engine(csv, pool, budget=BUDGET) == "local"
    (pool / "extra.csv").write_text("query_id,doc_id,score\n")
    assert choose_engine(judgments, pool, budget=BUDGET) == "local"  # a CSV run in the folder


def test_the_estimate_follows_the_rows_and_the_lengths_of_the_ids(tmp_path):
    def peak(rows: int, doc_length: int) -> int:
        frame = pl.DataFrame({"query_id": [f"q{i // 10:05d}" for i in range(rows)],
                              "doc_id": [f"{i:0{doc_length}d}" for i in range(rows)],
                              "score": np.linspace(0, 1, rows)})
        frame.write_parquet(tmp_path / "run.parquet")
        return in_memory_peak({"judgments": [],
                               "run": [pq.read_metadata(tmp_path / "run.parquet")]})

    base = choice.IN_MEMORY_BASE_BYTES
    # Per row: the name columns filled in (two views), query_id (view + 6), doc_id, score;
    # ids past polars' 64-byte statistics are measured by their plain-encoded bytes.
    assert peak(1000, 10) - base == pytest.approx(1000 * (2 * 16 + 22 + 26 + 8), rel=0.01)
    assert peak(1000, 110) - base == pytest.approx(1000 * (2 * 16 + 22 + 126 + 8), rel=0.01)
    assert peak(4000, 10) - base == pytest.approx(4 * (peak(1000, 10) - base), rel=0.01)


def footers(judgments, pool) -> dict:
    return {"judgments": [pq.read_metadata(judgments)],
            "run": [pq.read_metadata(path) for path in sorted(pool.glob("*.parquet"))]}


def test_cli_auto_sorts_unsorted_parquet_within_the_budget(inputs, tmp_path, capsys):
    judgments, pool = inputs
    spill = tmp_path / "spill"  # the budget is below the in-memory estimate: auto streams
    args = ["score", "--judgments", str(judgments), "--run", str(pool), "--memory-limit",
            f"{WHOLE_SORT_BUDGET.memory_limit}B", "--spill-dir", str(spill)]
    assert main([*args, "--out", str(tmp_path / "auto")]) == 0
    assert "not sorted" in capsys.readouterr().err  # the external sort ran
    assert list(spill.iterdir()) == []  # and cleaned its spill up
    assert main([*args, "--engine", "local", "--out", str(tmp_path / "local")]) == 0
    auto, local = (json.loads((tmp_path / name / "summary.json").read_text())
                   for name in ("auto", "local"))
    assert (auto.pop("engine"), local.pop("engine")) == ("streaming", "local")
    assert auto == local
    assert ((tmp_path / "auto" / "per_query.parquet").read_bytes()
            == (tmp_path / "local" / "per_query.parquet").read_bytes())
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize("option, value, words", [
    ("--memory-limit", "lots", "memory limit 'lots' is not a size"),
    ("--memory-limit", "1MB", "is below 16MB"),
    ("--spill-dir", "FILE", "is not a writable folder"),
])
def test_budget_options_are_refused_before_anything_is_written(inputs, tmp_path, capsys,
                                                               option, value, words):
    judgments, pool = inputs
    if value == "FILE":
        value = str(tmp_path / "a-file")
        (tmp_path / "a-file").write_text("")
    out = tmp_path / "out"
    assert main(["score", "--judgments", str(judgments), "--run", str(pool), "--out", str(out),
                 option, value]) == EXIT_BAD_INPUT
    assert words in capsys.readouterr().err
    assert not out.exists()


def test_results_read_their_lineage_once_and_equal_the_file(inputs, tmp_path):
    judgments, pool = inputs
    out = tmp_path / "out"
    assert main(["score", "--judgments", str(judgments), "--run", str(pool),
                 "--out", str(out)]) == 0
    file = out / "per_query.parquet"
    rows, lineage = read_with_lineage(file)
    stored = pl.read_parquet(file)
    assert rows.equals(stored) and rows.schema == stored.schema
    assert lineage == Lineage.from_rows(stored, str(file))
    mixed = pl.concat([stored, stored.head(1).with_columns(pl.lit("other").alias("spec_id"))])
    mixed.write_parquet(tmp_path / "mixed.parquet")
    with pytest.raises(LineageError, match=r"mixed.parquet: expected one spec_id, found "):
        read_with_lineage(tmp_path / "mixed.parquet")


def test_published_files_are_checked_again_in_bounded_memory(inputs, tmp_path):
    judgments, pool = inputs
    published = publish_pool(pool, tmp_path / "pool.parquet", budget=BUDGET)
    assert verify_published(published.path, "pool") == Verified(published.sha256,
                                                                published.rows)
    grades = publish_judgments(judgments, tmp_path / "grades.parquet", budget=BUDGET)
    assert verify_published(grades.path, "judgments").sha256 == grades.sha256
    rows = pl.read_parquet(published.path)
    altered = tmp_path / "altered.parquet"
    rows.with_columns(pl.when(pl.int_range(pl.len()) == 7).then(9.5).otherwise("score")
                      .alias("score")).write_parquet(altered)
    assert verify_published(altered, "pool").sha256 != published.sha256
    pl.concat([rows.head(3), rows.slice(2)]).write_parquet(altered)
    with pytest.raises(InputError, match="must be unique"):
        verify_published(altered, "pool")
    rows.reverse().write_parquet(altered, row_group_size=50_000)
    with pytest.raises(InputError, match="not in key order"):
        verify_published(altered, "pool")
    rows.with_columns(pl.lit(float("nan")).alias("score")).write_parquet(altered)
    with pytest.raises(InputError, match="score"):
        verify_published(altered, "pool")
    count, examples = candidate_set_disagreements(published.path, BUDGET)
    assert (count, examples) == (0, [])


def test_an_object_store_is_scored_through_a_local_scratch_folder(inputs, tmp_path):
    judgments, pool = inputs
    storage = EvaluationStorage(base=f"memory://ndcg-scale-{os.getpid()}")
    grades = read_judgments(judgments, version=VERSION).sort("query_id", "doc_id")
    candidates = read_pool(pool, pool=POOL).sort("ranker", "query_id", "doc_id")
    storage.write_parquet(grades, *judgments_file(VERSION))
    storage.write_parquet(candidates, *pool_file(POOL))
    spec = profile("default")
    place = scores_file(POOL, VERSION, spec.spec_id)
    budget = dataclasses.replace(BUDGET, spill_dir=tmp_path / "spill")
    result = score_published(storage, ScoringEngine(), budget, judgments_file(VERSION),
                             pool_file(POOL), place, spec)
    # Under BUDGET's 160 MB, auto streams the copies in the scratch folder.
    assert result.engine == "streaming" and result.per_query_path == str(storage.path(*place))
    expected, lineage = evaluate(grades, candidates, spec)
    assert storage.read_parquet(*place).equals(expected) and result.lineage == lineage
    assert list((tmp_path / "spill").iterdir()) == []


def test_both_engines_write_the_same_bytes_past_a_row_group(tmp_path):
    """120k per-query rows: where polars' own splitting made the in-memory file and the
    streaming sink's differ, so that the budget (through ``auto``) would have changed bytes."""
    queries = np.repeat(np.arange(40_000), 3)
    run = pl.DataFrame({"query_id": [f"q{q:06d}" for q in queries],
                        "doc_id": [f"d{i:07d}" for i in range(queries.size)],
                        "score": np.tile([3.0, 2.0, 1.0], 40_000)})
    run.write_parquet(tmp_path / "run.parquet")
    run.select("query_id", "doc_id", grade=pl.Series(np.tile([1, 0, 2], 40_000)),
               grade_status=pl.lit("graded")).write_parquet(tmp_path / "grades.parquet")
    spec = profile("default").replace(cutoffs=(1, 3, 10))
    for engine in ("local", "streaming"):
        score_files(tmp_path / "grades.parquet", tmp_path / "run.parquet", spec,
                    tmp_path / f"{engine}.parquet", engine=engine, batch_rows=20_000,
                    progress=False)
    assert pq.read_metadata(tmp_path / "local.parquet").num_rows == 120_000
    assert ((tmp_path / "local.parquet").read_bytes()
            == (tmp_path / "streaming.parquet").read_bytes())
