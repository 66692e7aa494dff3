"""A docs page's generated part: the text between two marker lines, written by a command from
the declarations it is made of (docs/spec.md's table of the spec's fields, its grammar and table
of the measures). One splice and one command's run, for every such writer."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path


class PageError(Exception):
    """The page lacks the markers its generated part is written between, or what it links to."""


def spliced(page_text: str, begin: str, end: str, body: str, page: str) -> str:
    """``page_text`` with ``body`` between its ``begin`` and ``end`` lines (each there once,
    in order)."""
    if (page_text.count(begin) != 1 or page_text.count(end) != 1
            or page_text.index(end) < page_text.index(begin)):
        raise PageError(f"{page}: needs the lines {begin!r} and {end!r} once each, in order")
    head, rest = page_text.split(begin)
    tail = rest.split(end)[1]
    return f"{head}{begin}\n\n{body}\n{end}{tail}"


def regenerate(argv: list[str] | None, *, command: str, default: Path, what: str,
               be: str, written: Callable[[str, Path], str]) -> int:
    """A writer's command: ``command [PAGE]`` rewrites PAGE (``default``) with ``written(text,
    page)``, saying whether ``what`` (``be``: is or are) was up to date; exit 2, with the
    reason, on a page it cannot read or write into."""
    arguments = sys.argv[1:] if argv is None else argv
    if len(arguments) > 1:
        print(f"usage: {command} [PAGE]", file=sys.stderr)
        return 2
    page = Path(arguments[0]) if arguments else default
    try:
        text = page.read_text(encoding="utf-8")
        new = written(text, page)
    except (OSError, PageError) as exc:
        print(f"{command}: {exc}", file=sys.stderr)
        return 2
    if new == text:
        print(f"{page}: {what} {be} up to date")
    else:
        page.write_text(new, encoding="utf-8")
        print(f"{page}: wrote {what}")
    return 0
