"""The JSON-lines log concurrent runs append to: whole lines, none lost, damage skipped."""

from __future__ import annotations

import json
import multiprocessing

from evaluation_pipeline.io import append_log


def _append_many(path: str, writer: int, count: int) -> None:
    for i in range(count):
        append_log.append(path, lambda records, i=i: {"writer": writer, "i": i})


def test_processes_appending_together_keep_every_line(tmp_path):
    log = tmp_path / "log.jsonl"
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_append_many, args=(str(log), w, 50)) for w in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    records = append_log.read(log).records
    assert sorted((r["writer"], r["i"]) for r in records) == [
        (w, i) for w in range(4) for i in range(50)]


def test_decide_sees_the_lines_there_and_can_add_nothing(tmp_path):
    log = tmp_path / "log.jsonl"

    def once(records):
        return None if any(r["key"] == "a" for r in records) else {"key": "a"}

    assert append_log.append(log, once) == {"key": "a"}
    assert append_log.append(log, once) is None
    assert log.read_text() == '{"key": "a"}\n'


def test_a_torn_last_line_is_skipped_and_closed_before_the_next(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text('{"key": "a"}\n[1, 2]\n{"key": "b", "pay', encoding="utf-8")
    read = append_log.read(log)
    assert read.records == [{"key": "a"}]
    assert [n for n, _ in read.skipped] == [2, 3]
    assert "cut short" in read.skipped[1][1] and "not a JSON object" in read.skipped[0][1]
    append_log.append(log, lambda records: {"key": "c"})
    assert [json.loads(line)["key"] for line in log.read_text().splitlines()
            if line.startswith('{"key": "a"') or line == '{"key": "c"}'] == ["a", "c"]
    assert append_log.read(log).records == [{"key": "a"}, {"key": "c"}]


def test_an_absent_log_has_no_records(tmp_path):
    assert append_log.read(tmp_path / "none.jsonl").records == []
