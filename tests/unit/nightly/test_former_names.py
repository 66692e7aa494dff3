"""What was written under the nightly comparison's former field names (report.json's
``format_version`` 1, history.parquet's former columns) is read under today's."""

from __future__ import annotations

import json

import polars as pl
import pytest

from evaluation_pipeline.cli import history_command
from evaluation_pipeline.cli import main as cli
from evaluation_pipeline.io.locations import location
from evaluation_pipeline.io.storage import HISTORY_FILE, HISTORY_FOLDER, report_file
from evaluation_pipeline.nightly import verdicts
from evaluation_pipeline.nightly.history import headline_of, read_history, upsert
from schemas.columns import HISTORY_COLUMNS
from tests.support.nightly_week import SPEC, run_week

FORMER = {new: old for old, new in verdicts.FORMER_NAMES.items()}


def written_before(entry: dict) -> dict:
    return {FORMER.get(name, name): value for name, value in entry.items()}


def former_section(section: dict) -> dict:
    """A nightly section as format_version 1 wrote it, from today's."""
    return section | {"comparisons": [
        written_before(c) | {"slices": [written_before(s) for s in c["slices"]]}
        for c in section["comparisons"]]}


@pytest.fixture(scope="module")
def week(tmp_path_factory):
    root = tmp_path_factory.mktemp("week")
    return root, run_week(root)


def regressed_section(outcome: dict) -> tuple[tuple[str, str], dict]:
    return next((key, section) for key, section in outcome["sections"].items()
                if verdicts.regressions(section))


def with_slices(section: dict) -> dict:
    """``section`` with a change by slice on each comparison (the week has no slices)."""
    part = {"slice": "market", "value": "de", "n_paired": 3, "mean_difference": -0.1,
            "difference_low": -0.2, "difference_high": 0.0, "share": 0.5}
    return section | {"comparisons": [c | {"slices": [part]} for c in section["comparisons"]]}


def test_the_former_names_are_every_name_that_changed(week):
    _, outcome = week
    section = with_slices(regressed_section(outcome)[1])
    old = former_section(section)
    assert set(old["comparisons"][0]) - set(section["comparisons"][0]) == {
        "paired", "mean_diff", "ci_low", "ci_high", "p", "p_adjusted", "diff_min", "diff_max"}
    assert set(old["comparisons"][0]["slices"][0]) - set(section["comparisons"][0]["slices"][0]) \
        == {"paired", "mean_diff", "ci_low", "ci_high"}


def test_a_section_written_before_reads_as_todays(week):
    _, outcome = week
    section = with_slices(regressed_section(outcome)[1])
    assert verdicts.current_names(former_section(section)) == section
    assert verdicts.current_names(section) == section
    assert verdicts.current_names(None) is None
    # What the check reads from it: the regressions and their description.
    old = verdicts.current_names(former_section(section))
    assert verdicts.regressions(old) == verdicts.regressions(section)
    assert verdicts.describe_regressions(old) == verdicts.describe_regressions(section)


def test_a_history_with_the_former_columns_reads_as_todays_and_is_rewritten_so(week, tmp_path):
    _, outcome = week
    history = outcome["history"]
    old = history.rename({new: old for new, old in FORMER.items() if new in history.columns})
    assert "mean_diff" in old.columns and "mean_difference" not in old.columns
    path = tmp_path / HISTORY_FILE
    old.write_parquet(path)
    read = read_history(location(path))
    assert read.columns == history.columns == list(HISTORY_COLUMNS)
    assert read.equals(history)
    # The next evaluation's upsert writes today's columns.
    pool, version = outcome["evaluated"][-1]
    rows = history.filter((pl.col("candidate_pool") == pool)
                          & (pl.col("judgment_version") == version))
    assert upsert(old, rows).columns == list(HISTORY_COLUMNS)


def test_ndcg_eval_history_reads_the_former_history_and_report(week, tmp_path, capsys):
    root, outcome = week
    gen = outcome["gen"]
    (root / HISTORY_FOLDER).mkdir(parents=True, exist_ok=True)
    outcome["history"].write_parquet(root / HISTORY_FOLDER / HISTORY_FILE)
    assert cli.main(["history", str(root)]) == 0
    today = capsys.readouterr().out
    history = outcome["history"]
    history.rename({new: old for new, old in FORMER.items() if new in history.columns}
                   ).write_parquet(root / HISTORY_FOLDER / HISTORY_FILE)
    assert cli.main(["history", str(root)]) == 0
    assert capsys.readouterr().out == today
    assert "regressed" in today

    # A report.json of format_version 1 of the regressed night's headline evaluation.
    pool = gen.REGRESSION_NIGHT
    version = headline_of(history, pool, SPEC.spec_id)
    section = outcome["sections"][(pool, version)]
    assert verdicts.regressions(section)
    where = root.joinpath(*report_file(pool, version, SPEC.spec_id))
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(json.dumps({"format_version": 1, "lineage": {"candidate_pool": pool},
                                 "nightly": former_section(section)}))
    report, _ = history_command.night_report(location(root), pool)
    assert report["nightly"] == section
    assert cli.main(["history", str(root), "--night", pool, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["nightly"] == section
