"""Reading back what ``ndcg-eval score`` wrote: the per-query rows and the spec behind them.

On object storage a result is read through its marker (``io.result_folder``): a folder without
one is refused as incomplete, and each file is read where the marker says.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

import polars as pl

from evaluation_pipeline.core.evaluation import Lineage
from evaluation_pipeline.io.datasets import read_dataset, scan_dataset
from evaluation_pipeline.io.locations import Location, is_remote
from evaluation_pipeline.io.result_folder import IncompleteResult, result_file
from evaluation_pipeline.io.storage import PER_QUERY_FILE, SUMMARY_FILE
from evaluation_pipeline.spec import (
    EvaluationSpec,
    load_spec,
    profile,
    spec_from_mapping,
)
from schemas import validate
from schemas.columns import LINEAGE_COLUMNS
from schemas.errors import EvaluationError


class ResultsError(EvaluationError):
    """Results that cannot be reported as asked: no such file, no spec, a spec that did not
    produce the rows, results that do not measure the same thing. (Rows of mixed lineage are a
    ``core.evaluation.LineageError``.)"""


def load_results(
    path: Location, args: argparse.Namespace | None = None
) -> tuple[pl.DataFrame, EvaluationSpec, Lineage]:
    """Per-query rows of an ``ndcg-eval score`` output, with the spec that produced them.

    The spec comes from summary.json beside the rows, or from --spec/--profile; either way its
    spec_id must equal the rows' spec_id.
    """
    # A folder is a result folder, unless it is the per-query rows themselves (Spark's parts).
    rows_given = not path.is_dir() or path.name == PER_QUERY_FILE
    folder, name = (path.parent, path.name) if rows_given else (path, PER_QUERY_FILE)
    file = folder / name  # as the user knows it; on object storage read where the marker says
    stored = result_file(folder, name)
    if not stored.exists():
        raise ResultsError(f"{file}: no such file (expected ndcg-eval score output)")
    if is_remote(stored):  # read through its filesystem and options
        per_query = read_dataset(stored)
        lineage = Lineage.from_rows(per_query, str(file))
    else:
        per_query, lineage = read_with_lineage(stored)
    per_query = validate("PerQueryResults", per_query, str(file))
    summary = folder / SUMMARY_FILE
    summary_stored = _optional(folder, SUMMARY_FILE)
    if args is not None and (getattr(args, "spec", None) or getattr(args, "profile", None)):
        spec = load_spec(args.spec) if args.spec else profile(args.profile)
    elif summary_stored is not None and summary_stored.exists():
        spec = spec_from_mapping(json.loads(summary_stored.read_text())["spec"],
                                 source=str(summary))
    else:
        raise ResultsError(f"{file}: no {SUMMARY_FILE} beside it; give --spec or --profile")
    if spec.spec_id != lineage.spec_id:
        raise ResultsError(
            f"{file}: rows were computed under spec {lineage.spec_id}, not {spec.spec_id}"
        )
    return per_query, spec, lineage


def _optional(folder: Location, name: str) -> Location | None:
    """A file of the result that it may not have (the per-query rows were found)."""
    try:
        return result_file(folder, name)
    except IncompleteResult:
        return None


def read_with_lineage(file: Path) -> tuple[pl.DataFrame, Lineage]:
    """The rows of a per-query file (or Spark's folder of parts) and their lineage, the
    lineage columns read only once.

    The lineage is one value per column (one evaluation), but stored on every row: the two
    sha256 columns alone took 256 MB each at 1M queries x 2 rankers x 2 cutoffs. Their distinct
    values come from a streamed scan; the frame then holds them as literal columns (one value,
    broadcast), in the file's column order."""
    scan = scan_dataset(file)
    names = scan.collect_schema().names()
    stored = [c for c in LINEAGE_COLUMNS if c in names]
    distinct = scan.select(pl.col(c).unique().implode() for c in stored).collect(
        engine="streaming")
    lineage = Lineage.from_values({c: distinct[c][0].to_list() for c in stored}, str(file))
    rows = read_dataset(file, [c for c in names if c not in stored])
    values = asdict(lineage)
    return rows.with_columns(pl.lit(values[c], dtype=pl.String).alias(c)
                             for c in stored).select(names), lineage
