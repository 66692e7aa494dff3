"""Every package the code imports, at the top of a module or inside a function, is installed by
what the project declares for running it: a dependency of ``[project]``, one of theirs, or an
extra other than ``test``. A module that imported a test-only package worked under `make test`
and failed under `make run` (an install without the test extra)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata

from tests.support.paths import REPO

CODE = ("evaluation_pipeline", "schemas")
# Extras that only test, benchmark or lint: a module of the package may not need them.
NOT_FOR_RUNNING = ("test", "bench")


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[(]", requirement.strip(), maxsplit=1)[0].lower().replace(
        "_", "-")


def _declared() -> set[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    wanted = list(project["dependencies"])
    for extra, requirements in project.get("optional-dependencies", {}).items():
        if extra not in NOT_FOR_RUNNING:
            wanted += requirements
    return {_name(r) for r in wanted}


def _installed_by(roots: set[str]) -> set[str]:
    """The distributions ``roots`` install, theirs included (their own extras aside)."""
    seen, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requirements = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        todo += [_name(r) for r in requirements if "extra ==" not in r]
    return seen


def _imported() -> dict[str, set[str]]:
    """Top-level module -> the files of the code that import it (outside the code itself and
    the standard library)."""
    found: dict[str, set[str]] = {}
    for folder in CODE:
        for path in (REPO / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in CODE and top not in sys.stdlib_module_names:
                        found.setdefault(top, set()).add(str(path.relative_to(REPO)))
    return found


def test_every_imported_package_is_installed_by_a_declared_dependency():
    declared = _declared()
    allowed = _installed_by(declared)
    providers = metadata.packages_distributions()
    missing = {}
    for module, files in sorted(_imported().items()):
        distributions = {d.lower().replace("_", "-") for d in providers.get(module, [])}
        # An extra this install left out (`make test` without EXTRAS=spark): its package is
        # not here to name the modules it provides, so the module is known by its own name.
        if not distributions and module.lower().replace("_", "-") in declared:
            continue
        if not distributions & allowed:
            missing[module] = sorted(files)
    assert not missing, (
        "imported by the code but installed only by the test or bench extra (or not at all): "
        f"{missing}; declare them in pyproject.toml's dependencies or an extra")
