"""What drove a night's change: the queries that moved most and the change by slice, held to a
plain recomputation from the two nights' per-query rows."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from evaluation_pipeline.aggregation import partials
from evaluation_pipeline.nightly.verdicts import night_comparison_of_frames

N_QUERIES = 300
SLICES = ["family", "age"]


def night(seed: int, drop: float, queries: list[str]) -> pl.DataFrame:
    """Two rankers x two cutoffs; ranker ``a`` loses ``drop`` on the family-x queries."""
    rng = np.random.default_rng(seed)
    frames = []
    for ranker in ("a", "b"):
        for cutoff in (5, 10):
            value = rng.random(len(queries))
            if ranker == "a":
                value = value - drop * np.array([q.endswith(("0", "3", "6")) for q in queries])
            value = np.clip(value, 0, 1).round(6)
            # some queries have no number (incomplete), so they are not paired
            has = rng.random(len(queries)) > 0.1
            frames.append(pl.DataFrame({
                "ranker": ranker, "query_id": queries, "cutoff": cutoff,
                "ndcg": [float(v) if h else None for v, h in zip(value, has)],
                "status": ["scored" if h else "incomplete" for h in has],
                "judged_at_k": 1.0, "candidate_recall": 0.9, "n_candidates": 20,
            }))
    return pl.concat(frames)


@pytest.fixture(scope="module")
def nights():
    ids = [f"q{i}" for i in range(N_QUERIES)]
    previous = night(1, 0.0, ids[:-5])  # the last five queries are new tonight
    current = night(2, 0.3, ids[5:])    # the first five are gone
    rng = np.random.default_rng(3)
    queries = pl.DataFrame({
        "query_id": ids, "weight": 1.0,
        "family": ["x" if q.endswith(("0", "3", "6")) else "y" for q in ids],
        # a slice value that some queries lack: counted under "(none)"
        "age": [None if i % 17 == 0 else ("old" if rng.random() < 0.5 else "new")
                for i in range(N_QUERIES)],
    })
    return previous, current, queries


def recomputed(previous: pl.DataFrame, current: pl.DataFrame, queries: pl.DataFrame,
               ranker: str, cutoff: int) -> pl.DataFrame:
    """The paired differences of one ranker x cutoff, by a join."""
    def side(frame, name):
        return frame.filter((pl.col("ranker") == ranker) & (pl.col("cutoff") == cutoff)
                            & pl.col("ndcg").is_not_null()).select("query_id",
                                                                   pl.col("ndcg").alias(name))
    paired = side(previous, "before").join(side(current, "after"), on="query_id")
    return (paired.with_columns(difference=pl.col("after") - pl.col("before"))
            .join(queries, on="query_id", how="left"))


def test_movers_are_the_largest_changes_either_way(nights):
    previous, current, queries = nights
    comparison = night_comparison_of_frames(previous, current, queries=queries, slices=SLICES,
                                            n_movers=7, n_bootstrap=200)
    for c in comparison.comparisons:
        plain = recomputed(previous, current, queries, c["ranker"], c["cutoff"])
        expected = (plain.filter(pl.col("difference").abs() > 1e-12)
                    .with_columns(size=-pl.col("difference").abs())
                    .sort("size", "query_id").head(7))
        assert [m["query_id"] for m in c["movers"]] == expected["query_id"].to_list()
        for mover, row in zip(c["movers"], expected.iter_rows(named=True)):
            assert mover["ndcg_previous"] == row["before"]
            assert mover["ndcg_current"] == row["after"]
            assert mover["difference"] == pytest.approx(row["difference"], abs=1e-15)


def test_the_change_by_slice_is_the_paired_change_of_each_value(nights):
    previous, current, queries = nights
    comparison = night_comparison_of_frames(previous, current, queries=queries, slices=SLICES,
                                            n_bootstrap=200)
    told_apart = []
    for c in comparison.comparisons:
        plain = recomputed(previous, current, queries, c["ranker"], c["cutoff"])
        assert c["n_paired"] == plain.height
        total = plain["difference"].sum()
        # Shares only of a change told from zero (its interval excludes 0), else none.
        told = c["difference_low"] > 0 or c["difference_high"] < 0
        told_apart.append(told)
        found = {(s["slice"], s["value"]): s for s in c["slices"]}
        for column in SLICES:
            groups = (plain.with_columns(pl.col(column).fill_null("(none)"))
                      .group_by(column).agg(n=pl.len(), mean=pl.col("difference").mean(),
                                            sum=pl.col("difference").sum()))
            assert {v for s, v in found if s == column} == set(groups[column].to_list())
            for row in groups.iter_rows(named=True):
                got = found[(column, row[column])]
                assert got["n_paired"] == row["n"]
                assert got["mean_difference"] == pytest.approx(row["mean"], abs=1e-12)
                if not told:
                    assert got["share"] is None
                    continue
                assert got["share"] == pytest.approx(row["sum"] / total, abs=1e-12)
            # the shares of one slice column add up to the whole change
            if told:
                assert math.fsum(s["share"] for s in c["slices"] if s["slice"] == column) == \
                    pytest.approx(1.0, abs=1e-12)
    assert any(told_apart) and not all(told_apart)  # both kinds of change are held


def test_a_slice_values_interval_is_that_of_its_queries_alone(nights):
    """The draws depend on the query id and the seed alone, so a value's interval is the one
    the whole comparison gets on its queries only: a second path through the resampling."""
    previous, current, queries = nights
    comparison = night_comparison_of_frames(previous, current, queries=queries, slices=SLICES,
                                            n_bootstrap=300)
    for value in ("x", "y"):
        ids = queries.filter(pl.col("family") == value)["query_id"].to_list()
        alone = night_comparison_of_frames(
            previous.filter(pl.col("query_id").is_in(ids)),
            current.filter(pl.col("query_id").is_in(ids)), n_bootstrap=300)
        for c, whole in zip(comparison.comparisons, alone.comparisons, strict=True):
            part = next(s for s in c["slices"] if (s["slice"], s["value"]) == ("family", value))
            assert (part["difference_low"], part["difference_high"]) == pytest.approx(
                (whole["difference_low"], whole["difference_high"]), abs=1e-12)
            assert part["mean_difference"] == pytest.approx(whole["mean_difference"], abs=1e-12)


def test_chunks_give_the_same_breakdown(nights, monkeypatch):
    previous, current, queries = nights
    whole = night_comparison_of_frames(previous, current, queries=queries, slices=SLICES,
                                       n_bootstrap=100)
    monkeypatch.setattr(partials, "CHUNK_QUERIES", 64)  # five chunks
    chunked = night_comparison_of_frames(previous, current, queries=queries, slices=SLICES,
                                         n_bootstrap=100)
    for a, b in zip(whole.comparisons, chunked.comparisons, strict=True):
        assert [m["query_id"] for m in a["movers"]] == [m["query_id"] for m in b["movers"]]
        for s, t in zip(a["slices"], b["slices"], strict=True):
            assert ((s["slice"], s["value"], s["n_paired"])
                    == (t["slice"], t["value"], t["n_paired"]))
            assert s["mean_difference"] == pytest.approx(t["mean_difference"], abs=1e-12)
            assert (s["difference_low"], s["difference_high"]) == pytest.approx(
                (t["difference_low"], t["difference_high"]), abs=1e-12)


def test_the_regressed_ranker_is_driven_by_the_slice_that_lost(nights):
    previous, current, queries = nights
    comparison = night_comparison_of_frames(previous, current, queries=queries, slices=SLICES,
                                            n_bootstrap=200)
    a10 = next(c for c in comparison.comparisons if (c["ranker"], c["cutoff"]) == ("a", 10))
    family = {s["value"]: s for s in a10["slices"] if s["slice"] == "family"}
    assert family["x"]["difference_high"] < 0 < family["y"]["difference_high"]
    assert family["x"]["share"] > 0.5
