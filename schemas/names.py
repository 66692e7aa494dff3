"""File-name-safe names for judgment versions and candidate pools (contract section 1).

A name becomes a path component, so it is checked before any path is built from it.
"""

from __future__ import annotations

import re

import polars as pl

from schemas.errors import EvaluationError

SAFE_NAME_PATTERN = r"^[A-Za-z0-9._-]+$"
MAX_NAME_LENGTH = 200
_SAFE_NAME = re.compile(r"[A-Za-z0-9._-]+")

# What SAFE_NAME_PATTERN cannot say: "." and ".." match it but name folders, and a name is
# bounded so that a path built from it stays valid.
NAME_LIMITS_RULE = f"must not be '.' or '..' and must be at most {MAX_NAME_LENGTH} characters"


def name_within_limits(column: str) -> pl.Expr:
    """True where ``column`` is neither ``.`` nor ``..`` and at most MAX_NAME_LENGTH long."""
    name = pl.col(column)
    return (~name.is_in([".", ".."]) & (name.str.len_chars() <= MAX_NAME_LENGTH)).fill_null(True)


class UnsafeNameError(EvaluationError):
    """A version or pool name that is not safe as a single file name."""


def check_safe_name(name: object, what: str) -> str:
    """Return ``name`` if it is a safe file name (``[A-Za-z0-9._-]+``, not ``.`` or ``..``)."""
    if not isinstance(name, str):
        raise UnsafeNameError(f"{what} name must be a string, got {type(name).__name__}")
    if name in (".", ".."):
        raise UnsafeNameError(f"{what} name {name!r} is refused: it names a directory")
    if len(name) > MAX_NAME_LENGTH:
        raise UnsafeNameError(
            f"{what} name of {len(name)} characters is refused: at most {MAX_NAME_LENGTH}"
        )
    if not _SAFE_NAME.fullmatch(name):
        raise UnsafeNameError(
            f"{what} name {name!r} is refused: use only letters, digits, '.', '_' and '-' "
            "(no path separators, spaces or control characters)"
        )
    return name


def is_safe_name(name: object) -> bool:
    """Whether :func:`check_safe_name` accepts ``name``."""
    try:
        check_safe_name(name, "")
    except UnsafeNameError:
        return False
    return True
