"""The judge's progress line on stderr: pairs done of all, how many came from the cache, tokens
spent and their estimated cost. On a terminal the line is redrawn in place; otherwise (a log)
a line is written at most every ``interval`` seconds, and at the end."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO


def cost_text(tokens: int, price_per_1k: float | None) -> str:
    return "no price given" if not price_per_1k else f"est. ${tokens * price_per_1k / 1000:,.4f}"


class Progress:
    def __init__(self, total: int, price_per_1k: float | None = None,
                 stream: TextIO | None = None, interval: float = 5.0,
                 clock: Callable[[], float] = time.monotonic):
        self.total = total
        self.price = price_per_1k
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval
        self._clock = clock
        self._shown_at: float | None = None
        self._terminal = bool(getattr(self.stream, "isatty", lambda: False)())
        self.done = self.cached = self.tokens = 0

    def line(self) -> str:
        return (f"judge: {self.done}/{self.total} pairs ({self.cached} from the cache), "
                f"{self.tokens:,} tokens, {cost_text(self.tokens, self.price)}")

    def update(self, *, cached: bool, tokens: int) -> None:
        self.done += 1
        self.cached += cached
        self.tokens += tokens
        now = self._clock()
        if self._terminal:
            self.stream.write("\r" + self.line())
            self.stream.flush()
        elif self._shown_at is None or now - self._shown_at >= self.interval:
            self._shown_at = now
            self.stream.write(self.line() + "\n")
            self.stream.flush()

    def finish(self) -> None:
        self.stream.write(("\r" if self._terminal else "") + self.line() + "\n")
        self.stream.flush()
