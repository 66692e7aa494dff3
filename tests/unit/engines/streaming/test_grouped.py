"""A run grouped by query but not sorted is streamed without a sort, to the same bytes."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation_pipeline.engines import score_files
from evaluation_pipeline.engines.streaming import grouped_digest, grouping
from evaluation_pipeline.engines.streaming.grouped_digest import GroupedDigest
from evaluation_pipeline.engines.streaming.grouping import GROUPED_NOTE, detect
from evaluation_pipeline.metric import hashing
from evaluation_pipeline.spec import EvaluationSpec, profile
from schemas import InputError

RANKERS = ("bm25", "dense", "hybrid")


def _number(column: str = "query_id") -> pl.Expr:
    return pl.col(column).str.slice(1).cast(pl.Int64)


def _data(seed: int = 0, queries: int = 40) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(judgments, run) sorted by key: several rankers, ties on a coarse score grid, unknown
    grades, unjudged candidates, queries not judged, and judged queries missing from the run
    (q2 before q10 in numeric order, after it in byte order)."""
    rng = np.random.default_rng(seed)
    rows = []
    for r, ranker in enumerate(RANKERS):
        for q in range(queries):
            if (q + r) % 9 == 4:  # this ranker skips the query
                continue
            for d in range(int(rng.integers(3, 12))):
                rows.append((ranker, f"q{q}", f"d{q}-{d}", float(rng.integers(0, 4)) / 2))
    run = pl.DataFrame(rows, schema=["ranker", "query_id", "doc_id", "score"], orient="row")
    run = run.with_columns(candidate_pool=pl.lit("pool-a"))
    judged = [(f"q{q}", f"d{q}-{d}", int(rng.integers(0, 4)), rng.random() < 0.1)
              for q in range(queries + 5) if q % 7 != 3 for d in range(8) if rng.random() < 0.7]
    judgments = pl.DataFrame(judged, schema=["query_id", "doc_id", "grade", "unknown"],
                             orient="row")
    judgments = judgments.select(
        "query_id", "doc_id",
        pl.when(pl.col("unknown")).then(None).otherwise("grade").cast(pl.Int64).alias("grade"),
        pl.when(pl.col("unknown")).then(pl.lit("unknown")).otherwise(pl.lit("graded"))
        .alias("grade_status"),
        judgment_version=pl.lit("v1"))
    return judgments.sort("query_id", "doc_id"), run.sort("ranker", "query_id", "doc_id")


