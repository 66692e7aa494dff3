"""docs/reliability.md names, for every fault tried, the test that holds it: each file and
test it names exists, so the table cannot point at a test that was renamed or removed."""

from __future__ import annotations

import ast
import re

from tests.support.paths import REPO

PAGE = REPO / "docs" / "reliability.md"
# `tests/...py` optionally followed by ::name; a bare `::name` after it refers to the same file.
REFERENCE = re.compile(r"`(tests/[\w/]+\.py)?(?:::(\w+))?(?:\[[^\]]*\])?`")


def _references() -> list[tuple[str, str | None]]:
    found, last = [], None
    for path, name in REFERENCE.findall(PAGE.read_text()):
        if path:
            last = path
        if path or name:
            found.append((path or last, name or None))
    return found


def _tests_in(path: str) -> set[str]:
    tree = ast.parse((REPO / path).read_text())
    return {node.name for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_every_test_the_page_names_exists():
    references = _references()
    assert len(references) > 40
    missing = [(path, name) for path, name in references
               if not (REPO / path).is_file() or (name and name not in _tests_in(path))]
    assert not missing, missing
