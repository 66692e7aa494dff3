"""One chat completion from an OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp's
server and others), as a service client makes it: a timeout per request, retries with
exponential backoff and jitter on 429, 5xx, timeouts, dropped connections and truncated or
malformed bodies, ``Retry-After`` honoured, and never past the run's deadline.

A status that retrying cannot change (400, 401, 403, 404, ...) fails at once. The API key is
sent as a bearer token and kept out of every message: a server's words that echo it are
redacted.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit, urlunsplit

import httpx

from evaluation_pipeline import __version__

CHAT_COMPLETIONS = "/chat/completions"
RETRIED_STATUSES = frozenset({408, 409, 425, 429})  # and every 5xx
EXCERPT = 200  # characters of a server's error body kept in a message
REDACTED = "[redacted]"


class JudgeFailed(RuntimeError):
    """The judge could not answer a pair: its last error, after the retries."""


class DeadlinePassed(JudgeFailed):
    """The run's deadline passed before every pair was answered."""


@dataclass(frozen=True)
class Reply:
    content: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None = None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def endpoint(url: str) -> str:
    """``url``'s chat-completions endpoint: the URL itself when it ends in /chat/completions,
    else that path appended (``http://127.0.0.1:8000/v1`` -> ``.../v1/chat/completions``)."""
    url = url.strip()
    if url.rstrip("/").endswith(CHAT_COMPLETIONS):
        return url.rstrip("/")
    return url.rstrip("/") + CHAT_COMPLETIONS


def shown(url: str) -> str:
    """``url`` without a user or password in it: how messages name it."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit(parts._replace(netloc=netloc))


@dataclass(frozen=True)
class Retries:
    attempts: int = 6  # the first try and five retries
    base: float = 0.5  # seconds before the first retry; doubled each time, jittered
    cap: float = 30.0  # seconds: the longest backoff (a Retry-After may ask for more)

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Equal jitter: half the doubled delay, plus up to as much again at random."""
        delay = min(self.cap, self.base * 2 ** attempt)
        return delay / 2 + rng.uniform(0, delay / 2)


class JudgeClient:
    """Chat completions of one model at one endpoint; safe to share between threads."""

    def __init__(self, url: str, model: str, *, api_key: str | None = None,
                 temperature: float = 0.0, max_tokens: int | None = None,
                 timeout: float = 60.0, retries: Retries | None = None,
                 transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic, seed: int | None = None):
        self.url = endpoint(url)
        self.model = model
        self.temperature = float(temperature)
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.retries = retries or Retries()
        self._secret = api_key or None
        self._sleep, self._clock = sleep, clock
        self._rng = random.Random(seed)
        headers = {"User-Agent": f"ndcg-eval/{__version__}", "Accept": "application/json"}
        if self._secret:
            headers["Authorization"] = f"Bearer {self._secret}"
        self._http = httpx.Client(headers=headers, transport=transport, follow_redirects=False)

    @property
    def parameters(self) -> dict:
        """The sampling parameters sent with every prompt (and part of the cache key)."""
        return {"temperature": self.temperature, "max_tokens": self.max_tokens}

    def close(self) -> None:
        self._http.close()

    def complete(self, prompt: str, deadline: float | None = None) -> Reply:
        """The model's reply to ``prompt`` as the one user message; ``deadline``: a time of
        ``clock`` after which no request is started nor waited for."""
        body = {"model": self.model, "messages": [{"role": "user", "content": prompt}],
                "temperature": self.temperature, "stream": False}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        last = "no attempt"
        for attempt in range(self.retries.attempts):
            timeout = self._time_left(deadline, last)
            wait = 0.0
            try:
                response = self._http.post(self.url, json=body, timeout=timeout)
            except httpx.TimeoutException:
                last = f"no answer within {timeout:g} s"
            except httpx.TransportError as exc:  # refused, reset, a body cut short
                last = f"{type(exc).__name__}: {self._redact(str(exc))}"
            else:
                status = response.status_code
                if status == 200:
                    try:
                        return _reply(response)
                    except ValueError as exc:
                        last = f"a malformed answer ({exc})"
                elif status in RETRIED_STATUSES or status >= 500:
                    last = f"HTTP {status}{self._excerpt(response)}"
                    wait = _retry_after(response)
                else:
                    raise JudgeFailed(f"{shown(self.url)} answered HTTP {status}"
                                      f"{self._excerpt(response)}; not retried") from None
            if attempt + 1 == self.retries.attempts:
                break
            delay = max(wait, self.retries.backoff(attempt, self._rng))
            if deadline is not None and self._clock() + delay >= deadline:
                raise DeadlinePassed(f"the deadline passed while {shown(self.url)} was "
                                     f"retried (last: {last})")
            self._sleep(delay)
        raise JudgeFailed(f"{shown(self.url)}: {last}, after {self.retries.attempts} attempts")

    def _time_left(self, deadline: float | None, last: str) -> float:
        if deadline is None:
            return self.timeout
        left = deadline - self._clock()
        if left <= 0:
            raise DeadlinePassed(f"the deadline passed before {shown(self.url)} answered"
                                 + ("" if last == "no attempt" else f" (last: {last})"))
        return min(self.timeout, left)

    def _excerpt(self, response: httpx.Response) -> str:
        try:
            text = response.text.strip()
        except (httpx.HTTPError, UnicodeDecodeError):
            return ""
        text = self._redact(" ".join(text.split()))
        return f": {text[:EXCERPT]}" if text else ""

    def _redact(self, text: str) -> str:
        return text.replace(self._secret, REDACTED) if self._secret else text


def _reply(response: httpx.Response) -> Reply:
    """The first choice's message and the usage of a chat-completions answer; ValueError for a
    body that is not one (cut short, not JSON, no choices)."""
    try:
        data = json.loads(response.content)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"not JSON: {exc.msg if hasattr(exc, 'msg') else exc}") from None
    try:
        choice = data["choices"][0]
        content = choice["message"].get("content")
    except (KeyError, IndexError, TypeError, AttributeError):
        raise ValueError("no choices[0].message in it") from None
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    try:
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        completion_tokens = int(usage.get("completion_tokens") or 0)
    except (TypeError, ValueError):
        prompt_tokens = completion_tokens = 0
    return Reply("" if content is None else str(content), prompt_tokens, completion_tokens,
                 choice.get("finish_reason"))


def _retry_after(response: httpx.Response) -> float:
    """Seconds the server asks to wait (``Retry-After``: seconds or an HTTP date), else 0."""
    value = response.headers.get("retry-after")
    if not value:
        return 0.0
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return 0.0
    return max(0.0, when.timestamp() - time.time())
