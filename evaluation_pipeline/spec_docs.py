"""docs/spec.md's table of the spec's fields, written from their declarations.

    python -m evaluation_pipeline.spec_docs [PAGE]

writes the table between PAGE's markers (PAGE: docs/spec.md under the current folder); each
row's contract section links to the heading of CONTRACT.md beside the page. A test holds the
committed table to the one the declarations give, and names this command when they differ.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from evaluation_pipeline.io.generated_pages import PageError, regenerate, spliced
from evaluation_pipeline.spec import FIELDS

COMMAND = "python -m evaluation_pipeline.spec_docs"
PAGE = Path("docs/spec.md")
BEGIN = (f"<!-- The spec's fields, written by `{COMMAND}` from their declarations in "
         "evaluation_pipeline/spec.py: edit those, not this table. -->")
END = "<!-- End of the spec's fields. -->"
CONTRACT = "CONTRACT.md"
_SECTION = re.compile(r"^## (\d+)\. (.+)$", re.MULTILINE)


def section_anchors(contract: str) -> dict[int, str]:
    """Each numbered section of the contract's text and its heading's anchor, as GitHub makes
    it (lower case, punctuation dropped, spaces as hyphens)."""
    anchors = {}
    for number, title in _SECTION.findall(contract):
        heading = f"{number}. {title}".strip().lower().replace("`", "")
        anchors[int(number)] = re.sub(r"[^\w\- ]", "", heading).replace(" ", "-")
    return anchors


def fields_reference(anchors: dict[int, str]) -> str:
    """The Markdown table: each field's values, default, whether spec_id holds it, meaning and
    contract section."""
    rows = ["| field | values | default | in `spec_id` | meaning | contract |",
            "|---|---|---|---|---|---|"]
    for field in FIELDS:
        values = [", ".join(f"`{choice}`" for choice in field.choices), field.values]
        section = int(re.match(r"section (\d+)", field.contract)[1])
        if section not in anchors:
            raise PageError(f"spec field {field.name!r}: the contract has no section {section}")
        cells = [f"`{field.name}`", "; or ".join(part for part in values if part),
                 f"`{field.shown(field.default)}`" if field.is_set(field.default) else "unset",
                 "when set" if field.optional else "always",
                 field.meaning.replace("|", "\\|"),
                 f"[{field.contract}]({CONTRACT}#{anchors[section]})"]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def written(page_text: str, contract_text: str, page: str = str(PAGE)) -> str:
    """The page's text with the generated table between its markers."""
    table = fields_reference(section_anchors(contract_text))
    return spliced(page_text, BEGIN, END, table, page)


def main(argv: list[str] | None = None) -> int:
    return regenerate(argv, command=COMMAND, default=PAGE, be="is",
                      what="the table of the spec's fields",
                      written=lambda text, page: written(
                          text, (page.parent / CONTRACT).read_text(encoding="utf-8"), str(page)))


if __name__ == "__main__":
    sys.exit(main())
