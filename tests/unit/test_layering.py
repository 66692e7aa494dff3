"""The architecture the package's docstring declares, held against every import in the code.

``evaluation_pipeline/__init__.py`` lists the layers; each module may import only from its own
unit and from the layers before it. Every import counts, the ones inside functions too (they
load later, but they are dependencies all the same).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import evaluation_pipeline

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "evaluation_pipeline"
SCHEMAS = REPO / "schemas"
PURE = ("metric", "stats", "aggregation")
DAGSTER_UNITS = {"orchestration", "definitions", "main_job", "__main__"}


def declared_layers() -> list[set[str]]:
    """The numbered list of the package docstring: each line's ``unit`` names, in order."""
    layers = []
    for line in evaluation_pipeline.__doc__.splitlines():
        match = re.match(r"^(\d+)\. (.*?):", line)
        if match:
            assert int(match.group(1)) == len(layers) + 1, line
            layers.append(set(re.findall(r"``([\w]+)``", match.group(2))))
    return layers


LAYERS = declared_layers()
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


def modules() -> dict[str, Path]:
    found = {}
    for root in (PACKAGE, SCHEMAS):
        for path in root.rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


MODULES = modules()


def unit_of(module: str) -> str:
    """A module's unit: ``schemas``, else its first part below ``evaluation_pipeline`` (the
    package face itself, holding only the version, counts with ``settings``)."""
    parts = module.split(".")
    if parts[0] == "schemas":
        return "schemas"
    return parts[1] if len(parts) > 1 else "settings"


def imports_of(module: str, path: Path) -> list[tuple[int, str]]:
    """(line, imported module) for every import of project code in ``path``."""
    found = []
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            # ``from package import module`` imports that module
            targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES
                       else source for alias in node.names]
        else:
            continue
        found += [(node.lineno, target) for target in targets
                  if target.split(".")[0] in ("evaluation_pipeline", "schemas")]
    return found


def test_the_docstring_declares_every_unit_once():
    units = {unit_of(module) for module in MODULES}
    declared = [unit for layer in LAYERS for unit in layer]
    assert len(declared) == len(set(declared))
    assert units == set(declared), (units ^ set(declared))


# The package face re-exports the Python API, loaded on first use (its ``__getattr__``).
FACE, FACE_EXPORTS = "evaluation_pipeline", "evaluation_pipeline.api"


def test_every_import_goes_to_its_own_unit_or_a_layer_before_it():
    climbs = []
    for module, path in sorted(MODULES.items()):
        unit = unit_of(module)
        for line, target in imports_of(module, path):
            if module == FACE and target == FACE_EXPORTS:
                continue
            other = unit_of(target)
            if other != unit and RANK[other] >= RANK[unit]:
                climbs.append(f"{path.relative_to(REPO)}:{line} ({unit}, layer "
                              f"{RANK[unit] + 1}) imports {target} ({other}, layer "
                              f"{RANK[other] + 1})")
    assert not climbs, "\n".join(climbs)


def test_a_layer_below_imports_nothing_of_the_layers_above_it():
    """The API sits below the commands and the pipeline, which use it; nothing below the API
    (the engines, the analyses, io) reaches up to the commands, the pipeline or the API."""
    above = {unit for layer in LAYERS[RANK["api"]:] for unit in layer}
    reaching = []
    for module, path in sorted(MODULES.items()):
        unit = unit_of(module)
        for line, target in imports_of(module, path):
            if module == FACE and target == FACE_EXPORTS:
                continue
            other = unit_of(target)
            if other in above and other != unit and RANK[other] >= RANK[unit]:
                reaching.append(f"{path.relative_to(REPO)}:{line} imports {target}")
    assert RANK["api"] < RANK["cli"] and RANK["api"] < RANK["orchestration"]
    assert not reaching, "\n".join(reaching)


# Package faces that gather their submodules for the layers above (the engines' registry and
# keyword functions): a submodule imports the module that holds what it needs, never the face,
# which would load every other submodule the face gathers (and circle back to itself).
GATHERING_FACES = ("evaluation_pipeline.engines",)


@pytest.mark.parametrize("face", GATHERING_FACES)
def test_no_submodule_imports_the_face_of_its_package(face):
    assert face in MODULES
    offenders = [f"{path.relative_to(REPO)}:{line} imports {target}"
                 for module, path in sorted(MODULES.items()) if module.startswith(face + ".")
                 for line, target in imports_of(module, path) if target == face]
    assert not offenders, "\n".join(offenders)


def test_the_package_face_imports_the_api_alone_and_only_when_asked():
    tree = ast.parse(MODULES[FACE].read_text())
    top = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    assert not top, "the package face imports nothing when it is imported"
    assert {target for _, target in imports_of(FACE, MODULES[FACE])} == {FACE_EXPORTS}
    lazy = [node for node in tree.body if isinstance(node, ast.FunctionDef)]
    assert [node.name for node in lazy] == ["__getattr__"]


def test_no_module_imports_itself_in_a_circle():
    graph = {module: {target for _, target in imports_of(module, path) if target in MODULES}
             for module, path in MODULES.items()}
    done, active, circles = set(), [], []

    def visit(module: str) -> None:
        if module in done:
            return
        if module in active:
            circles.append(" -> ".join(active[active.index(module):] + [module]))
            return
        active.append(module)
        for target in sorted(graph[module]):
            # A package's face imported by its own modules (for its version, say) is no circle.
            if not (module.startswith(target + ".")):
                visit(target)
        active.pop()
        done.add(module)

    for module in sorted(graph):
        visit(module)
    assert not circles, "\n".join(circles)


@pytest.mark.parametrize("unit", PURE)
def test_the_pure_layers_do_no_io_and_know_no_dagster(unit):
    offenders = []
    for module, path in MODULES.items():
        if unit_of(module) != unit:
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                if name.split(".")[0] in ("dagster", "fsspec", "upath", "duckdb", "requests"):
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno} imports {name}")
        for line, target in imports_of(module, path):
            if unit_of(target) in ("io", "ingest"):
                offenders.append(f"{path.relative_to(REPO)}:{line} imports {target}")
    assert not offenders, "\n".join(offenders)


def test_only_the_orchestration_and_the_entry_points_import_dagster():
    offenders = []
    for module, path in MODULES.items():
        if unit_of(module) in DAGSTER_UNITS:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.relative_to(REPO)}:{node.lineno}" for name in names
                          if name.split(".")[0] == "dagster"]
    assert not offenders, offenders


def test_no_two_modules_share_a_base_name():
    """A name says one thing: ``history.py`` is the nightly history, nowhere a command too."""
    by_name = {}
    for module, path in MODULES.items():
        if path.name != "__init__.py":
            by_name.setdefault(path.stem, []).append(module)
    shared = {name: found for name, found in by_name.items() if len(found) > 1}
    assert not shared, shared
