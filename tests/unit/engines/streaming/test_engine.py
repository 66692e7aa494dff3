"""The streaming engine equals the in-memory engine exactly, batch size aside."""

from __future__ import annotations

import shutil
import threading

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from evaluation_pipeline.engines import score_files
from evaluation_pipeline.engines.streaming import stream as streaming
from evaluation_pipeline.metric.ndcg import score_candidates
from evaluation_pipeline.spec import profile
from schemas import InputError
from tests.support.paths import EXAMPLES

JUDGMENTS = EXAMPLES / "landing" / "judgments" / "maint-v2.csv"
POOL = EXAMPLES / "landing" / "pools" / "pool-2026-11-28"


@pytest.fixture
def inputs(tmp_path):
    """The example version and pool as sorted Parquet (as a ranker and a version publish them)."""
    judgments = pl.read_csv(JUDGMENTS, schema_overrides={"grade": pl.Int64})
    judgments_path = tmp_path / "maint-v2.parquet"
    judgments.sort("query_id", "doc_id").write_parquet(judgments_path)
    pool = tmp_path / "pool-2026-11-28"
    pool.mkdir()
    for run in sorted(POOL.glob("*.parquet")):
        frame = pl.read_parquet(run).sort("ranker", "query_id", pl.col("score"),
                                          descending=[False, False, True])
        frame.write_parquet(pool / run.name)
    return judgments_path, pool


def _both(judgments, run, tmp_path, spec, batch_rows=7):
    local = score_files(judgments, run, spec, tmp_path / "local.parquet", engine="local")
    streamed = score_files(judgments, run, spec, tmp_path / "stream.parquet",
                           engine="streaming", batch_rows=batch_rows, progress=False)
    return local, streamed, pl.read_parquet(local.per_query_path), pl.read_parquet(
        streamed.per_query_path)


# A spec's other measures come from the same scoring of each batch's whole queries.
TREC_DL = profile("trec_eval").replace(
    measures=["nDCG@10", "RR(rel=2)@10", "AP(rel=2)@100", "R@100", "P(rel=2)@10", "Bpref",
              "Judged@10"], unjudged="exclude", unknown="incomplete")


@pytest.mark.parametrize("name", ["default", "trec_eval", "sklearn", "lightgbm", "measures"])
def test_tiny_batches_equal_in_memory(inputs, tmp_path, name):
    # 7-row batches: every query (15 to 21 candidates) straddles two or more batch boundaries.
    per_query = pl.concat([pl.read_parquet(p) for p in inputs[1].glob("*.parquet")]).group_by(
        "ranker", "query_id").len()["len"]
    assert per_query.min() > 7
    local, streamed, a, b = _both(*inputs, tmp_path,
                                  TREC_DL if name == "measures" else profile(name))
    if name == "measures":
        assert a["measure"].n_unique() == 7 and a.height == 7 * a.select(
            "ranker", "query_id").n_unique()
    assert a.height > 100
    # The bounds over the holes come out alike too, with the version's scale in every window.
    assert (a["n_holes"] > 0).any() and (a["ndcg_max"] > a["ndcg_min"]).any()
    assert_frame_equal(a, b)
    assert streamed.lineage == local.lineage  # the hashes on the stream are the whole-file ones
    assert streamed.notes == []


def test_unsorted_run_falls_back_to_an_external_sort(inputs, tmp_path, capsys):
    judgments, pool = inputs
    for run in pool.glob("*.parquet"):
        pl.read_parquet(run).sample(fraction=1.0, shuffle=True, seed=3).write_parquet(run)
    local, streamed, a, b = _both(judgments, pool, tmp_path, profile("default"), batch_rows=5)
    assert_frame_equal(a, b)
    assert streamed.lineage == local.lineage
    assert any("not sorted" in note for note in streamed.notes)
    assert "external sort" in capsys.readouterr().err


def test_ties_by_rank_survive_the_external_sort(inputs, tmp_path):
    # The sort keeps each row's rank: the tie order is the run's, wherever the rows moved.
    judgments, pool = inputs
    for run in pool.glob("*.parquet"):
        pl.read_parquet(run).sample(fraction=1.0, shuffle=True, seed=5).write_parquet(run)
    local, streamed, a, b = _both(judgments, pool, tmp_path, profile("lightgbm"), batch_rows=5)
    assert_frame_equal(a, b)
    assert any("not sorted" in note for note in streamed.notes)


def test_a_repeated_rank_is_named_with_its_file_rows(inputs, tmp_path):
    judgments, pool = inputs
    run = pool / "dense-v2.parquet"
    pl.read_parquet(run).with_columns(
        pl.when(pl.int_range(pl.len()) == 3).then(1).otherwise("rank").alias("rank")
    ).write_parquet(run)
    with pytest.raises(InputError) as caught:
        _both(judgments, pool, tmp_path, profile("lightgbm"), batch_rows=7)
    assert "(ranker, query_id, rank) must be unique" in str(caught.value)
    assert "[2 rows: row 1 ('dense-v2 " in str(caught.value)


