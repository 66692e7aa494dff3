"""One declaration each: the environment variables (``settings``), the spec's fields (``spec``),
and the report's per-query columns and tie tolerance (``schemas.columns``); the docs carry what
those declarations say, and no module spells a second copy."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import polars as pl

from evaluation_pipeline import settings
from evaluation_pipeline.aggregation import partials
from evaluation_pipeline.spec import FIELD_DOCS, EvaluationSpec, fields_table
from schemas import columns

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "evaluation_pipeline"
VARIABLE = re.compile(r"NDCG_EVAL_[A-Z0-9_]+")


def string_constants(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def test_every_variable_is_declared_once_in_settings():
    names = [setting.name for setting in settings.SETTINGS]
    assert len(names) == len(set(names))
    assert all(VARIABLE.fullmatch(name) for name in names)
    assert all(setting.default and setting.meaning for setting in settings.SETTINGS)


def test_no_other_module_spells_a_variable_name_as_a_value():
    """A name in a docstring or message is prose; a string that is exactly a variable's name
    (an ``os.environ`` key, a constant) is a second declaration."""
    spelled = [f"{path.relative_to(REPO)}:{line} {value!r}"
               for path in PACKAGE.rglob("*.py") if path.name != "settings.py"
               for line, value in string_constants(path) if VARIABLE.fullmatch(value)]
    assert not spelled, spelled


def test_every_variable_the_code_names_is_declared():
    declared = {setting.name for setting in settings.SETTINGS}
    named = {name for path in PACKAGE.rglob("*.py") for name in VARIABLE.findall(path.read_text())}
    assert named <= declared, named - declared


def test_the_configuration_page_lists_exactly_the_declared_variables():
    page = (REPO / "docs" / "configuration.md").read_text()
    listed = re.findall(r"^\| `(NDCG_EVAL_[A-Z0-9_]+)` \|", page, re.M)
    assert len(listed) == len(set(listed)), "a variable is listed twice"
    assert set(listed) == {setting.name for setting in settings.SETTINGS}


def test_an_empty_variable_counts_as_unset():
    assert settings.ENGINE.get({"NDCG_EVAL_ENGINE": ""}) is None
    assert settings.ENGINE.get({"NDCG_EVAL_ENGINE": "local"}) == "local"
    assert str(settings.ENGINE) == "NDCG_EVAL_ENGINE"


def test_the_contract_carries_the_spec_fields_table():
    contract = (REPO / "docs" / "CONTRACT.md").read_text()
    assert fields_table() in contract
    assert list(FIELD_DOCS) == [field.name
                                for field in EvaluationSpec.__dataclass_fields__.values()]


def test_no_doc_page_holds_a_table_of_the_spec_fields_by_hand():
    """The contract's table is ``fields_table()`` (above), docs/spec.md's is written between its
    markers (tests/unit/test_spec_fields.py); no other page has a row for every field."""
    def lists_every_field(text: str) -> bool:
        return all(re.search(rf"^\| `{name}` \|", text, re.M) for name in FIELD_DOCS)

    pages = sorted(path.relative_to(REPO).as_posix()
                   for path in [REPO / "README.md", *(REPO / "docs").glob("*.md")]
                   if lists_every_field(path.read_text()))
    assert pages == ["docs/CONTRACT.md", "docs/spec.md"]


def test_the_report_rows_are_declared_with_the_other_tables():
    assert partials.ROW_DTYPES == {"night": pl.Int8, **columns.ROW_DTYPES}
    assert set(columns.REPORT_OPTIONAL_COLUMNS) <= {*columns.REPORT_COLUMNS, *columns.ROW_COLUMNS}
    assert not hasattr(partials, "TIE_TOLERANCE") or partials.TIE_TOLERANCE is columns.TIE_TOLERANCE
