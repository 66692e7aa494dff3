"""The types of the API's arguments, refused as ``ApiOptionError`` naming the argument.

The CLI gets these types from argparse (``type=int``, ``type=float``, ``store_true``, text
for names) before any check of its own runs; a function call gets whatever the caller passes,
so the API checks the type here, then hands the value to the check the CLI's value goes
through (the spec's cutoffs, ``ReportConfig``, the readers' names, the memory budget). A value
of the wrong type never reaches that code, where it would raise Python's own TypeError or be
read as something else (``2.5`` as 2, ``"tier"`` as four slice columns).
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

from schemas.errors import EvaluationError


class ApiOptionError(EvaluationError):
    """An argument of the Python API that cannot apply: of the wrong type, or an engine that
    is none of them."""


def _refuse(argument: str, expected: str, value: Any) -> ApiOptionError:
    return ApiOptionError(f"{argument} must be {expected}, not {_shown(value)}")


def _shown(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def text(argument: str, value: Any) -> str | None:
    """A name (a ranker, a baseline) as the CLI's text option gives it, or None."""
    if value is None or isinstance(value, str):
        return value
    raise _refuse(argument, "a string (a name)", value)


def whole(argument: str, value: Any) -> int:
    """An integer, as argparse's ``type=int``; a bool is not one (True would count 1)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    raise _refuse(argument, "an integer", value)


def real(argument: str, value: Any) -> float:
    """A number, as argparse's ``type=float``; a bool is not one."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    raise _refuse(argument, "a number", value)


def flag(argument: str, value: Any) -> bool:
    """True or False, as a CLI flag is given or not: a string "no" would be true."""
    if isinstance(value, bool):
        return value
    raise _refuse(argument, "True or False", value)


def names(argument: str, value: Any) -> list[str]:
    """A list of names (columns, spec fields), as a repeated CLI option gives them."""
    if isinstance(value, Iterable) and not isinstance(value, str | bytes):
        listed = list(value)
        if all(isinstance(name, str) for name in listed):
            return listed
    raise _refuse(argument, "a list of strings", value)


def query_id(argument: str, value: Any) -> str:
    """A query id: text, or a whole number read as its text (ids are often numbers)."""
    if isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(value)
    raise _refuse(argument, "a query id (a string)", value)


def size(argument: str, value: Any) -> str | int | None:
    """A memory size as --memory-limit takes it ("2GB"), or a number of bytes, or None; its
    value is the memory budget's to check."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    raise _refuse(argument, "a size such as '2GB' or a number of bytes", value)