def test_bad_run_row_is_named_with_its_file_row(inputs, tmp_path):
    judgments, pool = inputs
    run = pool / "dense-v2.parquet"
    frame = pl.read_parquet(run)
    frame = frame.with_columns(
        pl.when(pl.int_range(pl.len()) == 40).then(float("nan")).otherwise("score").alias("score"))
    frame.write_parquet(run)
    with pytest.raises(InputError) as caught:
        score_files(judgments, pool, profile("default"), tmp_path / "out.parquet",
                    engine="streaming", batch_rows=16, progress=False)
    text = str(caught.value)
    assert "score" in text and "41 ('NaN')" in text  # the row's number in the file
    assert not (tmp_path / "out.parquet").exists()


def test_duplicate_candidate_across_batches_is_refused(inputs, tmp_path):
    judgments, pool = inputs
    run = pool / "bm25-v3.parquet"
    frame = pl.read_parquet(run)
    pl.concat([frame.head(3), frame.slice(2, 1), frame.slice(3)]).write_parquet(run)
    with pytest.raises(InputError, match="unique"):
        score_files(judgments, pool, profile("default"), tmp_path / "out.parquet",
                    engine="streaming", batch_rows=2, progress=False)


@pytest.mark.parametrize("batch_rows", [2, 16])
def test_no_stage_thread_outlives_a_refused_run(inputs, tmp_path, batch_rows):
    # Every stage reads the one before it on a thread of its own; a run refused midway must
    # stop them all (a long-lived process such as a Dagster code server would keep them).
    judgments, pool = inputs
    run = pool / "dense-v2.parquet"
    frame = pl.read_parquet(run)
    frame.with_columns(pl.when(pl.int_range(pl.len()) == 40).then(float("nan"))
                       .otherwise("score").alias("score")).write_parquet(run)
    with pytest.raises(InputError) as caught:
        score_files(judgments, pool, profile("default"), tmp_path / "out.parquet",
                    engine="streaming", batch_rows=batch_rows, progress=False)
    _assert_no_stage_threads(caught)


def test_no_stage_thread_outlives_a_failure_in_the_kernel_stage(inputs, tmp_path, monkeypatch):
    # The last stage fails while the others are still reading ahead.
    calls = []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("scoring failed")
        return score_candidates(*args, **kwargs)

    monkeypatch.setattr(streaming, "score_candidates", failing)
    with pytest.raises(RuntimeError, match="scoring failed") as caught:
        score_files(*inputs, profile("default"), tmp_path / "out.parquet", engine="streaming",
                    batch_rows=4, progress=False)
    _assert_no_stage_threads(caught)


def _assert_no_stage_threads(caught) -> None:
    # ``caught`` holds the traceback, and with it every frame of the failed run, as an error
    # report would: the threads must stop without waiting for those frames to be collected.
    assert caught.value is not None
    for thread in threading.enumerate():
        if thread.name == "ndcg-read-ahead":
            thread.join(timeout=5)
            assert not thread.is_alive(), "a streaming stage thread is still running"


@pytest.mark.parametrize("shuffled", [False, True])
def test_file_names_with_pattern_characters_are_read_as_names(inputs, tmp_path, shuffled):
    # "[", "*" and "?" are legal in file names; a scan must not expand them as a pattern
    # (neither the batch reader nor the external sort of an unsorted run).
    judgments, pool = inputs
    odd = tmp_path / "runs[*?]" / pool.name
    odd.mkdir(parents=True)
    for run in pool.glob("*.parquet"):
        frame = pl.read_parquet(run)
        if shuffled:
            frame = frame.sample(fraction=1.0, shuffle=True, seed=5)
        frame.write_parquet(odd / run.name.replace("-", "[*?]"))
    local, streamed, a, b = _both(judgments, odd, tmp_path, profile("default"), batch_rows=9)
    assert_frame_equal(a, b)
    assert streamed.lineage == local.lineage


def test_a_name_that_changes_between_batches_is_refused(inputs, tmp_path):
    # Each batch alone holds one safe name, so only the stream can see the input hold two.
    judgments, pool = inputs
    frame = pl.read_parquet(judgments)
    first_query = frame["query_id"][0]  # the file is sorted by query: a prefix of whole ones
    frame.with_columns(pl.when(pl.col("query_id") == first_query).then(pl.lit("maint-v2"))
                       .otherwise(pl.lit("maint-v3")).alias("judgment_version")
                       ).write_parquet(judgments)
    with pytest.raises(InputError, match="one judgment version per input: found 'maint-v2' "
                                         "and 'maint-v3'"):
        score_files(judgments, pool, profile("default"), tmp_path / "out.parquet",
                    engine="streaming", batch_rows=10, progress=False)
    assert not (tmp_path / "out.parquet").exists()

    judgments_ok = tmp_path / "ok.parquet"
    frame.write_parquet(judgments_ok)
    first, *rest = sorted(pool.glob("*.parquet"))
    pl.read_parquet(first).with_columns(pl.lit("another-pool").alias("candidate_pool")
                                        ).write_parquet(first)
    # A run file naming another pool than its folder is refused before the stream, by the
    # local engine's own rule (every engine alike).
    with pytest.raises(InputError, match="different candidate pool"):
        score_files(judgments_ok, pool, profile("default"), tmp_path / "out.parquet",
                    engine="streaming", batch_rows=50, progress=False)
    assert not (tmp_path / "out.parquet").exists()


