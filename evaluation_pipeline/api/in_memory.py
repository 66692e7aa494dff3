"""In-memory inputs of the Python API, read where they are as the files the CLI reads.

A DataFrame (polars or pandas), an Arrow table or a nested dict becomes a table in memory
(``io.table_inputs.Table``) named as the CLI's files are (``judgments.parquet``,
``pool/run.parquet``, ``queries.parquet``) and read in place by the CLI's own readers: the same
validation and errors, the same default names (a file's stem, its folder's name) and the same
content hashes, which are of the rows (contract section 1), never of a file's bytes. A refusal
names the input as the caller gave it (``judgments (dict)``). Only an engine that reads files
alone (``Engine.keeps_rows`` false: streaming, Spark) gets them staged as Parquet files in a
temporary folder (``Staging``), its refusals named alike.

Nested dicts are those of pytrec_eval and ir_measures: ``{query_id: {doc_id: grade}}`` (a
qrels file: a grade below 0 is "in the pool, not judged", ``unknown``), and
``{query_id: {doc_id: score}}`` for one ranker or ``{ranker: {query_id: {doc_id: score}}}``.
A version with several raters is ``{rater: {query_id: {doc_id: grade}}}``, one qrels per rater.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from evaluation_pipeline.analysis.quality import queries_sha256
from evaluation_pipeline.engines import ScoringInputs
from evaluation_pipeline.io.landing import file_sha256
from evaluation_pipeline.io.locations import Location, location
from evaluation_pipeline.io.table_inputs import Input, Table, read_queries
from schemas.columns import GRADED, RANK, RATER, UNKNOWN
from schemas.errors import EvaluationError, InputError, violation
from schemas.integers import refuse_out_of_int64

# The names an in-memory input gets when the call names none: those of files named so
# (judgments.parquet, pool/run.parquet, queries.parquet).
STEMS = {"judgments": "judgments", "run": "run", "queries": "queries"}
POOL_FOLDER = "pool"
ACCEPTED = ("a path or URL, a polars or pandas DataFrame, a pyarrow Table or a nested dict "
            "({query_id: {doc_id: value}})")
# The contract's integer columns of each input, which the reader casts to int64.
INTEGER_COLUMNS = {"judgments": ("grade",), "run": (RANK,), "queries": ()}


def is_path(value: Any) -> bool:
    return isinstance(value, str | os.PathLike)


def describe(value: Any) -> str:
    """What the caller gave, as a refusal names it: ``dict``, ``polars DataFrame``, ..."""
    if isinstance(value, Mapping):
        return "dict"
    return f"{type(value).__module__.split('.')[0]} {type(value).__name__}"


def as_input(value: Any, kind: str) -> Input:
    """``value`` as an input the readers take: a path or URL as given (with the storage
    options of NDCG_EVAL_STORAGE_OPTIONS), else a table in memory named as the file it stands
    for (None, as any other value that is no input, is refused naming what was given)."""
    if is_path(value):
        return location(value)
    label = f"{kind} ({describe(value)})"
    frame = _frame(value, kind, label)
    _refuse_out_of_int64(frame, kind, label)
    return Table(frame, label, stem=STEMS[kind], folder=POOL_FOLDER if kind == "run" else "")


def _frame(value: Any, kind: str, label: str) -> pl.DataFrame:
    """The columns of an in-memory input as a polars frame: a polars one as it is, any other
    through Arrow, as a Parquet file of it would be read."""
    if isinstance(value, pl.DataFrame):
        return value
    if isinstance(value, pl.LazyFrame):
        return value.collect()
    table = _table(value, kind, label)
    try:
        return pl.from_arrow(table)
    except (pa.ArrowException, pl.exceptions.PolarsError, TypeError, ValueError) as exc:
        raise InputError(label, [violation("(input)", f"cannot be read as a table: {exc}",
                                           [])]) from None


class Staging:
    """Where the tables in memory of one call are written as Parquet files, for an engine that
    reads files alone; a refusal of a staged file names the input the caller gave."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.labels: dict[str, str] = {}  # a staged file's path: the input as the caller named it

    def inputs(self, inputs: ScoringInputs) -> ScoringInputs:
        """``inputs`` with each table written as the file it stands for."""
        return dataclasses.replace(inputs, judgments=self.place(inputs.judgments),
                                   run=self.place(inputs.run))

    def place(self, source: Input) -> Location:
        if not isinstance(source, Table):
            return source
        target = self.folder / (source.folder or ".") / f"{source.stem}.parquet"
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(source.frame.to_arrow(), target)
        self.labels[str(target)] = source.label
        if source.folder:
            self.labels[str(target.parent)] = source.label
        return target

    @contextmanager
    def naming(self) -> Iterator[None]:
        """A refusal of a staged file names the input the caller gave instead."""
        try:
            yield
        except InputError as exc:
            label = self.labels.get(exc.source)
            if label is None:
                raise
            raise dataclasses.replace(exc, source=label) from None
        except EvaluationError as exc:
            text = str(exc)
            for path, label in sorted(self.labels.items(), key=lambda item: -len(item[0])):
                text = text.replace(path, label)
            if text != str(exc) and len(exc.args) == 1:
                exc.args = (text,)
            raise


