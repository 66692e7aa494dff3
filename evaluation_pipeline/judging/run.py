"""The pairs through the cache and the judge: answers already paid for are read from the cache,
the others asked of the judge by at most ``concurrency`` threads at once, each answer stored as
it arrives, within a token budget and a total deadline.

The pair budget is the caller's (the first N pairs of the worklist, the most useful first).
The token budget counts the tokens this run pays for (a cached answer is free): once they reach
it no further pair is sent, the pairs in flight are still answered, and the pairs left are
named as not judged. A pair the judge cannot answer, or the deadline, stops the run: the
answers so far stay in the cache for the next run, and nothing is written.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

import polars as pl

from evaluation_pipeline.judging.cache import AnswerCache, cache_key
from evaluation_pipeline.judging.client import DeadlinePassed, JudgeClient, Reply
from evaluation_pipeline.judging.progress import Progress
from evaluation_pipeline.judging.prompt import Template, parse_grade, passage


@dataclass(frozen=True)
class Judged:
    query_id: str
    doc_id: str
    key: str  # the cache key of its question
    reply: Reply
    grade: int | None  # None: unknown
    reason: str | None  # why unknown
    cached: bool


@dataclass(frozen=True)
class Outcome:
    judged: list[Judged]  # in the pairs' order
    not_judged: int  # pairs the token budget left
    tokens: int  # tokens paid for in this run (cached answers are free)
    calls: int  # answers the judge gave in this run


@dataclass(frozen=True)
class _Question:
    index: int
    query_id: str
    doc_id: str
    prompt: str
    key: str


def judge_pairs(pairs: pl.DataFrame, template: Template, client: JudgeClient,
                cache: AnswerCache, *, concurrency: int = 4, deadline: float | None = None,
                budget_tokens: int | None = None, progress: Progress | None = None,
                clock: Callable[[], float] = time.monotonic) -> Outcome:
    """Judge each row of ``pairs`` (query_id, doc_id, query_text, title, text), in order.

    ``deadline``: seconds from now the whole run may take. Raises ``JudgeFailed`` (or its
    ``DeadlinePassed``) when a pair cannot be answered in time."""
    ends = None if deadline is None else clock() + deadline
    questions = [_question(i, row, template, client) for i, row in
                 enumerate(pairs.iter_rows(named=True))]
    found: dict[int, Judged] = {}
    to_ask = []
    for question in questions:
        reply = cache.get(question.key)
        if reply is None:
            to_ask.append(question)
            continue
        found[question.index] = _judged(question, reply, template, cached=True)
        if progress:
            progress.update(cached=True, tokens=0)

    def ask(question: _Question) -> Reply:
        reply = client.complete(question.prompt, ends)
        cache.put(question.key, reply, client.model, template.sha256)  # paid: kept at once
        return reply

    tokens = calls = 0
    waiting = iter(to_ask)
    in_flight: dict[Future, _Question] = {}
    out_of_budget = False
    executor = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="judge")
    try:
        while True:
            while len(in_flight) < concurrency and not out_of_budget:
                if budget_tokens is not None and tokens >= budget_tokens:
                    out_of_budget = True
                    break
                question = next(waiting, None)
                if question is None:
                    break
                in_flight[executor.submit(ask, question)] = question
            if not in_flight:
                break
            left = None if ends is None else max(0.0, ends - clock())
            done, _ = wait(in_flight, timeout=left, return_when=FIRST_COMPLETED)
            if not done:
                raise DeadlinePassed(f"the deadline ({deadline:g} s) passed with "
                                     f"{len(found)} of {len(questions)} pairs answered")
            for future in done:
                question = in_flight.pop(future)
                reply = future.result()  # JudgeFailed: the run stops
                calls += 1
                tokens += reply.tokens
                found[question.index] = _judged(question, reply, template, cached=False)
                if progress:
                    progress.update(cached=False, tokens=reply.tokens)
    finally:
        # Nothing more is sent; a request in flight ends within its timeout, which the
        # deadline bounds.
        executor.shutdown(wait=True, cancel_futures=True)
    judged = [found[i] for i in sorted(found)]
    return Outcome(judged, len(questions) - len(judged), tokens, calls)


def _question(index: int, row: dict, template: Template, client: JudgeClient) -> _Question:
    document = passage(row["title"], row["text"])
    prompt = template.render(row["query_text"], row["title"], row["text"])
    key = cache_key(template.sha256, client.model, client.parameters, row["query_text"],
                    document)
    return _Question(index, row["query_id"], row["doc_id"], prompt, key)


def _judged(question: _Question, reply: Reply, template: Template, cached: bool) -> Judged:
    grade, reason = parse_grade(reply.content, template.grades)
    if grade is None and reply.finish_reason == "length":
        reason += "; the reply was cut at max_tokens"
    return Judged(question.query_id, question.doc_id, question.key, reply, grade, reason,
                  cached)
