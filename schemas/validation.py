"""Run a pandera model lazily and report every broken rule in the user's terms."""

from __future__ import annotations

import re
from collections.abc import Sequence

import pandera.errors as pa_errors
import pandera.polars as pa
import polars as pl

from schemas.errors import MAX_EXAMPLES, InputError, RuleViolation

# pandera's built-in check names, said as rules.
_RULE_WORDS: list[tuple[str, str]] = [
    (r"^str_length\(1, None\)$", "must be non-empty"),
    (r"^str_matches\(.*A-Za-z0-9\._-.*\)$",
     "must be a file-name-safe name: letters, digits, '.', '_', '-' only"),
    (r"^str_matches\(.*0-9a-f.*\)$", "must be a 64-digit lowercase SHA-256"),
    (r"^greater_than_or_equal_to\(0\)$", "must be >= 0"),
    (r"^less_than_or_equal_to\((.*)\)$", "must be <= {0}"),
    (r"^isin\((.*)\)$", "must be one of {0}"),
    (r"^column_in_dataframe$", "required column is missing"),
    (r"^not_nullable$", "must not be empty (null)"),
    (r"^field_uniqueness$", "values must be unique"),
    (r"^dtype\('?(.*?)'?\)$", "must have type {0}"),
]


def _rule_words(column: str, check: str, unique: Sequence[str], table) -> str:
    if check == "multiple_fields_uniqueness":
        return f"({', '.join(unique)}) must be unique: duplicate rows"
    if check == "not_nullable" and table is not None and column in table.dtypes:
        return table.column(column).null_words  # a model made of rules: its own words
    if check == "not_nan":
        return "must be a number, not NaN"
    for pattern, words in _RULE_WORDS:
        match = re.match(pattern, check)
        if match:
            return words.format(*match.groups())
    return check  # custom checks carry their own sentence


_TAGGED = re.compile(r"^\[([\w, ]+)\] (.*)$", re.S)


def validate(
    model: type[pa.DataFrameModel],
    frame: pl.DataFrame,
    source: str,
    *,
    line_numbers: pl.Series | None = None,
    row_label: str = "row",
) -> pl.DataFrame:
    """Validate ``frame`` against ``model``; raise :class:`InputError` listing every failure.

    ``line_numbers`` maps frame rows to the lines of the file they came from, so errors point
    at lines a person can open; without it rows are numbered from 1.
    """
    try:
        return model.validate(frame, lazy=True)
    except pa_errors.SchemaErrors as exc:
        raise InputError(
            source,
            _violations(exc.failure_cases, model, line_numbers),
            row_label="line" if line_numbers is not None else row_label,
        ) from None
    except pa_errors.SchemaError as exc:  # raised eagerly for e.g. a missing column
        raise InputError(source, [RuleViolation(column="(table)", rule=str(exc))]) from None


def _violations(cases: pl.DataFrame, model, line_numbers) -> list[RuleViolation]:
    unique = list(getattr(model.Config, "unique", None) or [])
    model_name = model.__name__
    table = getattr(model, "__table__", None)  # ``schemas.rules``' table, when made of one
    missing_columns = set(
        cases.filter(pl.col("check") == "column_in_dataframe")["failure_case"].cast(pl.String)
    )
    cases = _drop_nan_nulls(cases)
    out = []
    for (column, check), group in cases.group_by(["column", "check"], maintain_order=True):
        check = str(check)
        if check == "column_in_dataframe":
            for missing in group["failure_case"].unique(maintain_order=True).to_list():
                out.append(RuleViolation(column=str(missing), rule="required column is missing"))
            continue
        if check == "multiple_fields_uniqueness" and missing_columns & set(unique):
            continue  # every row "repeats" a key that lacks a column: the missing column says it
        if check == "not_nullable" and _is_nan(group["failure_case"]).all():
            check = "not_nan"
        tagged = _TAGGED.match(check)
        if tagged:  # custom dataframe checks name their column as "[column] rule"
            column, check = tagged.groups()
        elif column == model_name:
            column = ", ".join(unique)
        index = group["index"].drop_nulls()
        if line_numbers is not None and len(index):
            rows = line_numbers.gather(index.cast(pl.Int64)).to_list()
        else:
            rows = [int(i) + 1 for i in index.to_list()]
        values = group["failure_case"].head(MAX_EXAMPLES).to_list() if len(index) else []
        out.append(
            RuleViolation(
                column=str(column),
                rule=_rule_words(str(column), str(check), unique, table),
                rows=tuple(rows[:MAX_EXAMPLES]),
                examples=tuple(_short(v) for v in values[: len(rows[:MAX_EXAMPLES])]),
                count=len(rows),
            )
        )
    return out


def _is_nan(failure_case):
    """pandera writes failure cases as text: a float NaN is "NaN", a null is null."""
    return failure_case.cast(pl.String).is_in(["NaN", "nan"]).fill_null(False)


def _drop_nan_nulls(cases: pl.DataFrame) -> pl.DataFrame:
    """pandera's not_nullable check also fails a float NaN. Where another check of the column
    (e.g. "must be finite") already reports that row, drop the misleading "empty (null)" case."""
    cases = cases.with_row_index("_case")
    nan_nulls = cases.filter(
        (pl.col("check") == "not_nullable")
        & _is_nan(pl.col("failure_case"))
    )
    if nan_nulls.height == 0:
        return cases.drop("_case")
    others = cases.filter(
        (pl.col("check") != "not_nullable") & pl.col("index").is_not_null()
    ).select("column", "index").unique()
    redundant = nan_nulls.join(others, on=["column", "index"], how="semi")["_case"]
    return cases.filter(~pl.col("_case").is_in(redundant.implode())).drop("_case")


def _short(value: object) -> str:
    text = "" if value is None else str(value)
    return repr(text if len(text) <= 80 else text[:77] + "...")
