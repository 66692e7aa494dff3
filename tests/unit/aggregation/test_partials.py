"""The report's numbers as sums over chunks of queries (aggregation.partials): the same on
any cut of the files, one chunk in memory or all, and the same as one chunk up to rounding."""

from __future__ import annotations

import json

import polars as pl
import pytest

from evaluation_pipeline.aggregation import partials as report_partials
from evaluation_pipeline.io.atomic import json_text
from evaluation_pipeline.io.datasets import scan_dataset
from evaluation_pipeline.report.build import (
    build_report,
    local_numbers,
    scanned_numbers,
)
from tests.support.frames import LINEAGE
from tests.support.report_nights import CONFIG, QUERIES, SPEC, night

TONIGHT, PREVIOUS = night(1, ("a", "b", "c")), night(2, ("a", "b"))


def _report(numbers) -> str:
    report, aggregates, _ = build_report(None, SPEC, LINEAGE, QUERIES, CONFIG, numbers=numbers)
    return json_text(report) + aggregates.write_csv()


def test_files_scanned_a_chunk_at_a_time_give_the_frames_report_to_the_bit(tmp_path,
                                                                         monkeypatch):
    monkeypatch.setattr(report_partials, "CHUNK_QUERIES", 128)  # six chunks
    folder = tmp_path / "tonight"  # a folder of parts, rows in another order
    folder.mkdir()
    shuffled = TONIGHT.sample(fraction=1.0, shuffle=True, seed=9)
    for i in range(3):
        shuffled[i::3].write_parquet(folder / f"part-{i:05d}.parquet")
    PREVIOUS.write_parquet(tmp_path / "previous.parquet")
    scanned = scanned_numbers(scan_dataset(folder), scan_dataset(tmp_path / "previous.parquet"),
                              QUERIES, CONFIG)
    read = local_numbers(TONIGHT, QUERIES, CONFIG, PREVIOUS)
    assert scanned[0].plan == read[0].plan and read[0].plan.n_chunks == 6
    assert _report(scanned) == _report(read)
    settings = {"alpha": 0.05, "min_effect": 0.01, "ci_level": CONFIG.ci_level}
    assert (scanned[0].night_comparison(scanned[1], **settings)
            == read[0].night_comparison(read[1], **settings))


def test_the_numbers_do_not_depend_on_the_chunks_beyond_rounding(monkeypatch):
    """Chunks change only the order of additions: one chunk or six give the same report up
    to float rounding, and the same counts and regressions exactly."""
    one = json.loads(json_text(build_report(
        None, SPEC, LINEAGE, QUERIES, CONFIG,
        numbers=local_numbers(TONIGHT, QUERIES, CONFIG, PREVIOUS))[0]))
    monkeypatch.setattr(report_partials, "CHUNK_QUERIES", 128)
    numbers = local_numbers(TONIGHT, QUERIES, CONFIG, PREVIOUS)
    assert numbers[0].plan.n_chunks == 6
    six = json.loads(json_text(build_report(None, SPEC, LINEAGE, QUERIES, CONFIG,
                                            numbers=numbers)[0]))
    assert len(one["slice_results"]) == len(six["slice_results"]) > 10
    for a, b in zip(one["slice_results"], six["slice_results"], strict=True):
        assert a["n_with_number"] == b["n_with_number"]
        assert a["status_counts"] == b["status_counts"]
        assert a["macro_ndcg"] == pytest.approx(b["macro_ndcg"], rel=1e-13)
        assert a["macro_ndcg_interval"] == pytest.approx(b["macro_ndcg_interval"], rel=1e-12)
    for a, b in zip(one["comparison"]["pairs"], six["comparison"]["pairs"], strict=True):
        assert (a["wins"], a["losses"], a["regressions"]) == (b["wins"], b["losses"],
                                                               b["regressions"])
        assert a["p_value"] == pytest.approx(b["p_value"], abs=1e-9)


def test_chunks_are_a_function_of_the_query_id_alone():
    import polars as pl

    ids = pl.Series([f"q{i}" for i in range(5000)])
    cut = report_partials.chunk_ids(ids, 7)
    assert set(cut.tolist()) == set(range(7))
    again = report_partials.chunk_ids(ids.reverse(), 7)[::-1]
    assert (cut == again).all()
    assert report_partials.chunk_ids(ids.head(10), 7).tolist() == cut[:10].tolist()
    # about as many queries in each chunk
    counts = pl.Series(cut).value_counts()["count"]
    assert counts.max() < 1.2 * 5000 / 7