def _grouped(frame: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Each key group's rows together, the queries in numeric order, rows shuffled within."""
    shuffled = frame.sample(fraction=1.0, shuffle=True, seed=11)
    return shuffled.sort([*by[:-2], _number()], maintain_order=True)


def _write(tmp_path, name: str, judgments: pl.DataFrame, run: pl.DataFrame, split: bool):
    folder = tmp_path / name / "pool-a"
    folder.mkdir(parents=True)
    if split:  # one file per ranker, as a pool folder lands
        for (ranker,), part in run.group_by("ranker", maintain_order=True):
            part.write_parquet(folder / f"{ranker}.parquet")
    else:
        run.write_parquet(folder / "run.parquet")
    judgments.write_parquet(tmp_path / name / "judgments.parquet")
    return tmp_path / name / "judgments.parquet", folder


def _spec(name: str) -> EvaluationSpec:
    # all_judged: the pool's unjudged documents are counted over every ranker first.
    return EvaluationSpec(ideal="all_judged") if name == "all_judged" else profile(name)


def _score(judgments, run, engine, out, spec="default", batch_rows=7):
    return score_files(judgments, run, _spec(spec), out, engine=engine,
                       batch_rows=batch_rows, progress=False)


@pytest.mark.parametrize(("spec", "split"), [("default", False), ("trec_eval", True),
                                             ("lightgbm", True), ("all_judged", True)])
def test_grouped_sorted_and_shuffled_write_the_same_bytes(tmp_path, spec, split):
    judgments, run = _data()
    if spec == "lightgbm":  # ties by rank: the ranker's own order, kept wherever rows move
        run = run.with_columns(rank=pl.int_range(1, pl.len() + 1).over("ranker", "query_id"))
    inputs = {
        "sorted": (judgments, run),
        # The judgments in the run's order, and in byte order beside a grouped run.
        "grouped": (_grouped(judgments, ["query_id", "doc_id"]),
                    _grouped(run, ["ranker", "query_id", "doc_id"])),
        "grouped-run": (judgments, _grouped(run, ["ranker", "query_id", "doc_id"])),
        "shuffled": (judgments.sample(fraction=1.0, shuffle=True, seed=2),
                     run.sample(fraction=1.0, shuffle=True, seed=3)),
    }
    reference = None
    for name, (j, r) in inputs.items():
        paths = _write(tmp_path, name, j, r, split)
        for engine in ("local", "streaming"):
            out = tmp_path / f"{name}-{engine}.parquet"
            result = _score(*paths, engine, out, spec, batch_rows=40)  # some 20 batches
            reference = reference or out.read_bytes()
            assert out.read_bytes() == reference, (name, engine)
            if engine == "streaming":
                assert (GROUPED_NOTE in result.notes) == name.startswith("grouped"), name
    scores = pl.read_parquet(tmp_path / "sorted-local.parquet")
    # The data reaches every case: missing from the run, not judged, holes.
    assert {"missing_from_run", "not_judged"} <= set(scores["status"])
    assert scores["ranker"].n_unique() == 3 and (scores["n_unknown"] > 0).any()


def test_queries_cross_batch_boundaries_on_the_grouped_path(tmp_path):
    judgments, run = _data(seed=4, queries=20)
    paths = _write(tmp_path, "g", _grouped(judgments, ["query_id", "doc_id"]),
                   _grouped(run, ["ranker", "query_id", "doc_id"]), split=False)
    outs = []
    for batch_rows in (2, 64, 100_000):
        outs.append(tmp_path / f"out-{batch_rows}.parquet")
        assert GROUPED_NOTE in _score(*paths, "streaming", outs[-1], batch_rows=batch_rows).notes
    _score(*_write(tmp_path, "s", judgments, run, split=False), "streaming",
           tmp_path / "sorted.parquet")
    assert {p.read_bytes() for p in outs} == {(tmp_path / "sorted.parquet").read_bytes()}


def _keys(frame: pl.DataFrame, tmp_path, batch_rows=3, keys=("ranker", "query_id")):
    path = tmp_path / "keys.parquet"
    frame.write_parquet(path)
    return detect([path], list(keys), {}, batch_rows)


def test_detection_tells_sorted_grouped_and_split_apart(tmp_path):
    _, run = _data(queries=12)
    assert _keys(run, tmp_path).is_sorted
    grouped = _keys(_grouped(run, ["ranker", "query_id", "doc_id"]), tmp_path)
    assert grouped is not None and not grouped.is_sorted
    assert grouped.groups["position"].to_list() == list(range(grouped.groups.height))
    assert grouped.groups["rows"].sum() == run.height
    # One row of a query moved to the end: the query is split, the run needs the sort.
    assert _keys(pl.concat([run.slice(1), run.head(1)]), tmp_path) is None
    # Each query whole but a ranker's queries interleaved with another's: not grouped either.
    interleaved = run.sort(_number(), "ranker", maintain_order=True)
    assert _keys(interleaved, tmp_path) is None


def test_detection_over_two_files_finds_a_group_cut_by_their_boundary(tmp_path):
    _, run = _data(queries=12)
    keys = ["ranker", "query_id"]
    grouped = _grouped(run, ["ranker", "query_id", "doc_id"])
    same = grouped.select(pl.struct(keys).eq(pl.struct(keys).shift(1)).fill_null(False)
                          ).to_series().to_list()
    middle = grouped.height // 2
    inside = next(i for i in range(middle, grouped.height) if same[i])
    between = next(i for i in range(middle, grouped.height) if not same[i])
    paths = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    for cut, split in ((inside, True), (between, False)):
        grouped.head(cut).write_parquet(paths[0])
        grouped.slice(cut).write_parquet(paths[1])
        found = detect(paths, keys, {}, 7)
        # A new file starts a group: one cut inside a group is that group twice.
        assert (found is None) == split, cut
        if found is not None:
            assert found.groups["rows"].sum() == grouped.height
            assert found.groups.select(keys).equals(
                grouped.select(keys).unique(maintain_order=True))


def test_a_shuffled_run_is_told_apart_in_its_first_batch(tmp_path, monkeypatch):
    # The pass holds a row per run of a key: over a shuffled input, a row per input row. It
    # ends at the first batch that repeats a key instead of holding them all.
    _, run = _data(queries=40)
    read = []
    batches = grouping._key_batches

    def counted(*args):
        for batch in batches(*args):
            read.append(batch[0].height)
            yield batch

    monkeypatch.setattr(grouping, "_key_batches", counted)
    shuffled = run.sample(fraction=1.0, shuffle=True, seed=3)
    assert _keys(shuffled, tmp_path, batch_rows=50) is None
    assert read == [50] and run.height > 5 * 50
    read.clear()
    grouped = _keys(_grouped(run, ["ranker", "query_id", "doc_id"]), tmp_path, batch_rows=50)
    assert grouped is not None and sum(read) == run.height


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(RANKERS), st.integers(0, 30), st.integers(1, 6)),
                min_size=1, max_size=40), st.integers(1, 20))
