"""Fast checks of README.md and docs/: every shell block is run by test_blocks or marked as not
run, no block writes optional flags in brackets, the README stays short, and relative links
point at files (and headings) that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.doc_blocks import (
    DOC_ORDER,
    NOT_RUN,
    REPO,
    documented_pages,
    fenced_blocks,
    shell_blocks,
)

README_MAX_LINES = 220
LINKED_PAGES = documented_pages() + ["benchmarks/README.md"]

_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_FENCED = re.compile(r"^\s*```.*?^\s*```\s*$", re.DOTALL | re.MULTILINE)
_CODE = re.compile(r"`[^`\n]*`")


@pytest.mark.parametrize("page", documented_pages())
def test_every_block_runs_or_says_why_not(page: str) -> None:
    unlisted = [block.where() for block in shell_blocks(page)
                if page not in DOC_ORDER and not block.first_line.startswith(NOT_RUN)]
    assert not unlisted, f"blocks neither in DOC_ORDER's pages nor marked '{NOT_RUN}': {unlisted}"


@pytest.mark.parametrize("page", documented_pages())
def test_no_bracketed_optional_flags(page: str) -> None:
    bracketed = [block.where() for block in fenced_blocks(page) if "[--" in block.text]
    assert not bracketed, f"blocks with bracketed optional flags: {bracketed}"


def test_declared_pages_exist() -> None:
    assert [page for page in DOC_ORDER if not (REPO / page).is_file()] == []


def test_readme_is_short() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines, at most {README_MAX_LINES}"


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = _FENCED.sub("", path.read_text(encoding="utf-8"))
    return {_slug(match[1]) for match in re.finditer(r"^#{1,6}\s+(.*)$", text, re.MULTILINE)}


def _links(page: str) -> list[str]:
    text = _FENCED.sub("", (REPO / page).read_text(encoding="utf-8"))
    return _LINK.findall(_CODE.sub("", text))


@pytest.mark.parametrize("page", LINKED_PAGES)
def test_relative_links_resolve(page: str) -> None:
    broken = []
    for target in _links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        resolved = (REPO / page).parent / path if path else REPO / page
        if not resolved.exists():
            broken.append(target)
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"{target} (no such heading)")
    assert not broken, f"{page}: broken links {broken}"
