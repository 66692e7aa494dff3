"""File-name-safe names for judgment versions and candidate pools (contract section 1).

A name becomes a path component, so it is checked before any path is built from it.
"""

from __future__ import annotations

import re

SAFE_NAME_PATTERN = r"^[A-Za-z0-9._-]+$"
MAX_NAME_LENGTH = 200
_SAFE_NAME = re.compile(r"[A-Za-z0-9._-]+")


class UnsafeNameError(ValueError):
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