def test_detection_finds_a_split_group_whatever_the_batches(tmp_path_factory, groups,
                                                            batch_rows):
    rows = [(r, f"q{q}", f"d{k}") for r, q, n in groups for k in range(n)]
    frame = pl.DataFrame(rows, schema=["ranker", "query_id", "doc_id"], orient="row")
    found = _keys(frame, tmp_path_factory.mktemp("keys"), batch_rows)
    runs = frame.select(pl.struct("ranker", "query_id").rle_id())["ranker"]
    blocks = frame.select("ranker", "query_id").with_columns(run=runs).unique(
        maintain_order=True)
    whole = blocks.select(pl.struct("ranker", "query_id").n_unique()).item() == blocks.height
    rankers = blocks["ranker"].rle_id().max() + 1 == blocks["ranker"].n_unique()
    assert (found is not None) == (whole and rankers)
    if found is not None:
        assert found.groups.select("ranker", "query_id").equals(
            blocks.select("ranker", "query_id"))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**16), st.sampled_from([3, 50, hashing.RANGE_ROWS]))
def test_the_grouped_digest_is_the_content_hash(tmp_path_factory, seed, range_rows):
    judgments, run = _data(seed=seed % 50, queries=25)
    run = run.with_columns(pl.when(pl.col("score") == 0).then(-0.0).otherwise("score")
                           .alias("score"))  # -0.0 hashes as 0.0
    scratch = tmp_path_factory.mktemp("digest")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hashing, "RANGE_ROWS", range_rows)
        patch.setattr(grouped_digest, "RANGE_ROWS", range_rows)
        for kind, frame, keys in (("pool", run, ["ranker", "query_id", "doc_id"]),
                                  ("judgments", judgments, ["query_id", "doc_id"])):
            digest = GroupedDigest(kind, scratch)
            parts = _grouped(frame, keys).partition_by(keys[:-1], maintain_order=True)
            step = 1 + seed % 7
            for at in range(0, len(parts), step):
                digest.update(pl.concat(parts[at:at + step]))
            assert digest.hexdigest() == hashing.sha256_of(kind, frame)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**16), st.sampled_from([3, 50, 200, hashing.RANGE_ROWS]),
       st.sampled_from([0, 200, 2_000, 10**9]))
def test_ranges_hashed_as_they_close_give_the_content_hash(tmp_path_factory, seed, range_rows,
                                                           held_bytes):
    """A pool's ranges hashed from memory as their last block comes, with what is held capped
    (0: nothing held between pieces; 10**9: nothing written; between: some of each, the range
    that closes last written first)."""
    _, run = _data(seed=seed % 50, queries=30)
    run = run.with_columns(pl.when(pl.col("score") == 0).then(-0.0).otherwise("score")
                           .alias("score"))
    grouped = _grouped(run, ["ranker", "query_id", "doc_id"])
    groups = grouped.group_by("ranker", "query_id", maintain_order=True).len("rows")
    scratch = tmp_path_factory.mktemp("open")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hashing, "RANGE_ROWS", range_rows)
        patch.setattr(grouped_digest, "RANGE_ROWS", range_rows)
        digest = GroupedDigest("pool", scratch, groups, held_bytes)
        parts = grouped.partition_by(["ranker", "query_id"], maintain_order=True)
        step = 1 + seed % 7
        for at in range(0, len(parts), step):
            digest.update(pl.concat(parts[at:at + step]))
            assert sum(len(p[2]) for held in digest._open._held.values() for p in held) <= (
                held_bytes)
        spilled, written = digest._open.spilled.any(), digest._written
        assert digest.hexdigest() == hashing.sha256_of("pool", run)
    if held_bytes == 10**9:
        assert not spilled and written == 0  # every range hashed from memory
    assert not (scratch / "pool.lines").exists()


