"""The registry is the one place an engine's name becomes an engine: every name it lists is a
class behind the ``Engine`` protocol, ``auto`` resolves by the engine choice (a table in memory
to the engine that reads it in place), and no other module compares an engine's name."""

from __future__ import annotations

import ast
from pathlib import Path

import polars as pl
import pytest

from evaluation_pipeline import engines
from evaluation_pipeline.engines import (
    AUTO,
    ENGINES,
    Engine,
    ScoringInputs,
    engine_named,
    resolve,
)
from evaluation_pipeline.io.table_inputs import Table
from tests.support.paths import P28, V2

PACKAGE = Path(engines.__file__).resolve().parents[1]
NAMED = [name for name in ENGINES if name != AUTO]


@pytest.mark.parametrize("name", NAMED)
def test_every_listed_engine_is_one_behind_the_protocol(name):
    engine = engine_named(name)
    assert isinstance(engine, Engine) and engine.name == name
    # An engine that keeps its rows reads tables in place: the Python API counts on it.
    assert engine.keeps_rows == (name == "local")
    assert engine.reads_urls == (name == "spark")


def test_an_unknown_name_is_refused_naming_the_engines():
    with pytest.raises(ValueError, match="unknown engine 'fast'; choose one of auto, local, "
                                         "streaming, spark"):
        engine_named("fast")


def test_auto_resolves_by_the_choice_and_a_table_to_the_engine_that_reads_it_in_place():
    table = Table(pl.DataFrame({"query_id": ["q1"]}), "run (polars DataFrame)", "run", "pool")
    assert resolve(AUTO, ScoringInputs(V2, table)).name == "local"
    assert resolve(AUTO, ScoringInputs(V2, P28)).name == "local"  # CSV judgments: in memory
    # Without inputs (ingest, a report's sums) auto is this machine's engine.
    assert resolve(AUTO).name == "local" and not resolve(AUTO).reads_urls


def test_no_module_compares_an_engine_name_outside_the_registry():
    """Behaviour that depends on the engine asks the engine (``reads_urls``, ``keeps_rows``,
    its methods), never its name: ``engine == "spark"`` chains were how each caller chose."""
    names = set(NAMED)
    found = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "registry.py" and path.parent.name == "engines":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Compare) and any(
                    isinstance(side, ast.Constant) and side.value in names
                    for side in [node.left, *node.comparators]):
                found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not found, found