def test_the_weight_itself_may_be_a_slice():
    from evaluation_pipeline.aggregation.aggregate_table import aggregate_with_intervals

    frame = aggregate_with_intervals(TONIGHT, QUERIES, ("weight",), n_bootstrap=20)
    weights = frame.filter(pl.col("slice_column") == "weight")
    joined = TONIGHT.join(QUERIES, on="query_id", how="left")
    expected = (joined.with_columns(pl.col("weight").cast(pl.String).fill_null("(none)"))
                .group_by("ranker", "cutoff", "weight").len())
    got = weights.select("ranker", "cutoff", pl.col("slice_value").alias("weight"),
                         pl.col("n_queries").cast(pl.UInt32).alias("len"))
    assert got.sort(got.columns).equals(expected.sort(expected.columns))


def test_a_previous_night_without_rows_is_a_night_with_nothing_to_compare():
    planned, numbers = local_numbers(TONIGHT, QUERIES, CONFIG, PREVIOUS.head(0))
    compared = planned.night_comparison(numbers, alpha=0.05, min_effect=0.01, ci_level=0.95)
    assert compared is not None and compared.comparisons == []
    planned, numbers = local_numbers(TONIGHT, QUERIES, CONFIG)  # no previous night at all
    assert planned.night_comparison(numbers, alpha=0.05, min_effect=0.01, ci_level=0.95) is None


def test_nights_stored_with_other_dtypes_give_the_same_numbers():
    from evaluation_pipeline.nightly.verdicts import compare_nights

    other = PREVIOUS.with_columns(pl.col("cutoff").cast(pl.Int32),
                                  pl.col("status").cast(pl.Categorical),
                                  pl.col("judged_at_k").cast(pl.Float32).cast(pl.Float64))
    assert compare_nights(other, TONIGHT, n_bootstrap=100) == compare_nights(
        PREVIOUS.with_columns(pl.col("judged_at_k").cast(pl.Float32).cast(pl.Float64)),
        TONIGHT, n_bootstrap=100)


def test_a_null_candidate_count_beside_a_count_is_evidence_of_other_sets():
    from evaluation_pipeline.aggregation.comparison import compare_rankers

    two = TONIGHT.filter(pl.col("ranker") != "c").with_columns(
        candidate_recall=pl.lit(0.5), n_candidates=pl.lit(100, dtype=pl.Int64))
    pure = compare_rankers(two, n_bootstrap=100)
    assert pure["pure_reranker_comparison"], pure["note"]
    mixed = two.with_columns(pl.when((pl.col("ranker") == "b") & (pl.col("query_id") < "q0005"))
                             .then(None).otherwise(pl.col("n_candidates")).alias("n_candidates"))
    comparison = compare_rankers(mixed, n_bootstrap=100)
    assert not comparison["pure_reranker_comparison"]
    assert "for 5 queries (q0000, q0001, q0002, q0003, q0004)" in comparison["note"]


def test_a_difference_on_a_bin_edge_is_counted_in_the_bin_it_starts():
    """A difference written with a few decimals falls in the bin it starts, as its decimals
    say: 0.1 - 1.0 is -0.9000000000000000222 in floats, and a floor alone put it in the bin
    below -0.9."""
    from decimal import Decimal

    import numpy as np

    from evaluation_pipeline.aggregation.comparison import compare_rankers
    from tests.support.frames import per_query_rows

    pairs = [("0.1", "1.0"), ("0.2", "1.0"), ("0.3", "1.0"), ("0.7", "1.0"), ("0.5", "0.75"),
             ("0.4", "0.4"), ("0.7", "0.5"), ("0.95", "0.5"), ("1.0", "0.0")]
    rows = []
    for i, (second, first) in enumerate(pairs):
        rows += [("a", f"q{i}", float(first), "scored"), ("b", f"q{i}", float(second), "scored")]
    pair = compare_rankers(per_query_rows(rows), n_bootstrap=20)["pairs"][0]
    counts, edges = pair["histogram"].chart_bins()
    assert np.allclose(edges, np.linspace(-1, 1, 21))  # the largest difference is 1
    exact = [min(int((Decimal(second) - Decimal(first) + 1) / Decimal("0.1")), 19)
             for second, first in pairs]
    assert counts.tolist() == np.bincount(exact, minlength=20).tolist()


def test_a_summary_of_one_chunk_does_not_import_numba():
    """summary.json's numbers (one chunk, no resamples) are taken without the resampling
    kernels: their import costs ``ndcg-eval score`` some 0.5 s."""
    import subprocess
    import sys

    from tests.support.paths import REPO

    code = ("import sys\n"
            "from evaluation_pipeline.aggregation.aggregate_table import aggregate\n"
            "from tests.support.frames import PER_QUERY\n"
            "aggregate(PER_QUERY)\n"
            "print('numba' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO)
    assert out.stdout.strip() == "False"
