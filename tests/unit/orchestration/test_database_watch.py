"""The database watch ends the process when one statement or connection waits longer than its
timeout, naming the database; quick ones, and connections that fail, never trip it."""

from __future__ import annotations

import sqlite3
import time

import pytest
import sqlalchemy as sa

from evaluation_pipeline.orchestration.liveness import (
    EXIT_NO_ANSWER,
    DatabaseWatch,
    database_failure,
    failure_message,
)

# Some seconds of work for SQLite: a statement that waits as a frozen server's would.
SLOW = ("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000000) "
        "SELECT count(*) FROM n")


def test_a_statement_waiting_past_the_timeout_ends_the_process_naming_the_database(
        tmp_path, capsys):
    exits = []
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'runs.db'}")
    with DatabaseWatch(0.5, exit=exits.append), engine.connect() as connection:
        started = time.monotonic()
        connection.execute(sa.text(SLOW))
        took = time.monotonic() - started
    assert took > 1.0, "the statement was too quick to test the watch"
    assert exits == [EXIT_NO_ANSWER]
    err = capsys.readouterr().err
    assert f"database sqlite:///{tmp_path / 'runs.db'} has not answered a statement" in err
    assert "NDCG_EVAL_DATABASE_TIMEOUT=0.5" in err


def test_quick_statements_and_failed_connections_do_not_trip_it(tmp_path):
    exits = []
    with DatabaseWatch(0.3, exit=exits.append):
        engine = sa.create_engine(f"sqlite:///{tmp_path / 'runs.db'}")
        for _ in range(20):
            with engine.connect() as connection:
                connection.execute(sa.text("SELECT 1"))
        missing = sa.create_engine(f"sqlite:///{tmp_path / 'no' / 'such' / 'runs.db'}")
        with pytest.raises(sa.exc.OperationalError):
            missing.connect()
        time.sleep(1.0)  # the failed connection's wait has ended with it
    assert exits == []


def test_a_database_failure_is_found_in_the_chain_and_worded_with_what_to_do(tmp_path):
    try:
        try:
            raise sqlite3.DatabaseError("file is not a database")
        except sqlite3.DatabaseError as inner:
            raise RuntimeError("the storage failed") from inner
    except RuntimeError as exc:
        words = database_failure(exc)
    assert words == "file is not a database"
    assert database_failure(ValueError("no")) is None
    message = failure_message(words, "sqlite:////h/history/runs.db", tmp_path)
    assert "runs.db failed: file is not a database" in message and "move it aside" in message
    assert "server runs" in failure_message("too many retries", "postgresql://h:5/db", tmp_path)
