"""The UI's reading of the history: a night's headline, the regressions that still stand, and
the code location the runs of `make run` name."""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime, timedelta

import polars as pl
import yaml

from evaluation_pipeline.nightly.history import empty_history
from evaluation_pipeline.orchestration.local_runner import (
    DEFINITIONS_ATTRIBUTE,
    DEFINITIONS_MODULE,
    LOCATION_NAME,
)
from evaluation_pipeline.orchestration.nightly_status import (
    describe_standing,
    headline_nights,
    is_headline,
    night_headline,
    standing_regressions,
)
from schemas.columns import HISTORY_DTYPES, IMPROVED, NO_CHANGE, REGRESSED
from tests.support.paths import REPO

SPEC = "s1"
START = datetime(2026, 12, 1, tzinfo=UTC)


def _history(nights: list[tuple[str, str, bool, str | None]]) -> pl.DataFrame:
    """One overall row of ranker r at K=5 per (pool, version, headline, verdict), in order."""
    rows = [{"candidate_pool": pool, "judgment_version": version, "spec_id": SPEC,
             "ranker": "r", "cutoff": 5, "measure": "nDCG@5", "slice": None,
             "slice_value": None, "headline": headline, "headline_measure": True,
             "verdict": verdict,
             "previous_pool": None if verdict is None else "before",
             "mean_difference": -0.1 if verdict == REGRESSED else 0.0,
             "difference_low": -0.2, "difference_high": -0.05, "p_value_holm": 0.003,
             "ready_at": START + timedelta(days=i),
             "first_evaluated_at": START + timedelta(days=i)}
            for i, (pool, version, headline, verdict) in enumerate(nights)]
    frame = pl.DataFrame(rows)
    return pl.concat([empty_history(), frame.select(
        pl.col(c).cast(HISTORY_DTYPES[c]) for c in frame.columns)], how="diagonal_relaxed")


def test_a_regression_stands_until_a_later_headline_night_improves_it():
    history = _history([("p1", "v1", True, None), ("p2", "v1", True, REGRESSED),
                        ("p2", "v0", False, REGRESSED), ("p3", "v1", True, NO_CHANGE)])
    (standing,) = standing_regressions(history, SPEC)
    assert (standing["candidate_pool"], standing["judgment_version"]) == ("p2", "v1")
    assert standing["nights_since"] == 1
    assert "not recovered on the 1 headline night since" in describe_standing(standing)
    assert headline_nights(history, SPEC) == [("p1", "v1"), ("p2", "v1"), ("p3", "v1")]
    recovered = _history([("p1", "v1", True, None), ("p2", "v1", True, REGRESSED),
                          ("p3", "v1", True, IMPROVED)])
    assert standing_regressions(recovered, SPEC) == []


def test_a_non_headline_regression_alone_does_not_stand():
    history = _history([("p1", "v1", True, None), ("p2", "v1", True, NO_CHANGE),
                        ("p2", "v0", False, REGRESSED)])
    assert standing_regressions(history, SPEC) == []
    assert is_headline(history, "p2", "v0", SPEC) is False
    assert is_headline(history, "p2", "v1", SPEC) is True
    assert is_headline(history, "p9", "v1", SPEC) is None


def test_the_headline_of_a_night_not_yet_evaluated_under_it_is_the_newest_published():
    history = _history([("p1", "v0", False, None)])
    published = {"v0": START.isoformat(), "v1": (START - timedelta(hours=1)).isoformat()}
    # v0 was published last before p1 was first evaluated... v1 earlier: v0 is the headline.
    assert night_headline(history, "p1", SPEC, published) == "v0"
    published["v0"] = (START - timedelta(hours=2)).isoformat()
    assert night_headline(history, "p1", SPEC, published) == "v1"
    assert night_headline(None, "p1", SPEC, published) is None


def test_the_runs_name_the_code_location_the_workspace_serves():
    (entry,) = yaml.safe_load((REPO / "workspace.yaml").read_text())["load_from"]
    module = entry["python_module"]
    assert (module["location_name"], module["module_name"], module["attribute"]) == (
        LOCATION_NAME, DEFINITIONS_MODULE, DEFINITIONS_ATTRIBUTE)
    tool = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["dagster"]
    assert (tool["code_location_name"], tool["module_name"]) == (LOCATION_NAME,
                                                                DEFINITIONS_MODULE)
