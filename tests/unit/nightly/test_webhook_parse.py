"""A webhook URL the URL parser itself refuses (a bracketed host cut short, or one that is no
IPv6 address) is an EvaluationError naming the variable, where it was a ValueError traceback."""

from __future__ import annotations

import pytest

from evaluation_pipeline import settings
from evaluation_pipeline.nightly.alerts import AlertSettings
from evaluation_pipeline.settings import ALERT_WEBHOOK
from schemas.errors import EvaluationError


@pytest.mark.parametrize("url", ["http://[::1/", "http://[zz]/hook"])
def test_a_webhook_that_cannot_be_parsed_is_an_evaluation_error_naming_the_variable(url):
    with pytest.raises(EvaluationError, match=ALERT_WEBHOOK.name) as raised:
        AlertSettings(webhook=url).check()
    assert "cannot be parsed" in str(raised.value)


def test_the_main_job_names_an_unparsable_webhook_without_a_traceback(tmp_path, monkeypatch,
                                                                      capsys):
    from evaluation_pipeline import main_job

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(settings.DEV.name, "1")  # the job sets it: undone after
    monkeypatch.setenv(settings.STORAGE.name, str(tmp_path / "storage"))
    monkeypatch.setenv(ALERT_WEBHOOK.name, "http://[::1/")
    assert main_job.main() == 2
    err = capsys.readouterr().err
    assert ALERT_WEBHOOK.name in err and "cannot be parsed" in err
    assert "Traceback" not in err and len(err.splitlines()) == 1
