"""The readers, for a file or for a table held in memory that stands for one.

A ``Table`` is an input the caller holds as a frame (the Python API's DataFrames, Arrow tables
and dicts): it is validated and converted in place, by the readers' own steps, as the Parquet
file it stands for would be. Only where the file's path counts does a table say what counts:
its ``label`` is named in every refusal (``judgments (dict)``), its ``stem`` and ``folder`` are
the names a file's stem and its folder's name give an input that carries no name column
(``judgments``, ``pool``, ``run``). The validated rows, their content hashes (of the rows,
never of a file's bytes: ``metric.hashing``) and every refusal are then those of the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

import polars as pl

from evaluation_pipeline.io import readers
from evaluation_pipeline.io.formats.cells import float_column, string_ids
from evaluation_pipeline.io.locations import Location
from schemas import InputError, validate
from schemas.columns import JUDGMENT_DTYPES, RANK
from schemas.errors import violation
from schemas.ranks import check_ranks


@dataclass(frozen=True, eq=False)
class Table:
    """An input held in memory, read as the Parquet file ``folder/stem.parquet`` would be and
    named ``label`` in every refusal."""

    frame: pl.DataFrame
    label: str
    stem: str
    folder: str

    def __str__(self) -> str:
        return self.label

    @property
    def parent(self) -> PurePosixPath:
        """The folder a file of this name would be in: its name is a run's default pool."""
        return PurePosixPath(self.folder)


# Without judgments (a result read back, or compare without --judgments) a judgment-version
# diff has no grades to list, only the scores: an empty version stands for them.
NO_JUDGMENTS = pl.DataFrame(schema=JUDGMENT_DTYPES)

# Where an input is: a file or folder (local or on object storage), a URL Spark reads as
# written, or a table in memory.
Input = Location | str | Table


def is_table(source: object) -> bool:
    return isinstance(source, Table)


def _rows(table: Table, unread: dict | None = None) -> pl.DataFrame:
    """The table's columns, as the Parquet reader gives a file's: a column of ``unread`` held
    in the type given there is left out (``read_run``'s display-only rank); no rows is
    refused, as an empty file is."""
    frame = table.frame
    if frame.height == 0:
        raise InputError(str(table), [violation("(input)", "the table has no rows", [])])
    dropped = [c for c, dtype in (unread or {}).items()
               if c in frame.columns and frame.schema[c] == dtype]
    return frame.drop(dropped) if dropped else frame


def read_judgments(source: Input, fmt: str | None = None, version: str | None = None,
                   check_keys: bool = True) -> pl.DataFrame:
    """``readers.read_judgments`` of a file, or of a table as of its Parquet file."""
    if not is_table(source):
        return readers.read_judgments(source, fmt, version=version, check_keys=check_keys)
    frame = readers.judgments_table(_rows(source), source, version)
    return validate("Judgments", frame, str(source), line_numbers=None, check_keys=check_keys)


def read_candidates(source: Input, fmt: str | None = None, pool: str | None = None,
                    ranker: str | None = None, check_keys: bool = True, display: bool = True,
                    ranks: bool = False) -> pl.DataFrame:
    """``readers.read_candidates`` of a file or pool folder, or of a table as of one run file
    (``folder/stem.parquet``): its rankers named by its ranker column, else ``ranker``, else
    its stem."""
    if not is_table(source):
        return readers.read_candidates(source, fmt, pool=pool, ranker=ranker,
                                       check_keys=check_keys, display=display, ranks=ranks)
    frame = _rows(source, {} if display or ranks else {RANK: pl.Int64})
    frame = readers.run_table(frame, source, pool, ranker=ranker, fmt="parquet")
    if ranks:
        check_ranks(frame, str(source), None)
    return validate("CandidatePool", frame, str(source), line_numbers=None,
                    check_keys=check_keys)


def read_queries(source: Input, fmt: str | None = None) -> pl.DataFrame:
    """``readers.read_queries`` of a file, or of a table as of its Parquet file."""
    if not is_table(source):
        return readers.read_queries(source, fmt)
    frame = _rows(source)
    weight = (float_column(frame, "weight", str(source), None, text_allowed=False)
              if "weight" in frame.columns else pl.Series("weight", [1.0] * frame.height))
    frame = string_ids(frame.with_columns(weight.alias("weight")), ["query_id"])
    return validate("Queries", frame, str(source), line_numbers=None)
