"""The Spark engine's checks are made of the tables' rules (``schemas.rules.to_spark``): a
frame breaking one rule alone is refused, with the rule's words (or its tally's) and a count;
the rules it leaves are the types (its reader casts) and the name's safety (asked of the one
name, on the driver)."""

from __future__ import annotations

import pytest

from schemas.errors import EvaluationError
from schemas.rules.judgment_rules import JUDGMENTS
from schemas.rules.pool_rules import CANDIDATE_POOL
from schemas.rules.rule import DTYPE, REQUIRED_COLUMN
from schemas.rules.to_spark import counted_rules, refuse_broken
from tests.support.spark_session import requires_spark
from tests.unit.schemas.rule_breakers import CLEAN, broken

pytest.importorskip("pyspark", reason="pyspark is not installed (the `spark` extra)")
pytestmark = requires_spark

# What Spark scores: the pool and the judgments (a version with raters it refuses).
TABLES = (CANDIDATE_POOL, JUDGMENTS)
# Left to the Spark engine's reader (a type) or to check_safe_name on the one name.
NOT_COUNTED = {"candidate_pool_is_safe", "candidate_pool_within_limits",
               "judgment_version_is_safe", "judgment_version_within_limits"}
CASES = [(t, r) for t in TABLES for r in t.rules if r.kind not in (REQUIRED_COLUMN, DTYPE)]


def _spark_frame(spark, frame):
    return spark.createDataFrame(frame.to_arrow())


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.name)
def test_spark_counts_every_rule_but_the_types_and_the_names_safety(table):
    counted = {r.id for r in counted_rules(table, table.dtypes)}
    implied = {r.id for r in table.rules if r.kind in (REQUIRED_COLUMN, DTYPE)}
    assert counted == {r.id for r in table.rules} - implied - NOT_COUNTED


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.name)
def test_a_clean_frame_passes(spark, table):
    name, rows = refuse_broken(_spark_frame(spark, CLEAN[table.name]), table, "clean")
    assert rows == CLEAN[table.name].height and name == CLEAN[table.name][
        table.one_name.column][0]


@pytest.mark.parametrize(("table", "rule"), CASES, ids=lambda x: getattr(x, "id", None) or
                         getattr(x, "name", None))
def test_spark_refuses_each_rule(spark, table, rule):
    frame = _spark_frame(spark, broken(table, rule.id))
    with pytest.raises(EvaluationError) as refused:
        refuse_broken(frame, table, "broken.parquet")
    if rule.id in NOT_COUNTED:  # the one name's safety: check_safe_name's words
        assert repr(broken(table, rule.id)[rule.column][0]) in str(refused.value) or (
            "characters is refused" in str(refused.value))
        return
    tally = next((t for t in table.spark_tallies if rule.id in t.rules), None)
    column, words = (tally.column, tally.words) if tally else (rule.column, rule.words)
    said = [(v.column, v.rule) for v in refused.value.violations]
    assert len(said) == 1 and said[0][0] == column and said[0][1].startswith(words), said
