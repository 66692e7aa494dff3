"""The judge's client against the test server's faults: 429 with Retry-After, 5xx, slow
answers, truncated and malformed bodies are retried with backoff; a status retrying cannot
change fails at once; the deadline is never passed; the endpoint is found from a base URL."""

from __future__ import annotations

import time

import pytest

from evaluation_pipeline.judging.client import (
    DeadlinePassed,
    JudgeClient,
    JudgeFailed,
    Retries,
    endpoint,
    shown,
)
from tests.support.judge_server import JudgeServer

PAIR = ("pump seal leak", "Replace the mechanical seal.")
PROMPT = f"Query: {PAIR[0]}\nPassage: {PAIR[1]}\n"


def client(server, sleeps=None, **kwargs):
    kwargs.setdefault("retries", Retries(attempts=4, base=0.01, cap=0.05))
    sleep = (lambda s: sleeps.append(s)) if sleeps is not None else time.sleep
    return JudgeClient(server.base_url, "test-model", sleep=sleep, seed=1, **kwargs)


def test_the_endpoint_of_a_base_url_and_a_full_one():
    assert endpoint("http://h:8000/v1") == "http://h:8000/v1/chat/completions"
    assert endpoint("http://h:8000/v1/") == "http://h:8000/v1/chat/completions"
    assert endpoint("http://h/x/chat/completions") == "http://h/x/chat/completions"
    assert shown("https://user:pw@h:1/v1") == "https://h:1/v1"


def test_a_plain_answer():
    with JudgeServer({PAIR: 2}) as server:
        reply = client(server).complete(PROMPT)
    assert reply.content == "##final score: 2" and reply.completion_tokens == 5
    assert reply.tokens == reply.prompt_tokens + 5 and server.calls == 1


@pytest.mark.parametrize("fault", ["429", "500", "503", "truncated", "not_json"])
def test_a_passing_fault_is_retried(fault):
    sleeps = []
    with JudgeServer({PAIR: 3}, faults=[fault, fault]) as server:
        reply = client(server, sleeps).complete(PROMPT)
    assert reply.content == "##final score: 3"
    assert server.calls == 3 and len(sleeps) == 2
    assert sleeps[1] >= sleeps[0] * 0.5  # doubled, with jitter


def test_retry_after_is_honoured():
    sleeps = []
    with JudgeServer({PAIR: 1}, faults=["429"], retry_after="0.3") as server:
        client(server, sleeps).complete(PROMPT)
    assert sleeps == [pytest.approx(0.3)]


def test_a_slow_answer_times_out_and_is_asked_again():
    with JudgeServer({PAIR: 1}, faults=["slow"], slow_seconds=1.0) as server:
        reply = client(server, timeout=0.2).complete(PROMPT)
    assert reply.content == "##final score: 1" and server.calls == 2


def test_retries_spent_fail_with_the_last_error():
    with JudgeServer({PAIR: 1}, always="503") as server:
        with pytest.raises(JudgeFailed, match=r"HTTP 503.*after 4 attempts"):
            client(server).complete(PROMPT)
        assert server.calls == 4


@pytest.mark.parametrize("status", ["400", "401", "404"])
def test_a_status_retrying_cannot_change_fails_at_once(status):
    with JudgeServer({PAIR: 1}, always=status) as server:
        with pytest.raises(JudgeFailed, match=f"HTTP {status}.*not retried"):
            client(server).complete(PROMPT)
        assert server.calls == 1


def test_no_wait_goes_past_the_deadline():
    sleeps = []
    with JudgeServer({PAIR: 1}, faults=["429"], retry_after="30") as server:
        with pytest.raises(DeadlinePassed, match="deadline passed while"):
            client(server, sleeps).complete(PROMPT, deadline=time.monotonic() + 2)
    assert sleeps == []


def test_a_slow_answer_is_not_waited_for_past_the_deadline():
    with JudgeServer({PAIR: 1}, always="slow", slow_seconds=3) as server:
        started = time.monotonic()
        with pytest.raises(DeadlinePassed):
            client(server).complete(PROMPT, deadline=time.monotonic() + 0.5)
    assert time.monotonic() - started < 2


def test_the_key_is_sent_and_kept_out_of_messages():
    with JudgeServer({PAIR: 1}, always="401") as server:
        judge = client(server, api_key="sk-test-0123456789")
        with pytest.raises(JudgeFailed) as failed:
            judge.complete(PROMPT)
    assert server.authorizations == ["Bearer sk-test-0123456789"]
    assert "sk-test" not in str(failed.value)


def test_no_key_sends_no_authorization():
    with JudgeServer({PAIR: 1}) as server:
        client(server).complete(PROMPT)
    assert server.authorizations == [None]
