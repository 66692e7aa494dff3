"""The report's numbers as sums over chunks of queries (core.report_partials): the same on
any cut of the files, one chunk in memory or all, and the same as one chunk up to rounding."""

from __future__ import annotations

import json

import pytest

from evaluation_pipeline.core import report_partials
from evaluation_pipeline.io.atomic import json_text
from evaluation_pipeline.io.datasets import scan_dataset
from evaluation_pipeline.report.build import (
    build_report,
    local_numbers,
    scanned_numbers,
)
from tests.report_nights import CONFIG, QUERIES, SPEC, night
from tests.test_report_aggregates import LINEAGE

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
