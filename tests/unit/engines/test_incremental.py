"""An increment is the full scoring, byte for byte: a version that regrades, adds and removes
queries and documents, and grades unknown rows, scored from the earlier version's rows and its
changed queries alone, against the full scoring of the local and streaming engines."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from evaluation_pipeline.engines import score_files
from evaluation_pipeline.engines.incremental import changed_queries, score_increment
from evaluation_pipeline.ingest.publish import publish_judgments, publish_pool
from evaluation_pipeline.spec import EvaluationSpec, SpecError, profile

QUERIES, CANDIDATES, RANKERS = 60, 12, ("bm25", "dense", "hybrid")


def _pool(rng) -> pl.DataFrame:
    rows = []
    for ranker in RANKERS:
        # Each ranker leaves some queries out, so that missing_from_run rows arise.
        for q in rng.choice(QUERIES, size=QUERIES - 6, replace=False):
            docs = rng.choice(CANDIDATES * 2, size=CANDIDATES, replace=False)
            scores = np.round(rng.normal(size=CANDIDATES), 1)  # ties, on purpose
            rows += [(ranker, f"q{q:03d}", f"d{d:03d}", float(s)) for d, s in zip(docs, scores)]
    return pl.DataFrame(rows, schema=["ranker", "query_id", "doc_id", "score"], orient="row")


def _judgments(rng, pool: pl.DataFrame) -> pl.DataFrame:
    judged = pool.select("query_id", "doc_id").unique().sample(fraction=0.6, seed=int(
        rng.integers(1 << 30))).sort("query_id", "doc_id")
    grades = rng.integers(0, 4, size=judged.height)
    unknown = rng.random(judged.height) < 0.1
    return judged.with_columns(
        pl.when(pl.Series(unknown)).then(None).otherwise(pl.Series(grades)).alias("grade"),
        pl.Series("grade_status", np.where(unknown, "unknown", "graded")))


def _next_version(rng, before: pl.DataFrame, pool: pl.DataFrame) -> pl.DataFrame:
    """Regrades, graded unknowns, removed documents and queries, added documents and queries."""
    queries = before["query_id"].unique().sort().to_list()
    regraded = set(rng.choice(queries, size=4, replace=False))
    removed = set(rng.choice(sorted(set(queries) - regraded), size=2, replace=False))
    after = before.filter(~pl.col("query_id").is_in(list(removed))).with_columns(
        pl.when(pl.col("query_id").is_in(list(regraded)))
        .then((pl.col("grade").fill_null(0) + 1) % 4).otherwise(pl.col("grade")).alias("grade"))
    after = after.with_columns(pl.when(pl.col("grade").is_null()).then(pl.lit("unknown"))
                               .otherwise(pl.lit("graded")).alias("grade_status"))
    # One query's unknown rows graded, nothing else of it changed.
    unknowns = after.filter(pl.col("grade_status") == "unknown")
    if unknowns.height:
        q = unknowns["query_id"][0]
        after = after.with_columns(
            pl.when((pl.col("query_id") == q) & pl.col("grade").is_null()).then(2)
            .otherwise(pl.col("grade")).alias("grade"),
            pl.when(pl.col("query_id") == q).then(pl.lit("graded"))
            .otherwise(pl.col("grade_status")).alias("grade_status"))
    # New grades: documents of judged queries, and whole queries the version did not judge.
    unjudged = pool.select("query_id", "doc_id").unique().join(
        after.select("query_id", "doc_id"), on=["query_id", "doc_id"], how="anti").sort(
        "query_id", "doc_id")
    added = unjudged.sample(n=min(15, unjudged.height), seed=3).with_columns(
        pl.lit(3, dtype=pl.Int64).alias("grade"), pl.lit("graded").alias("grade_status"))
    return pl.concat([after, added.select(after.columns)]).sort("query_id", "doc_id")


def _published(tmp_path, rng, shape=None):
    """Both versions and the pool, published; ``shape``: applied to each version's rows as
    they land."""
    landing = tmp_path / "landing"
    (landing / "pool-a").mkdir(parents=True)
    pool = _pool(rng)
    for ranker in RANKERS:
        pool.filter(pl.col("ranker") == ranker).write_parquet(
            landing / "pool-a" / f"{ranker}.parquet")
    a = _judgments(rng, pool)
    b = _next_version(rng, a, pool)
    paths = {}
    for name, frame in (("v1", a), ("v2", b)):
        source = landing / f"{name}.parquet"
        (shape(frame) if shape else frame).write_parquet(source)
        paths[name] = publish_judgments(source, tmp_path / "published" / f"{name}.parquet",
                                        version=name)
    paths["pool"] = publish_pool(landing / "pool-a", tmp_path / "published" / "pool.parquet")
    return paths


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("engine", ["local", "streaming"])
@pytest.mark.parametrize("spec_name", ["default", "trec_eval", "measures"])
def test_an_increment_is_the_full_scoring_byte_for_byte(tmp_path, seed, engine, spec_name):
    rng = np.random.default_rng(seed)
    published = _published(tmp_path, rng)
    # measures: every measure of a changed query is scored again, the others' rows kept.
    spec = (profile("trec_eval").replace(measures=["nDCG@5", "RR(rel=2)@10", "AP", "R@20"])
            if spec_name == "measures" else profile(spec_name))
    pool, v1, v2 = published["pool"], published["v1"], published["v2"]
    earlier = tmp_path / "scores-v1.parquet"
    score_files(v1.path, pool.path, spec, earlier, engine=engine, progress=False)
    full = tmp_path / "scores-v2-full.parquet"
    score_files(v2.path, pool.path, spec, full, engine=engine, progress=False)
    out = tmp_path / "scores-v2-increment.parquet"
    increment = score_increment(earlier, v1.path, v2.path, pool.path, spec, out,
                                pool_sha256=pool.sha256, previous_judgments_sha256=v1.sha256)
    assert increment is not None
    assert out.read_bytes() == full.read_bytes()
    before, after = pl.read_parquet(v1.path), pl.read_parquet(v2.path)
    changed = changed_queries(before, after)
    assert increment.rescored_queries == changed.len() > 0
    assert increment.kept_queries > changed.len()  # most of the work was not redone


def test_the_changed_queries_are_exactly_those_whose_rows_differ():
    a = pl.DataFrame({"query_id": ["q1", "q1", "q2", "q3", "q4"],
                      "doc_id": ["d1", "d2", "d1", "d1", "d1"],
                      "grade": [1, 2, None, 3, 0],
                      "grade_status": ["graded", "graded", "unknown", "graded", "graded"],
                      "judgment_version": "v1"})
    b = pl.DataFrame({"query_id": ["q1", "q1", "q2", "q4", "q5"],
                      "doc_id": ["d1", "d2", "d1", "d1", "d1"],
                      "grade": [1, 2, 2, 1, 0],
                      "grade_status": ["graded", "graded", "graded", "graded", "graded"],
                      "judgment_version": "v2"})
    # q1 the same (only the version's name differs); q2 graded; q3 removed; q4 regraded; q5 new.
    assert changed_queries(a, b).to_list() == ["q2", "q3", "q4", "q5"]


def _scored_v1(tmp_path, seed: int):
    """The published inputs, the default spec, and version 1's full scores of the pool."""
    published = _published(tmp_path, np.random.default_rng(seed))
    spec = profile("default")
    earlier = tmp_path / "scores-v1.parquet"
    score_files(published["v1"].path, published["pool"].path, spec, earlier, engine="local",
                progress=False)
    return published, spec, earlier


