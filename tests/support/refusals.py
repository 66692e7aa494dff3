"""What a test of a refusal holds: the error's type and the names a user acts on (the file, the
column, the rule, the rows; the option, the variable, the offending value), never its
sentences, so that a message can be reworded while the behaviour it reports is held.

``violations_of`` and ``violation`` read a bad-input error's structured fields
(:class:`schemas.errors.InputError`); ``assert_names`` holds any other message, or a CLI's
stderr, to naming each thing as a whole token ("line 3" is not found in "line 30").
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from schemas.errors import InputError, RuleViolation
from schemas.rules.rule import Rule


def _error(raised) -> BaseException:
    """The exception of a ``pytest.raises`` context, or the exception itself."""
    return raised.value if hasattr(raised, "value") and hasattr(raised, "traceback") else raised


def message_of(raised) -> str:
    """The text a user reads: an exception's message, or text (stderr, a step's error) as is."""
    return raised if isinstance(raised, str) else str(_error(raised))


def violations_of(raised) -> list[RuleViolation]:
    """The broken rules of a bad-input refusal; fails when the error is not an InputError."""
    error = _error(raised)
    assert isinstance(error, InputError), f"not bad input: {type(error).__name__}: {error}"
    return list(error.violations)


def violation(raised, column: str, rule: Rule | str | None = None,
              rows: Iterable[int] | None = None, values: Iterable[object] = (),
              source: object = None, count: int | None = None,
              row_label: str | None = None) -> RuleViolation:
    """The one violation of a bad-input refusal that names ``column`` (and ``rule``), held to
    its fields: ``rule`` a declared rule (its words, which a refusal may follow with detail) or
    a word of it; ``rows`` the example rows exactly; ``values`` among the examples (the failing
    values shown); ``source`` the file or folder refused; ``count`` the number of failing
    rows; ``row_label`` what the rows count ("row" of a table, "line" of a text file)."""
    error = _error(raised)
    found = violations_of(error)
    if source is not None:
        assert error.source == str(source), f"source {error.source!r}, expected {str(source)!r}"
    if row_label is not None:
        assert error.row_label == row_label, f"rows counted as {error.row_label!r}:\n{error}"
    named = [v for v in found if v.column == column]
    if rule is not None:
        named = [v for v in named if _says_rule(v.rule, rule)]
    assert len(named) == 1, (f"{len(named)} violation(s) of column {column!r}"
                             + (f" and rule {_words(rule)!r}" if rule is not None else "")
                             + f" in:\n{error}")
    broken = named[0]
    if rows is not None:
        assert broken.rows == tuple(rows), f"rows {broken.rows}, expected {tuple(rows)}:\n{error}"
    for value in values:  # an example is the value as the input holds it, perhaps as text
        assert {repr(value), repr(str(value))} & set(broken.examples), \
            f"{value!r} not among {broken.examples}:\n{error}"
    if count is not None:
        assert broken.count == count, f"count {broken.count}, expected {count}:\n{error}"
    return broken


def _words(rule: Rule | str) -> str:
    return rule.words if isinstance(rule, Rule) else rule


def _says_rule(said: str, rule: Rule | str) -> bool:
    if isinstance(rule, Rule):  # the declared words, perhaps followed by the case's detail
        return said == rule.words or said.startswith(rule.words)
    return has_name(said, rule)


def has_name(text: str, name: object) -> bool:
    """``name`` in ``text`` as a whole token: not a part of a longer word or number."""
    name = os.fspath(name) if isinstance(name, os.PathLike) else str(name)
    before = r"(?<![\w])" if re.match(r"\w", name) else ""
    after = r"(?![\w])" if re.search(r"\w$", name) else ""
    return re.search(before + re.escape(name) + after, text) is not None


def assert_names(raised, *names: object, rows: Iterable[int] = (), row_label: str = "row",
                 absent: Iterable[object] = ()) -> str:
    """The message (of an error, a ``pytest.raises`` context, or text such as stderr) names
    each of ``names`` (a path, a column, an option, a variable, a value) and each of ``rows``
    as "<row_label> <n>"; it names none of ``absent`` and shows no traceback. Returns it."""
    text = message_of(raised)
    assert "Traceback" not in text, text
    for name in (*names, *(f"{row_label} {row}" for row in rows)):
        assert has_name(text, name), f"{str(name)!r} not named in:\n{text}"
    for name in absent:
        assert not has_name(text, name), f"{str(name)!r} named in:\n{text}"
    return text


def refusal_fields(raised) -> tuple:
    """What a bad-input refusal says, field by field: two paths that refuse an input alike
    (the reader and the publisher) give equal fields."""
    error = _error(raised)
    violations_of(error)
    return type(error), error.source, error.row_label, tuple(error.violations)
