"""``ndcg-eval history``: the trend table, its filters, JSON, and the alerts after it."""

from __future__ import annotations

import json

import polars as pl
import pytest

from evaluation_pipeline.cli import history_command
from evaluation_pipeline.cli import main as cli
from evaluation_pipeline.io.storage import HISTORY_FILE, HISTORY_FOLDER
from tests.support.nightly_week import run_week


@pytest.fixture(scope="module")
def storage(tmp_path_factory):
    root = tmp_path_factory.mktemp("storage")
    week = run_week(root)
    week["history"].write_parquet(root / HISTORY_FOLDER / HISTORY_FILE)
    return root, week["gen"]


def history(argv: list[str], capsys) -> tuple[int, str]:
    code = cli.main(["history", *argv])
    return code, capsys.readouterr().out


def test_the_trend_table_with_verdicts_attributions_and_the_alert(storage, capsys):
    root, gen = storage
    code, out = history([str(root)], capsys)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:5] == ["night", "judgments", "ranker", "measure", "mean"]
    body = [line for line in lines[2:] if line.startswith("pool-")]
    assert len(body) == len(gen.NIGHTLY_POOLS) * len(gen.RANKERS) * 2  # two cutoffs
    regressed = [line for line in body if "regressed" in line]
    assert len(regressed) == 2
    assert all(gen.REGRESSION_NIGHT in line and gen.REGRESSED_RANKER in line
               for line in regressed)
    first = [line for line in body if line.startswith(gen.NIGHTLY_POOLS[0])]
    assert all("first night" in line for line in first)
    changed = [line for line in body if line.startswith(gen.NIGHTLY_POOLS[3])]
    # With both attribution parts (a verdict of "no change" is two words, "inconclusive" one).
    assert all(len(line.split()) - line.count("no change") == 13 for line in changed)
    assert "alert " in out and f"for {gen.REGRESSION_NIGHT}/{gen.JUDGMENT_VERSION_2}/" in out
    assert "not delivered (no webhook configured" in out
    assert f"  NDCG regression in {gen.REGRESSION_NIGHT}" in out


def test_filters_and_json(storage, capsys):
    root, gen = storage
    code, out = history([str(root), "--ranker", gen.NOISY_RANKER, "--cutoff", "10", "--json"],
                        capsys)
    data = json.loads(out)
    assert code == 0
    assert [r["candidate_pool"] for r in data["trend"]] == list(gen.NIGHTLY_POOLS)
    assert {r["ranker"] for r in data["trend"]} == {gen.NOISY_RANKER}
    assert {r["cutoff"] for r in data["trend"]} == {10}
    # Its noise hides a change of min_effect: inconclusive every night, never a change.
    assert {r["verdict"] for r in data["trend"][1:]} == {"inconclusive"}
    assert data["trend"][0]["ready_at"].startswith("2026-12-01T")
    assert len(data["alerts"]) == 1


def test_no_history_is_a_clear_error(tmp_path, capsys):
    assert cli.main(["history", str(tmp_path)]) == 2
    assert "no evaluation history at" in capsys.readouterr().err
    assert issubclass(history_command.HistoryError, cli.EvaluationError)


def test_a_damaged_history_is_named_with_what_to_do(tmp_path, capsys):
    from evaluation_pipeline.cli.main import main

    history = tmp_path / "history" / "history.parquet"
    history.parent.mkdir()
    history.write_bytes(b"PAR1 cut short")
    assert main(["history", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{history}: the evaluation history is not a readable Parquet file" in err
    assert "move it aside" in err and "Traceback" not in err


def test_a_damaged_alert_log_is_named_and_the_history_still_prints(storage, tmp_path, capsys,
                                                                  caplog):
    """A foreign line, a JSON line that is no alert and a torn last line (a full disk) in
    alerts.jsonl: each is named, and the trend and the alert recorded before them still print."""
    import shutil

    root, gen = storage
    copy = tmp_path / "storage"
    shutil.copytree(root, copy)
    alerts = copy / HISTORY_FOLDER / "alerts.jsonl"
    lines = alerts.read_text().splitlines()
    alerts.write_text("\n".join(["not json at all", *lines, '{"other": "tool"}'])
                      + '\n{"key": "cut')
    with caplog.at_level("WARNING"):
        code, out = history([str(copy)], capsys)
    assert code == 0
    assert f"for {gen.REGRESSION_NIGHT}/{gen.JUDGMENT_VERSION_2}/" in out
    warnings = "\n".join(r.getMessage() for r in caplog.records)
    assert f"{alerts}: line 1 skipped: not JSON" in warnings
    assert f"line {len(lines) + 3} skipped: a last line cut short" in warnings
    assert "1 JSON line(s) without a string 'key'" in warnings


def test_the_regressions_are_set_apart_with_their_drill_down(storage):
    """What `make run` prints before the week's trend: only the regressed rows, and the command
    that drills into each regressed night."""
    root, gen = storage
    block = history_command.render_regressions(history_command.trend_rows(root), root)
    lines = block.splitlines()
    assert lines[0] == "REGRESSIONS (against the previous night):"
    rows = [line.split() for line in lines[3:] if line.startswith("pool-")]
    assert [(r[0], r[2], r[3]) for r in rows] == [
        (gen.REGRESSION_NIGHT, gen.REGRESSED_RANKER, "NDCG@5"),
        (gen.REGRESSION_NIGHT, gen.REGRESSED_RANKER, "NDCG@10")]
    assert all(float(r[4]) < 0 and r[-1] != gen.REGRESSION_NIGHT for r in rows)
    assert lines[-1] == f"drill down: ndcg-eval history {root} --night {gen.REGRESSION_NIGHT}"
    # Of one spec among several (make run's week on a storage that holds another's): the
    # drill-down names it, and the trend is that spec's alone.
    (spec_id,) = set(history_command.trend_rows(root)["spec_id"])
    assert history_command.trend_rows(root, spec_id="0" * 16).is_empty()
    block = history_command.render_regressions(
        history_command.trend_rows(root, spec_id=spec_id), root, spec_id)
    assert block.splitlines()[-1] == (
        f"drill down: ndcg-eval history {root} --night {gen.REGRESSION_NIGHT} --spec-id {spec_id}")
    calm = history_command.trend_rows(root).filter(pl.col("verdict") != "regressed")
    assert history_command.render_regressions(calm, root) == (
        "No ranker regressed against its previous night.")
