"""Which pools a judgment version is scored against: the newest N landed by its publication,
every pool after it; 0 is every pool."""

from __future__ import annotations

import pytest

from evaluation_pipeline.nightly.verdicts import backfill_window

READY = {f"p{day:02d}": f"2026-10-{day:02d}T02:00:00+00:00" for day in range(1, 21)}


@pytest.mark.parametrize("nights, expected", [
    (14, {f"p{day:02d}" for day in range(7, 21)}),
    (1, {"p20"}),
    (0, set(READY)),
    (50, set(READY)),
])
def test_a_version_after_every_night_gets_the_newest_n(nights, expected):
    assert backfill_window(READY, "2026-11-01T00:00:00+00:00", nights) == expected


def test_nights_after_the_version_are_always_in_it():
    window = backfill_window(READY, "2026-10-10T12:00:00+00:00", 2)
    assert window == {"p09", "p10", *(f"p{day:02d}" for day in range(11, 21))}


def test_a_night_ready_at_the_publication_counts_as_landed_before_it():
    assert backfill_window(READY, "2026-10-05T02:00:00+00:00", 1) == {
        "p05", *(f"p{day:02d}" for day in range(6, 21))}


def test_nights_are_ordered_by_ready_time_not_by_name():
    ready = {"b": "2026-10-01T00:00:00Z", "a": "2026-10-02T00:00:00Z"}
    assert backfill_window(ready, "2026-10-03T00:00:00Z", 1) == {"a"}
