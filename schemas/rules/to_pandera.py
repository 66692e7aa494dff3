"""A table's pandera model, made from its rules (``schemas.rules.rule``).

The model runs when the screen refuses a frame, to name the failing rows: every rule is a
pandera check whose error is the rule's words, so ``schemas.validation`` says them as they are.
A rule on one column's values is a column check (a refusal shows the value); a rule on a row,
a key of several columns and the one-name rule are dataframe checks tagged ``[column] words``.
"""

from __future__ import annotations

from typing import Optional

import pandera.polars as pa
import polars as pl
from pandera.api.polars.types import PolarsData

from schemas.keys import unique_rows
from schemas.rules.rule import DTYPE, KEY, NOT_NULLABLE, REQUIRED_COLUMN, VALUE, Rule, Table

_IMPLIED = (REQUIRED_COLUMN, DTYPE, NOT_NULLABLE)  # said by pandera's own column checks


def model_of(table: Table, module: str) -> type[pa.DataFrameModel]:
    """The pandera model of ``table``, named as the table, defined in ``module``."""
    annotations, namespace = {}, {"__module__": module, "__doc__": f"The {table.name} rules "
                                  "(``schemas.rules``) as a pandera model.", "__table__": table}
    for column in table.columns:
        annotations[column.name] = (column.dtype if column.required
                                    else Optional[column.dtype])  # noqa: UP045 (pandera's form)
        namespace[column.name] = pa.Field(nullable=column.nullable)
    for rule in table.rules:
        if rule.kind not in _IMPLIED:
            namespace[rule.id] = _check(rule)
    namespace["__annotations__"] = annotations
    namespace["Config"] = type("Config", (), {"strict": table.strict})
    return type(table.name, (pa.DataFrameModel,), namespace)


def _check(rule: Rule):
    if rule.kind == KEY and len(rule.reads) == 1:
        def check(cls, data: PolarsData) -> pl.LazyFrame:
            return unique_rows(data.lazyframe, list(rule.reads))

        return _named(pa.check(rule.column, error=rule.words), check, rule)
    if rule.kind == VALUE:
        def check(cls, data: PolarsData) -> pl.LazyFrame:
            return data.lazyframe.select(rule.holds())

        return _named(pa.check(rule.column, error=rule.words), check, rule)

    def check(cls, data: PolarsData) -> pl.LazyFrame:
        frame = data.lazyframe
        if not set(rule.reads) <= set(frame.collect_schema().names()):
            return frame.select(pl.lit(True))  # the missing column is said on its own
        if rule.kind == KEY:
            return unique_rows(frame, list(rule.reads))
        return frame.select(rule.holds())

    return _named(pa.dataframe_check(error=f"[{rule.column}] {rule.words}"), check, rule)


def _named(decorator, check, rule: Rule):
    check.__name__ = check.__qualname__ = rule.id
    return decorator(check)