def test_query_ids_stored_as_integers_are_hashed_in_byte_order(tmp_path):
    """The grouping pass reads the ids as stored; the blocks have them as text. Byte order of
    the text (10 before 9) is the hash's, not numeric order."""
    _, run = _data(queries=30)
    run = run.with_columns(pl.col("query_id").str.slice(1))  # q12 -> 12
    grouped = run.sort("ranker", pl.col("query_id").cast(pl.Int64), maintain_order=True)
    groups = grouped.group_by("ranker", "query_id", maintain_order=True).len("rows")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(hashing, "RANGE_ROWS", 40)
        patch.setattr(grouped_digest, "RANGE_ROWS", 40)
        digest = GroupedDigest("pool", tmp_path, groups.with_columns(
            pl.col("query_id").cast(pl.Int64)), 10**9)
        for part in grouped.partition_by(["ranker", "query_id"], maintain_order=True):
            digest.update(part)
        assert digest.hexdigest() == hashing.sha256_of("pool", run)


def test_blocks_out_of_the_grouping_pass_order_are_refused(tmp_path):
    _, run = _data(queries=10)
    grouped = _grouped(run, ["ranker", "query_id", "doc_id"])
    groups = grouped.group_by("ranker", "query_id", maintain_order=True).len("rows")
    digest = GroupedDigest("pool", tmp_path, groups, 10**9)
    parts = grouped.partition_by(["ranker", "query_id"], maintain_order=True)
    digest.update(parts[0])
    with pytest.raises(RuntimeError, match="another order"):
        digest.update(parts[2])
    shorter = GroupedDigest("pool", tmp_path / "rows", groups, 10**9) if (
        (tmp_path / "rows").mkdir() is None) else None
    with pytest.raises(RuntimeError, match="other row counts"):
        shorter.update(parts[0].slice(1))


def test_bad_rows_on_the_grouped_path_are_named_as_on_the_sorted_path(tmp_path):
    judgments, run = _data()
    run = _grouped(run, ["ranker", "query_id", "doc_id"])
    nan_at = 40
    bad = run.with_columns(pl.when(pl.int_range(pl.len()) == nan_at).then(float("nan"))
                           .otherwise("score").alias("score"))
    paths = _write(tmp_path, "nan", judgments, bad, split=False)
    with pytest.raises(InputError) as caught:
        _score(*paths, "streaming", tmp_path / "out.parquet")
    text = str(caught.value)
    assert str(paths[1] / "run.parquet") in text and "score" in text
    assert f"{nan_at + 1} ('" in text  # the row's number in the file
    assert not (tmp_path / "out.parquet").exists()


def test_a_repeated_candidate_in_a_grouped_run_is_refused(tmp_path):
    judgments, run = _data()
    run = _grouped(run, ["ranker", "query_id", "doc_id"])
    repeated = pl.concat([run.head(5), run.slice(3, 1), run.slice(5)])  # within one query
    paths = _write(tmp_path, "dup", judgments, repeated, split=False)
    with pytest.raises(InputError, match="unique"):
        _score(*paths, "streaming", tmp_path / "out.parquet", batch_rows=2)


def test_a_repeated_judgment_in_grouped_judgments_is_named(tmp_path):
    judgments, run = _data()
    judgments = _grouped(judgments, ["query_id", "doc_id"])
    repeated = pl.concat([judgments.head(4), judgments.slice(2, 1), judgments.slice(4)])
    paths = _write(tmp_path, "dup", repeated, _grouped(run, ["ranker", "query_id", "doc_id"]),
                   split=True)
    with pytest.raises(InputError) as caught:
        _score(*paths, "streaming", tmp_path / "out.parquet", batch_rows=3)
    assert "judgments.parquet" in str(caught.value) and "unique" in str(caught.value)


def test_a_bad_grade_in_judgments_ordered_otherwise_is_named_with_its_file_row(tmp_path):
    # The run grouped in numeric order, the judgments in byte order: they are copied in the
    # run's order, and checked first, in their own file.
    judgments, run = _data()
    bad = judgments.with_columns(pl.when(pl.int_range(pl.len()) == 9).then(-3)
                                 .otherwise("grade").alias("grade"))
    paths = _write(tmp_path, "grade", bad, _grouped(run, ["ranker", "query_id", "doc_id"]),
                   split=False)
    with pytest.raises(InputError) as caught:
        _score(*paths, "streaming", tmp_path / "out.parquet")
    text = str(caught.value)
    assert "judgments.parquet" in text and "grade" in text and "10 (" in text
