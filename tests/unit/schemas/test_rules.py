"""Each table's rules are declared once (``schemas.rules``) and every path is made from them: the
pandera model, the polars screen and the streaming batch checks each refuse a frame that breaks
one rule alone, naming the rule's column and words (the Spark engine's counts:
``slow/test_rules_spark.py``)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

import schemas
from evaluation_pipeline.engines.streaming import batch_checks
from evaluation_pipeline.metric.hashing import StreamingDigest
from evaluation_pipeline.metric.kernels.blocks import block_starts
from schemas import InputError, validate
from schemas.rules.rule import DTYPE, REQUIRED_COLUMN
from schemas.screening import screen
from tests.unit.schemas.rule_breakers import CLEAN, TABLES, breakers, broken

CASES = [(name, rule.id) for name, table in TABLES.items() for rule in table.rules]


@pytest.mark.parametrize("name", TABLES)
def test_every_rule_has_a_frame_that_breaks_it_and_no_other(name):
    assert set(breakers(TABLES[name])) == {rule.id for rule in TABLES[name].rules}


@pytest.mark.parametrize("name", TABLES)
def test_the_clean_frames_pass_every_path(name):
    assert screen(name, CLEAN[name])
    getattr(schemas, name).validate(CLEAN[name], lazy=True)


@pytest.mark.parametrize("name", TABLES)
def test_the_model_is_made_of_the_rules(name):
    """One pandera check per rule beyond pandera's own column checks (there, type, null)."""
    table, model = TABLES[name], getattr(schemas, name)
    schema = model.to_schema()
    checks = {check.name for check in schema.checks}
    checks |= {check.name for column in schema.columns.values() for check in column.checks}
    assert checks == {r.id for r in table.rules if r.kind not in (REQUIRED_COLUMN, DTYPE)
                      and r.kind != "not_null"}
    assert {c: (col.dtype.type, col.nullable, col.required) for c, col in
            schema.columns.items()} == {c.name: (c.dtype, c.nullable, c.required)
                                        for c in table.columns}


@pytest.mark.parametrize(("name", "rule_id"), CASES)
def test_the_model_and_the_screen_refuse_each_rule_naming_it(name, rule_id):
    table = TABLES[name]
    rule, frame = table.rule(rule_id), broken(table, rule_id)
    assert not screen(name, frame)
    with pytest.raises(InputError) as refused:
        validate(name, frame, "broken.parquet")
    said = {(v.column, v.rule) for v in refused.value.violations}
    assert (rule.column, rule.words) in said, said
    if rule.kind != DTYPE:  # a wrong type may break the rules that read the column too
        assert len(said) == 1, said


def _digest():
    return StreamingDigest("judgments")


# Not "rater_is_there": without its rater column a version is a version without raters, which
# the stream keeps as one (a case that does not apply, so not a skip: the full tier fails skips).
STREAMED = [(name, rule_id) for name, rule_id in CASES
            if name in ("CandidatePool", "Judgments", "RatedJudgments")
            and rule_id != "rater_is_there"]


@pytest.mark.parametrize(("name", "rule_id"), STREAMED)
def test_the_streaming_checks_refuse_each_rule(name, rule_id):
    """A batch breaking one rule is refused with the model's words; a type the cast to the
    contract keeps (text as Categorical, in a string column) is cast, not refused."""
    table = TABLES[name]
    rule, frame = table.rule(rule_id), broken(table, rule_id)
    frame = frame.sort([c for c in table.key.reads if c in frame.columns])
    path = Path("broken.parquet")
    if rule.kind == DTYPE and not table.column(rule.column).dtype.is_numeric():
        _check(name, frame, path)  # cast to String: the batch passes
        return
    with pytest.raises(InputError) as refused:
        _check(name, frame, path)
    said = [(v.column, v.rule) for v in refused.value.violations]
    if rule.kind == DTYPE:
        # The cast refuses what it cannot keep, or the screen the type it keeps as it is.
        assert said[0][0] == rule.column
        assert "is stored as String" in said[0][1] or said[0][1] == rule.words, said
    else:
        assert (rule.column, rule.words) in said


def _check(name: str, frame: pl.DataFrame, path: Path):
    if name == "CandidatePool":
        starts = block_starts(frame, [c for c in ("ranker", "query_id") if c in frame.columns])
        return batch_checks.check_run(frame, path, 0, {}, starts)
    return batch_checks.check_judgments(frame, path, 0, {}, _digest())


def test_the_stream_says_one_name_per_input_from_the_name_rule():
    first = CLEAN["Judgments"]
    names: dict = {}
    batch_checks.check_judgments(first, Path("a.parquet"), 0, names, _digest())
    with pytest.raises(InputError, match="one judgment version per input: found 'v1' and 'v2'"):
        batch_checks.check_judgments(first.with_columns(judgment_version=pl.lit("v2")),
                                     Path("b.parquet"), 4, names, _digest())
