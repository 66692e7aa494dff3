"""Every setting the pipeline reads while it runs is checked when its definitions are built,
before anything is written, and a bad one is named with its variable."""

from __future__ import annotations

import pytest

from evaluation_pipeline import settings
from evaluation_pipeline.definitions import build_definitions
from schemas.errors import EvaluationError


@pytest.mark.parametrize("variable, value, says", [
    (settings.ALPHA, "abc", "is not a number above 0 and at most 1"),
    (settings.ALPHA, "1.5", "at most 1"),
    (settings.MIN_EFFECT, "-1", "is not a number at least 0"),
    (settings.LOCK_TIMEOUT, "soon", "is not a number above 0"),
    (settings.NIGHTLY_CRON, "bogus", "is not a cron string"),
    (settings.NIGHTLY_TIMEZONE, "Mars/Base", "is not a time zone"),
    (settings.ENGINE, "fast", "is not an engine"),
    (settings.MEMORY_LIMIT, "lots", "is not a size"),
    (settings.STORAGE_OPTIONS, "{endpoint", "is not JSON"),
    (settings.ALERT_WEBHOOK, "hooks.example.com/T000/B000", "is not a URL to POST to"),
])
def test_a_bad_setting_is_named_before_anything_is_written(variable, value, says, tmp_path,
                                                           monkeypatch):
    monkeypatch.setenv(variable.name, value)
    storage = tmp_path / "storage"
    with pytest.raises(EvaluationError, match=says) as raised:
        build_definitions(storage_base=str(storage))
    assert variable.name in str(raised.value)
    assert not storage.exists()


def test_the_main_job_names_a_bad_lock_timeout_and_runs_nothing(tmp_path, monkeypatch, capsys):
    from evaluation_pipeline import main_job

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(settings.LOCK_TIMEOUT.name, "soon")
    assert main_job.main() == 2
    assert f"{settings.LOCK_TIMEOUT.name}='soon' is not a number" in capsys.readouterr().err
    assert not (tmp_path / "home").exists()
