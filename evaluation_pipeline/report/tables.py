"""Three layouts of a table of text cells: aligned (terminal), fixed-width (terminal) and markdown.

``left`` says which columns are left-aligned; the others are right-aligned. A cell None prints
as "n/a".
"""

from __future__ import annotations

from collections.abc import Sequence

from evaluation_pipeline.report.format import NO_NUMBER


def _text(rows: Sequence[Sequence]) -> list[list[str]]:
    return [[NO_NUMBER if v is None else str(v) for v in row] for row in rows]


def aligned(headers: Sequence[str], rows: Sequence[Sequence], left: int = 1) -> str:
    """Columns as wide as their widest cell, a rule under the headers; the first ``left``
    columns left-aligned."""
    cells = _text(rows)
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]

    def line(values: list[str]) -> str:
        return "  ".join(
            v.ljust(w) if i < left else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths))
        ).rstrip()

    return "\n".join([line(list(headers)), line(["-" * w for w in widths]), *map(line, cells)])


def fixed(headers: Sequence[str], rows: Sequence[Sequence], widths: Sequence[int],
          lefts: Sequence[bool], gaps: Sequence[int], indent: str = "") -> list[str]:
    """Columns of the given widths (a longer cell widens its row only), ``gaps[i]`` spaces
    before column i; no rule."""

    def line(values: list[str]) -> str:
        return indent + "".join(
            " " * gap * (i > 0) + (v.ljust(w) if is_left else v.rjust(w))
            for i, (v, w, is_left, gap) in enumerate(zip(values, widths, lefts, gaps))
        )

    return [line(list(headers)), *map(line, _text(rows))]


def markdown(headers: Sequence[str], rows: Sequence[Sequence], lefts: Sequence[bool]) -> list[str]:
    def line(values: Sequence[str]) -> str:
        return "| " + " | ".join(values) + " |"

    rule = "|" + "|".join("---" if is_left else "---:" for is_left in lefts) + "|"
    return [line(headers), rule, *map(line, _text(rows))]
