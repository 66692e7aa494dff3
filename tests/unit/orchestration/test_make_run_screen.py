"""What `make run` prints around the week: the hint names `make ui`'s port as make was given
it, and the instance it writes sends no usage statistics (no banner opens the output)."""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml

from evaluation_pipeline import settings
from evaluation_pipeline.main_job import INSTANCE_YAML, UI_PORT, week_hint
from evaluation_pipeline.orchestration.example_week import WEEK_SPEC, week_spec


def _hint(tmp_path: Path) -> tuple[str, list[str]]:
    text = week_hint(tmp_path / "home", str(tmp_path / "storage"), tmp_path / "landing",
                     tmp_path / "queries.csv", str(WEEK_SPEC))
    first, command = text.splitlines()
    return first, shlex.split(command)


def test_the_hint_names_port_3000_without_ui_port(tmp_path, monkeypatch):
    monkeypatch.delenv(UI_PORT, raising=False)
    first, words = _hint(tmp_path)
    assert "`make ui` (http://127.0.0.1:3000)" in first
    assert words[-2:] == ["-p", "3000"]


def test_the_hint_names_the_port_make_ui_was_given(tmp_path, monkeypatch):
    monkeypatch.setenv(UI_PORT, "3117")
    first, words = _hint(tmp_path)
    assert "`make ui` (http://127.0.0.1:3117)" in first and "3000" not in first
    assert words[-2:] == ["-p", "3117"]
    assert f"DAGSTER_HOME={tmp_path / 'home'}" in words


def test_the_hint_names_the_spec_the_week_ran_under(tmp_path, monkeypatch):
    # The sensors of a UI started without it would evaluate under the packaged spec instead.
    _, words = _hint(tmp_path)
    assert f"{settings.SPEC.name}={WEEK_SPEC}" in words


def test_the_week_runs_under_the_trec_dl_set_unless_a_spec_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv(settings.SPEC.name, raising=False)
    assert week_spec() == str(WEEK_SPEC) and WEEK_SPEC.name == "trec_dl_spec.yaml"
    monkeypatch.setenv(settings.SPEC.name, str(tmp_path / "mine.yaml"))
    assert week_spec() == str(tmp_path / "mine.yaml")


def test_the_instance_make_run_writes_has_telemetry_off():
    assert yaml.safe_load(INSTANCE_YAML)["telemetry"] == {"enabled": False}