def test_a_run_that_starts_late_holds_one_window_of_judgments(inputs, tmp_path, monkeypatch):
    # The run returns only the last fifth of the judged queries: the judgments before them are
    # written as missing, a batch at a time, not held in the first batch's window.
    judgments, pool = inputs
    grades = pl.read_parquet(judgments)
    queries = grades["query_id"].unique().sort()
    late = queries[int(len(queries) * 0.8):]
    for run in pool.glob("*.parquet"):
        pl.read_parquet(run).filter(pl.col("query_id").is_in(late.implode())).write_parquet(run)
    held = []
    real = streaming.index_judgments
    monkeypatch.setattr(streaming, "index_judgments",
                        lambda frame, spec, **scale: held.append(frame.height)
                        or real(frame, spec, **scale))
    local, streamed, a, b = _both(judgments, pool, tmp_path, profile("trec_eval"), batch_rows=7)
    assert_frame_equal(a, b)
    assert streamed.lineage == local.lineage
    assert (a["status"] == "missing_from_run").sum() > 0
    assert max(held) < grades.height / 4


@pytest.mark.parametrize(("which", "column"), [("run", "score"), ("judgments", "grade")])
def test_a_missing_column_is_named(inputs, tmp_path, which, column):
    # Only the name columns may be left out (the flags or the file's path give them).
    judgments, pool = inputs
    path = judgments if which == "judgments" else sorted(pool.glob("*.parquet"))[0]
    pl.read_parquet(path).drop(column).write_parquet(path)
    with pytest.raises(InputError, match=f"column '{column}': required column is missing"):
        score_files(judgments, pool, profile("default"), tmp_path / "out.parquet",
                    engine="streaming", batch_rows=50, progress=False)
    assert not (tmp_path / "out.parquet").exists()


def test_csv_judgments_are_read_by_the_local_reader_and_streamed(tmp_path):
    """A judgment version is small: the streaming engine reads a CSV or TREC one whole, with
    the local engine's checks, and gives the local engine's rows to the bit."""
    judgments = EXAMPLES / "landing" / "judgments" / "maint-v2.csv"
    run = EXAMPLES / "landing" / "pools" / "pool-2026-11-28"
    spec = profile("trec_eval")
    streamed = score_files(judgments, run, spec, tmp_path / "s.parquet", engine="streaming",
                           batch_rows=50, progress=False)
    local = score_files(judgments, run, spec, tmp_path / "l.parquet", engine="local")
    assert streamed.lineage == local.lineage
    assert_frame_equal(pl.read_parquet(tmp_path / "s.parquet"),
                       pl.read_parquet(tmp_path / "l.parquet"))


@pytest.mark.parametrize("engine", ["auto", "local", "streaming"])
def test_a_missing_input_is_named_as_missing(tmp_path, engine):
    run = EXAMPLES / "landing" / "pools" / "pool-2026-11-28"
    with pytest.raises(InputError, match="no such file or folder") as raised:
        score_files(tmp_path / "v2.parquet", run, profile("default"), tmp_path / "o.parquet",
                    engine=engine)
    assert str(tmp_path / "v2.parquet") in str(raised.value)
    with pytest.raises(InputError, match="no such file or folder"):
        score_files(EXAMPLES / "landing" / "judgments" / "maint-v2.csv", tmp_path / "p28",
                    profile("default"), tmp_path / "o.parquet", engine=engine)


@pytest.mark.parametrize("engine", ["local", "streaming"])
@pytest.mark.parametrize("empty", ["ranker", "judgments"])
def test_a_file_without_rows_is_refused_by_every_engine(tmp_path, engine, empty):
    """The streaming engine left an empty ranker file's ranker out, and called every query
    not judged under an empty judgments file; it refuses both, as the local engine does."""
    from evaluation_pipeline.io.readers import read_judgments

    pool = tmp_path / "pool-2026-11-28"
    shutil.copytree(EXAMPLES / "landing" / "pools" / "pool-2026-11-28", pool)
    judgments = tmp_path / "v2.parquet"
    frame = read_judgments(EXAMPLES / "landing" / "judgments" / "maint-v2.csv").sort(
        "query_id", "doc_id")
    if empty == "judgments":
        frame = frame.head(0)
    frame.write_parquet(judgments)
    bad = judgments
    if empty == "ranker":
        bad = sorted(pool.glob("*.parquet"))[0]
        pl.read_parquet(bad).head(0).write_parquet(bad)
    with pytest.raises(InputError, match="no rows") as raised:
        score_files(judgments, pool, profile("default"), tmp_path / "o.parquet", engine=engine)
    assert str(bad) in str(raised.value)
