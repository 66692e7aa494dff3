"""The bad-input corpus's cases (written by ``make_bad_inputs.py``), and what every refusal of
one must say: the file, the column, the rule and the rows."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.make_bad_inputs import CORPUS, Case, all_cases

CASES = all_cases()
BAD = [c for c in CASES if not c.ok]
GOOD = [c for c in CASES if c.ok]

MAX_MESSAGE_CHARS = 4000  # however big the input, the message stays a few lines


def case_ids(cases: list[Case]) -> list[str]:
    return [c.id for c in cases]


def assert_explains(message: str, case: Case, path: Path | None = None) -> None:
    """The message names the file, the column and the rule, and points at the rows."""
    path = path or CORPUS / case.path
    assert "Traceback" not in message
    assert len(message) < MAX_MESSAGE_CHARS, message[:500]
    assert f"{path}: invalid input" in message, message
    assert f"column {case.column!r}:" in message, message
    for words in case.words:
        assert words in message, f"{words!r} not in:\n{message}"
    for where in case.rows:  # "line 3" must not be satisfied by "line 30"
        assert re.search(rf"\b{re.escape(where)}\b", message), f"{where!r} not in:\n{message}"
    if case.rows:
        other = "row" if case.rows[0].startswith("line") else "line"
        assert not re.search(rf"\b{other} \d", message), f"rows labelled {other!r}:\n{message}"
