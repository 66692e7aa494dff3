"""Errors of an object store's client reach the user as a message, not a traceback."""

from __future__ import annotations

import pytest

from evaluation_pipeline import settings
from evaluation_pipeline.cli import main as cli
from tests.support.refusals import assert_names


def test_missing_credentials_are_a_message_naming_where_they_come_from(monkeypatch, capsys):
    botocore = pytest.importorskip("botocore.exceptions")

    def fails(args):
        try:
            raise botocore.NoCredentialsError()
        except Exception as exc:  # as s3fs re-raises it: an OSError caused by the client's
            raise OSError("could not reach the bucket") from exc

    monkeypatch.setitem(cli.COMMANDS, "history", fails)
    assert cli.main(["history", "s3://bucket/ndcg"]) == 2
    # What failed, and where credentials and the endpoint come from.
    assert_names(capsys.readouterr().err, "object storage", "AWS_ACCESS_KEY_ID",
                 settings.STORAGE_OPTIONS.name, "--storage-options")


def test_other_errors_are_not_taken_for_the_storage_s(monkeypatch):
    monkeypatch.setitem(cli.COMMANDS, "history", lambda args: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        cli.main(["history", "s3://bucket/ndcg"])
