"""An OpenAI-compatible chat-completions server on 127.0.0.1 for the judge's tests.

It grades each prompt from a hidden grade table: the pair is found by the table's query and
document texts both appearing in the prompt, and answered ``##final score: G``, wrong on a
share ``1 - accuracy`` of the pairs (which ones is fixed by the seed). A wrong grade is off by
one (``wrong="near"``, the default), or any other grade of the scale (``wrong="any"``, drawn
with the same seed): a judge that confuses neighbours and one that is lost. Faults are given
as a script, one per call in order (``faults``), or for every call (``always``):

- ``"429"``: Too Many Requests with ``Retry-After: retry_after``;
- ``"500"``, ``"503"``, ``"401"``, any status: that status, a short JSON error;
- ``"slow"``: the answer after ``slow_seconds`` (past a client's timeout);
- ``"truncated"``: a Content-Length longer than the body, and the connection closed;
- ``"not_json"``: 200 with an HTML page;
- ``"unparseable"``: 200 with a reply that holds no grade;
- ``None``: a normal answer.

It counts calls: ``calls`` in all, ``answered`` per pair (query text, document text) for the
answers it sent whole, and keeps the Authorization headers it received (``authorizations``).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler

from tests.support.webhook import WebhookServer

UNPARSEABLE = "The passage seems useful, but I would rather not commit to a number."


class JudgeServer(WebhookServer):
    def __init__(self, grades: dict[tuple[str, str], int], *, accuracy: float = 1.0,
                 seed: int = 0, faults: list | None = None, always: str | None = None,
                 retry_after: str = "0", slow_seconds: float = 2.0, wrong: str = "near",
                 scale: tuple[int, int] = (0, 3), port: int = 0):
        self.grades = dict(grades)
        self.accuracy = accuracy
        self.seed = seed
        self.faults = list(faults or [])
        self.always = always
        self.retry_after = retry_after
        self.slow_seconds = slow_seconds
        self.wrong = wrong
        self.scale = scale
        self.calls = 0
        self.answered: Counter = Counter()
        self.asked: Counter = Counter()
        self.authorizations: list[str | None] = []
        self.models: list[str] = []
        self._lock = threading.Lock()
        super().__init__(self._answer, port=port, path="/v1", keep_alive=True)
        self.base_url = self.url

    # -- what the tests read ------------------------------------------------------------------
    def grade_of(self, pair: tuple[str, str]) -> int:
        """The grade the server gives ``pair``: the table's, or one off on a wrong pair."""
        true = self.grades[pair]
        digest = hashlib.sha256(f"{self.seed}\0{pair[0]}\0{pair[1]}".encode()).digest()
        if int.from_bytes(digest[:8], "big") / 2**64 < self.accuracy:
            return true
        if self.wrong == "any":
            others = [g for g in range(self.scale[0], self.scale[1] + 1) if g != true]
            return others[int.from_bytes(digest[8:16], "big") % len(others)]
        return true - 1 if true > 0 else true + 1

    # -- answering ----------------------------------------------------------------------------
    def _pair(self, prompt: str) -> tuple[str, str] | None:
        found = [pair for pair in self.grades if pair[0] in prompt and pair[1] in prompt]
        return max(found, key=lambda p: len(p[0]) + len(p[1])) if found else None

    def _answer(self, handler: BaseHTTPRequestHandler, body: dict) -> None:
        with self._lock:
            self.calls += 1
            fault = self.faults.pop(0) if self.faults else self.always
            self.authorizations.append(handler.headers.get("Authorization"))
            self.models.append(body.get("model"))
        prompt = body["messages"][-1]["content"]
        pair = self._pair(prompt)
        with self._lock:
            self.asked[pair] += 1
        if fault == "slow":
            time.sleep(self.slow_seconds)
            fault = None
        if fault == "truncated":
            payload = json.dumps(self._completion("##final score: 1", prompt)).encode()
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload[: len(payload) // 2])
            handler.wfile.flush()
            handler.close_connection = True
            return
        if fault == "not_json":
            self._send(handler, 200, b"<html><body>Bad gateway</body></html>", "text/html")
            return
        if fault is not None and fault != "unparseable":
            status = int(fault)
            headers = {"Retry-After": self.retry_after} if status == 429 else {}
            error = {"error": {"message": f"status {status}", "type": "test"}}
            self._send(handler, status, json.dumps(error).encode(), headers=headers)
            return
        if fault == "unparseable":
            content = UNPARSEABLE
        elif pair is None:
            content = "I do not know this passage."
        else:
            content = f"##final score: {self.grade_of(pair)}"
        payload = json.dumps(self._completion(content, prompt)).encode()
        self._send(handler, 200, payload)
        with self._lock:
            self.answered[pair] += 1

    @staticmethod
    def _completion(content: str, prompt: str) -> dict:
        return {"id": "chatcmpl-test", "object": "chat.completion", "model": "test",
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": 5,
                          "total_tokens": len(prompt.split()) + 5}}

    @staticmethod
    def _send(handler, status: int, payload: bytes, content_type: str = "application/json",
              headers: dict | None = None) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(payload)

