"""What a table rule is: the column a refusal names, what it requires in words, and how each
path evaluates it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from schemas.names import MAX_NAME_LENGTH, NAME_LIMITS_RULE, SAFE_NAME_PATTERN, name_within_limits

NOT_NULL = "must not be empty (null)"
REQUIRED = "required column is missing"
SAFE_NAME_WORDS = "must be a file-name-safe name: letters, digits, '.', '_', '-' only"

# How a rule is evaluated (each path reads ``kind`` to pick its way):
REQUIRED_COLUMN = "required"  # the column is there (pandera's column_in_dataframe)
DTYPE = "dtype"  # the column has the contract's type
NOT_NULLABLE = "not_null"  # no null in the column
VALUE = "value"  # ``holds`` on each value of ``column`` (a refusal shows the value)
ROW = "row"  # ``holds`` on each row (a refusal shows the row)
KEY = "key"  # the ``reads`` columns together are unique
ONE_NAME = "one_name"  # every row holds the first row's name: the file is one pool, one version


@dataclass(frozen=True)
class Column:
    name: str
    dtype: pl.DataType
    nullable: bool = False
    required: bool = True
    null_words: str = NOT_NULL  # what a null is told, when more than "must not be empty"


@dataclass(frozen=True)
class Rule:
    """One rule of a table. ``holds`` is True on a row (or value) that keeps the rule; null
    leaves it to another rule (a null grade is the null rule's, as pandera's checks ignore
    nulls). ``spark`` is the same rule as a Spark column, given ``pyspark.sql.functions``;
    rules without one are left by the Spark engine to its reader's cast or to
    :func:`schemas.names.check_safe_name` on the driver. ``screen``: a cheaper aggregate the
    screen may use instead of ``holds().all()`` (see :func:`one_safe_name`)."""

    id: str  # a Python name: names the pandera check
    kind: str
    column: str  # as the refusal names it: one column, or "a, b" for a key
    words: str  # the rule as the refusal says it
    reads: tuple[str, ...]  # the columns it reads: when one is absent, only that is said
    holds: Callable[[], pl.Expr] | None = None
    spark: Callable[[Any], Any] | None = None
    screen: Callable[[], pl.Expr] | None = None
    what: str = ""  # ONE_NAME: what the name names ("candidate pool")


@dataclass(frozen=True)
class Tally:
    """Rules the Spark engine counts as one: it has no rows to show, only a count, and says a
    count of these rules in one sentence."""

    column: str
    words: str
    rules: tuple[str, ...]  # rule ids


@dataclass(frozen=True)
class Table:
    """A table's columns and rules. ``rules`` holds every rule, the ones each column implies
    (there, its type, no nulls) first: see :func:`table`."""

    name: str  # the pandera model's name
    columns: tuple[Column, ...]
    rules: tuple[Rule, ...]
    spark_tallies: tuple[Tally, ...] = ()
    strict: bool = False  # only these columns (else others pass through)

    def rule(self, rule_id: str) -> Rule:
        return next(r for r in self.rules if r.id == rule_id)

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    @property
    def dtypes(self) -> dict[str, pl.DataType]:
        return {c.name: c.dtype for c in self.columns}

    @property
    def key(self) -> Rule:
        return next(r for r in self.rules if r.kind == KEY)

    @property
    def one_name(self) -> Rule | None:
        return next((r for r in self.rules if r.kind == ONE_NAME), None)


def table(name: str, columns: tuple[Column, ...], rules: tuple[Rule, ...],
          spark_tallies: tuple[Tally, ...] = (), strict: bool = False) -> Table:
    """The table with the rules its columns imply put before ``rules``."""
    implied = []
    for c in columns:
        if c.required:
            implied.append(Rule(f"{c.name}_is_there", REQUIRED_COLUMN, c.name, REQUIRED,
                                (c.name,)))
        implied.append(Rule(f"{c.name}_type", DTYPE, c.name, f"must have type {c.dtype}",
                            (c.name,)))
        if not c.nullable:
            implied.append(Rule(f"{c.name}_not_null", NOT_NULLABLE, c.name, c.null_words,
                                (c.name,), holds=lambda n=c.name: pl.col(n).is_not_null(),
                                spark=lambda F, n=c.name: F.col(n).isNotNull()))
    ids = [r.id for r in (*implied, *rules)]
    assert len(ids) == len(set(ids)), f"{name}: a rule id repeats"
    return Table(name, columns, (*implied, *rules), spark_tallies, strict)


def columns_of(dtypes: dict, *, nullable=(), optional=(), null_words=None) -> tuple[Column, ...]:
    null_words = null_words or {}
    return tuple(Column(c, t, nullable=c in nullable, required=c not in optional,
                        null_words=null_words.get(c, NOT_NULL)) for c, t in dtypes.items())


# --- the rules several tables share ---------------------------------------------------------

def non_empty(column: str) -> Rule:
    return Rule(f"{column}_non_empty", VALUE, column, "must be non-empty", (column,),
                holds=lambda: pl.col(column).str.len_bytes() > 0,
                spark=lambda F: F.length(column) > 0)


def finite(column: str, words: str) -> Rule:
    return Rule(f"{column}_is_finite", VALUE, column, words, (column,),
                holds=lambda: pl.col(column).is_finite(),
                spark=lambda F: ~F.isnan(column) & (F.abs(column) != float("inf")))


def at_least_zero(column: str, words: str = "must be >= 0") -> Rule:
    return Rule(f"{column}_at_least_zero", VALUE, column, words, (column,),
                holds=lambda: pl.col(column) >= 0, spark=lambda F: F.col(column) >= 0)


def one_of(column: str, values: tuple[str, ...]) -> Rule:
    # Equalities, not is_in: on a few values they run about three times as fast.
    return Rule(f"{column}_one_of", VALUE, column, f"must be one of {list(values)}", (column,),
                holds=lambda: pl.any_horizontal(pl.col(column) == v for v in values),
                spark=lambda F: F.col(column).isin(*values))


def unique_key(columns: tuple[str, ...], words: str | None = None) -> Rule:
    """The key's columns together are unique; evaluated by ``schemas.keys.unique_rows``."""
    return Rule("unique_key", KEY, ", ".join(columns),
                words or f"({', '.join(columns)}) must be unique: duplicate rows", columns)


def one_safe_name(column: str, what: str) -> tuple[Rule, ...]:
    """A name column: one name per file, safe as a file name (``schemas.names``). Every row
    holding the first row's name, the screen asks the first name alone whether it is safe."""
    name, first = pl.col(column), pl.col(column).first()
    return (
        Rule(f"{column}_is_safe", VALUE, column, SAFE_NAME_WORDS, (column,),
             holds=lambda: name.str.contains(SAFE_NAME_PATTERN),
             screen=lambda: first.str.contains(SAFE_NAME_PATTERN)),
        Rule(f"{column}_within_limits", VALUE, column, NAME_LIMITS_RULE, (column,),
             holds=lambda: name_within_limits(column),
             screen=lambda: ~first.is_in([".", ".."]) & (first.str.len_chars()
                                                         <= MAX_NAME_LENGTH)),
        Rule(f"one_{column}", ONE_NAME, column,
             f"one {what} per file: {column} has several values", (column,),
             holds=lambda: name == first, what=what),
    )


def per_row(rule_id: str, column: str, words: str, reads: tuple[str, ...],
            holds: Callable[[], pl.Expr], spark: Callable[[Any], Any] | None = None) -> Rule:
    return Rule(rule_id, ROW, column, words, reads, holds=holds, spark=spark)

