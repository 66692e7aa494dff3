"""A table's rules counted on a Spark DataFrame: one aggregation of every rule with a Spark
form, the key's repeats and the name's values, for the Spark engine's inputs.

A distributed file has no row numbers, so a refusal names the file, the column and the rule
with the count of rows that break it. A null leaves a rule to the null rule, as in the model.
The one name is then checked on the driver (``schemas.names.check_safe_name``): its safety is
the safe-name rules' of the model, asked of the one value every row holds.
"""

from __future__ import annotations

from schemas.errors import InputError, violation
from schemas.names import check_safe_name
from schemas.rules.rule import KEY, ONE_NAME, Rule, Table


def counted_rules(table: Table, columns) -> list[Rule]:
    """The rules the Spark engine counts on a frame of ``columns``."""
    return [r for r in table.rules if (r.spark is not None or r.kind in (KEY, ONE_NAME))
            and set(r.reads) <= set(columns)]


def refuse_broken(frame, table: Table, source: str) -> tuple[str | None, int]:
    """(the frame's one name, its row count), or :class:`InputError` naming ``source``, each
    broken rule's column and words, and how many rows break it."""
    from pyspark.sql import functions as F

    rules = counted_rules(table, frame.columns)
    tallied = {rule_id for tally in table.spark_tallies for rule_id in tally.rules}

    def broken(members: list[Rule]):
        # coalesce: a rule over a null is null, which a sum would skip.
        return F.sum((F.lit(False) if not members else _any(
            ~F.coalesce(r.spark(F), F.lit(True)) for r in members)).cast("int"))

    counts = {}  # (column, words, unit) -> expression
    for tally in table.spark_tallies:
        members = [r for r in rules if r.id in tally.rules]
        if members:
            counts[(tally.column, tally.words, "rows")] = broken(members)
    for rule in rules:
        if rule.id in tallied or rule.kind == KEY:
            continue
        if rule.kind == ONE_NAME:
            counts[(rule.column, rule.words, "names")] = F.countDistinct(rule.column)
        else:
            counts[(rule.column, rule.words, "rows")] = broken([rule])
    found = frame.select(*(expression.alias(f"c{i}") for i, expression in
                           enumerate(counts.values())), F.count(F.lit(1)).alias("rows")).first()
    if found["rows"] == 0:
        raise InputError(source, [violation("(file)", "no rows", [])])
    bad = []
    for i, (column, words, unit) in enumerate(counts):
        count = found[f"c{i}"] or 0
        if count > (1 if unit == "names" else 0):
            bad.append(violation(column, f"{words} ({count:,} {unit})", []))
    key = next((r for r in rules if r.kind == KEY), None)
    if key is not None:
        repeated = frame.groupBy(*key.reads).count().filter("count > 1").count()
        if repeated:
            bad.append(violation(key.column, f"{key.words} ({repeated:,} keys)", []))
    if bad:
        raise InputError(source, bad)
    name_rule = table.one_name
    if name_rule is None or name_rule.column not in frame.columns:
        return None, found["rows"]
    name = frame.select(name_rule.column).first()[0]
    return check_safe_name(name, name_rule.what), found["rows"]


def _any(conditions):
    conditions = list(conditions)
    out = conditions[0]
    for condition in conditions[1:]:
        out = out | condition
    return out