def _table(value: Any, kind: str, label: str) -> pa.Table:
    """The columns of an in-memory input, as an Arrow table."""
    try:
        if isinstance(value, pa.Table):
            return value
        if isinstance(value, pa.RecordBatch):
            return pa.Table.from_batches([value])
        if type(value).__module__.split(".")[0] == "pandas" and hasattr(value, "columns"):
            return pa.Table.from_pandas(value, preserve_index=False)
        if isinstance(value, Mapping) and kind != "queries":
            return _judgment_table(value, label) if kind == "judgments" else _run_table(value,
                                                                                        label)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        if isinstance(exc, EvaluationError):
            raise
        raise InputError(label, [violation("(input)", f"cannot be read as a table: {exc}",
                                           [])]) from None
    accepted = ACCEPTED if kind != "queries" else "a path or URL, a DataFrame or a pyarrow Table"
    raise InputError(label, [violation("(input)", f"expected {accepted}", [])])


def _refuse_out_of_int64(frame: pl.DataFrame, kind: str, label: str) -> None:
    """An integer column holding a value int64 cannot (inf, 2**70, a uint64 above it) is
    refused naming its rows, as the contract's check of such values (``schemas.integers``):
    a cast to int64 would raise polars' error, or make the value null."""
    for column in INTEGER_COLUMNS[kind]:
        if column in frame.columns:
            refuse_out_of_int64(frame[column], column, label)


def _values(values: list) -> pa.Array:
    """A dict's values as one Arrow column: in their own type when Arrow holds them in one,
    else as text (an int beyond int64, 2 beside "2" or True), which the reader then judges as
    it judges a CSV cell written so: read as the number it spells, or refused naming it."""
    try:
        return pa.array(values)
    except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([None if value is None else str(value) for value in values])


def _nested(value: Mapping, label: str, what: str) -> None:
    """Refuse a dict whose values are not dicts ({query_id: {doc_id: value}})."""
    if not value:
        raise InputError(label, [violation("(input)", "the dict has no queries", [])])
    flat = [str(key) for key, inner in value.items() if not isinstance(inner, Mapping)]
    if flat:
        raise InputError(label, [violation(
            "(input)", f"expected {{query_id: {{doc_id: {what}}}}}: these keys do not map to "
            "a dict", range(1, len(flat) + 1), flat)])


def _pairs(value: Mapping) -> dict[str, list]:
    """The query_id, doc_id and value columns of ``{query_id: {doc_id: value}}``."""
    return {
        "query_id": [str(q) for q, docs in value.items() for _ in docs],
        "doc_id": [str(d) for docs in value.values() for d in docs],
        "value": [v for docs in value.values() for v in docs.values()],
    }


def _is_by_name(value: Mapping) -> bool:
    """True for ``{name: {query_id: {doc_id: value}}}``: a dict of rankers' runs, or of
    raters' grades."""
    first = next(iter(value.values()))
    return bool(first) and isinstance(next(iter(first.values())), Mapping)


def _pairs_by_name(value: Mapping, column: str) -> dict[str, list]:
    """``column`` (ranker or rater) and the columns of ``_pairs`` of each dict in ``value``."""
    parts = {name: _pairs(inner) for name, inner in value.items()}
    return {
        column: [str(name) for name, part in parts.items() for _ in part["query_id"]],
        **{c: [x for part in parts.values() for x in part[c]]
           for c in ("query_id", "doc_id", "value")},
    }


def _judgment_table(value: Mapping, label: str) -> pa.Table:
    """A qrels dict as a judgment version's columns (rel < 0 is ``unknown``, as in qrels);
    ``{rater: qrels}``, with a rater column."""
    _nested(value, label, "grade")
    if _is_by_name(value):
        for name, qrels in value.items():
            _nested(qrels, f"{label}[{name!r}]", "grade")
        columns = _pairs_by_name(value, RATER)
    else:
        columns = _pairs(value)
    rel = _values(columns.pop("value"))
    if pa.types.is_integer(rel.type):
        judged = pc.greater_equal(rel, 0)
        grade = pc.if_else(judged, rel, pa.scalar(None, rel.type))
        status = pc.if_else(judged, GRADED, UNKNOWN)
    else:  # refused by the reader, naming the rows, as a file holding them would be
        grade, status = rel, pa.array([GRADED] * len(rel))
    return pa.table({**columns, "grade": grade, "grade_status": status})


def _run_table(value: Mapping, label: str) -> pa.Table:
    """A run dict of one ranker, or ``{ranker: run}``, as a pool's columns."""
    _nested(value, label, "score")
    if _is_by_name(value):
        for name, run in value.items():
            _nested(run, f"{label}[{name!r}]", "score")
        columns = _pairs_by_name(value, "ranker")
    else:
        columns = _pairs(value)
    columns["score"] = _scores(columns.pop("value"))
    return pa.table(columns)


def _scores(values: list) -> pa.Array:
    """A run dict's scores in their own type; an int beyond int64 as the float64 a score is
    (``2**70`` is a score, if not a grade); anything else as ``_values`` gives it, for the
    reader to refuse by its rule."""
    try:
        return pa.array(values)
    except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    try:
        return pa.array([float(v) if isinstance(v, int) and not isinstance(v, bool) else v
                         for v in values], type=pa.float64())
    except (OverflowError, pa.ArrowInvalid, pa.ArrowTypeError):
        return _values(values)


def read_queries_input(queries: Any) -> tuple[pl.DataFrame, str]:
    """The validated queries table and its hash: a file's bytes' SHA-256, as the CLI records
    it, or for a table in memory the SHA-256 of its rows (``analysis.quality.queries_sha256``)."""
    source = as_input(queries, "queries")
    table = read_queries(source)
    return table, (queries_sha256(table) if isinstance(source, Table)
                   else file_sha256(source))