def test_rows_of_another_evaluation_are_not_used(tmp_path):
    published, spec, earlier = _scored_v1(tmp_path, seed=7)
    out = tmp_path / "out.parquet"
    for pool_sha, judged_sha, other_spec in (("0" * 64, published["v1"].sha256, spec),
                                             (published["pool"].sha256, "0" * 64, spec),
                                             (published["pool"].sha256, published["v1"].sha256,
                                              profile("trec_eval"))):
        assert score_increment(earlier, published["v1"].path, published["v2"].path,
                               published["pool"].path, other_spec, out, pool_sha256=pool_sha,
                               previous_judgments_sha256=judged_sha) is None
        assert not out.exists()


@pytest.mark.parametrize("given_hash", [False, True])
@pytest.mark.parametrize("limit", ["inputs", "candidates", "fits"])
def test_an_increment_that_would_not_fit_in_memory_is_left_to_the_full_scoring(
        tmp_path, monkeypatch, limit, given_hash):
    """What the increment holds at once: the earlier rows twice (the kept ones are merged with
    the new ones), the changed queries' judgment rows and their candidates (a share of the
    pool's rows), and the new version whole when its hash is computed here. Past the rows auto
    streams from, the caller scores in full (streamed) instead. The versions, scanned for
    their digests, do not count."""
    from evaluation_pipeline.engines import incremental

    published, spec, earlier = _scored_v1(tmp_path, seed=5)
    before, after = pl.read_parquet(published["v1"].path), pl.read_parquet(published["v2"].path)
    scores = pl.read_parquet(earlier)
    changed = changed_queries(before, after)
    pool_rows = pl.read_parquet(published["pool"].path).height
    inputs = 2 * scores.height + (0 if given_hash else after.height)
    held = (inputs + after.filter(pl.col("query_id").is_in(changed.implode())).height
            + pool_rows * changed.len() // scores["query_id"].n_unique())
    monkeypatch.setattr(incremental, "IN_MEMORY_MAX_ROWS",
                        {"inputs": inputs - 1, "candidates": held - 1, "fits": held}[limit])
    # Which judgment rows are read whole (a version's rows, not digests or counts).
    read: list[int] = []
    collect = pl.LazyFrame.collect

    def recorded(self, *args, **kwargs):
        frame = collect(self, *args, **kwargs)
        if "grade_status" in frame.columns:
            read.append(frame.height)
        return frame

    monkeypatch.setattr(pl.LazyFrame, "collect", recorded)
    out = tmp_path / "out.parquet"
    done = score_increment(earlier, published["v1"].path, published["v2"].path,
                           published["pool"].path, spec, out,
                           pool_sha256=published["pool"].sha256,
                           previous_judgments_sha256=published["v1"].sha256,
                           judgments_sha256_now=published["v2"].sha256 if given_hash else None)
    assert (done is not None) == (limit == "fits") == out.exists()
    # Refused before the changed queries' judgment rows are read.
    assert (read != []) == (limit == "fits")


def _rated(frame: pl.DataFrame, rng) -> pl.DataFrame:
    """Two raters per document: h1 never grades above 2 (so the version's largest grade
    depends on the rule), h2 as given, one grade off on some documents."""
    other = frame.with_columns(
        pl.when(pl.Series(rng.random(frame.height) < 0.3) & pl.col("grade").is_not_null())
        .then((pl.col("grade") + 1) % 4).otherwise(pl.col("grade")).alias("grade"))
    return pl.concat([frame.with_columns(pl.col("grade").clip(upper_bound=2),
                                         pl.lit("h1").alias("rater")),
                      other.with_columns(pl.lit("h2").alias("rater"))]).sort(
        "query_id", "doc_id", "rater")


@pytest.mark.parametrize("rule", ["max", "mean:floor", "rater:h1", "rater:h2"])
def test_an_increment_of_rated_versions_is_the_full_scoring_byte_for_byte(tmp_path, rule):
    """Versions with raters: the largest grade (the holes' range) is that of the combined
    grades, and the rule is checked against the version's raters, read from its file."""
    rng = np.random.default_rng(7)
    published = _published(tmp_path / "rated", rng, shape=lambda frame: _rated(frame, rng))
    pool_file, v1, v2 = published["pool"], published["v1"], published["v2"]
    spec = EvaluationSpec(raters=rule)
    earlier, full = tmp_path / "scores-v1.parquet", tmp_path / "scores-v2-full.parquet"
    score_files(v1.path, pool_file.path, spec, earlier, progress=False)
    score_files(v2.path, pool_file.path, spec, full, progress=False)
    out = tmp_path / "scores-v2-increment.parquet"
    increment = score_increment(earlier, v1.path, v2.path, pool_file.path, spec, out,
                                pool_sha256=pool_file.sha256,
                                previous_judgments_sha256=v1.sha256)
    assert increment is not None and increment.rescored_queries > 0
    assert out.read_bytes() == full.read_bytes()
    # A version with raters after one without, under a spec without a rule: refused, as the
    # full scoring refuses it, before anything is written. (The same seed: the same pool.)
    plain = _published(tmp_path / "plain", np.random.default_rng(7))["v1"]
    plain_scores = tmp_path / "scores-v1-unrated.parquet"
    score_files(plain.path, pool_file.path, EvaluationSpec(), plain_scores, progress=False)
    with pytest.raises(SpecError, match="raters"):
        score_files(v2.path, pool_file.path, EvaluationSpec(), tmp_path / "x.parquet",
                    progress=False)
    with pytest.raises(SpecError, match="raters"):
        score_increment(plain_scores, plain.path, v2.path, pool_file.path, EvaluationSpec(),
                        tmp_path / "refused.parquet", pool_sha256=pool_file.sha256,
                        previous_judgments_sha256=plain.sha256)
    assert not (tmp_path / "refused.parquet").exists()


def test_an_increment_over_the_memory_budget_is_left_to_the_full_scoring(tmp_path):
    """The increment holds its rows in memory: under a budget its estimated peak (the
    in-memory engine's model of the rows it holds) passes, the full scoring (which streams)
    is left to run instead, as ``auto`` would choose for a full scoring."""
    from evaluation_pipeline.engines.choice import IN_MEMORY_BASE_BYTES
    from evaluation_pipeline.io.budget import Budget

    published, spec, earlier = _scored_v1(tmp_path, seed=5)
    arguments = (earlier, published["v1"].path, published["v2"].path, published["pool"].path,
                 spec)
    hashes = {"pool_sha256": published["pool"].sha256,
              "previous_judgments_sha256": published["v1"].sha256}
    out = tmp_path / "out.parquet"
    # The interpreter and libraries alone take the base: any rows held pass it.
    assert score_increment(*arguments, out, budget=Budget.of(IN_MEMORY_BASE_BYTES),
                           **hashes) is None
    assert not out.exists()
    assert score_increment(*arguments, out, budget=Budget.of("2GB"), **hashes) is not None


@pytest.mark.parametrize("max_grade", [None, 3])
def test_a_rated_version_is_counted_whole_only_when_it_is_read_whole(tmp_path, monkeypatch,
                                                                     max_grade):
    """A version with raters is read whole to combine its grades for its largest grade, and
    counted so; under a spec's max_grade it is not read, and not counted."""
    from evaluation_pipeline.engines import incremental

    rng = np.random.default_rng(7)
    published = _published(tmp_path, rng, shape=lambda frame: _rated(frame, rng))
    pool_file, v1, v2 = published["pool"], published["v1"], published["v2"]
    spec = EvaluationSpec(raters="max", max_grade=max_grade)
    earlier = tmp_path / "scores-v1.parquet"
    score_files(v1.path, pool_file.path, spec, earlier, progress=False)
    before, after = pl.read_parquet(v1.path), pl.read_parquet(v2.path)
    scores = pl.read_parquet(earlier)
    changed = changed_queries(before, after)
    # What it holds besides a whole version: the earlier rows twice, the changed queries'
    # judgment rows and candidates.
    held = (2 * scores.height + after.filter(pl.col("query_id").is_in(changed.implode())).height
            + pl.read_parquet(pool_file.path).height * changed.len()
            // scores["query_id"].n_unique())
    monkeypatch.setattr(incremental, "IN_MEMORY_MAX_ROWS", held)
    done = score_increment(earlier, v1.path, v2.path, pool_file.path, spec,
                           tmp_path / "out.parquet", pool_sha256=pool_file.sha256,
                           previous_judgments_sha256=v1.sha256, judgments_sha256_now=v2.sha256)
    assert (done is not None) == (max_grade is not None)


def test_the_changed_queries_of_a_pair_of_versions_are_found_once(tmp_path, monkeypatch):
    """A new version is scored against every pool of the backfill window from the same earlier
    version: the pair's changed queries are found once, and again only when a file changes."""
    import os

    from evaluation_pipeline.engines import incremental

    published, spec, earlier = _scored_v1(tmp_path, seed=11)
    pool_file, v1, v2 = published["pool"], published["v1"], published["v2"]
    digests: list[int] = []
    real = incremental._query_digests
    monkeypatch.setattr(incremental, "_query_digests",
                        lambda *a, **k: digests.append(1) or real(*a, **k))
    full = tmp_path / "full.parquet"
    score_files(v2.path, pool_file.path, spec, full, progress=False)

    def increment(name: str):
        out = tmp_path / f"{name}.parquet"
        done = score_increment(earlier, v1.path, v2.path, pool_file.path, spec, out,
                               pool_sha256=pool_file.sha256,
                               previous_judgments_sha256=v1.sha256)
        assert done is not None and out.read_bytes() == full.read_bytes()
        return done

    first, second = increment("first"), increment("second")
    assert len(digests) == 2  # one per version, for both increments
    assert first.rescored_queries == second.rescored_queries > 0
    # The same bytes written again are another file to the cache: found anew.
    stat = os.stat(v2.path)
    os.utime(v2.path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    increment("third")
    assert len(digests) == 4
