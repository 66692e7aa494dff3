"""Reading back what ``ndcg-eval score`` wrote: the per-query rows and the spec behind them.

On object storage a result is read through its marker (``io.result_folder``): a folder without
one is refused as incomplete, and each file is read where the marker says.
"""

from __future__ import annotations

import argparse
import json

import polars as pl

from evaluation_pipeline.evaluation import Lineage, read_with_lineage
from evaluation_pipeline.io.locations import Location
from evaluation_pipeline.io.result_folder import IncompleteResult, result_file
from evaluation_pipeline.io.storage import PER_QUERY_FILE, SUMMARY_FILE
from evaluation_pipeline.spec import (
    EvaluationSpec,
    load_spec,
    profile,
    spec_from_mapping,
)
from schemas import validate
from schemas.errors import EvaluationError


class ResultsError(EvaluationError):
    """Results that cannot be reported as asked: no such file, no spec, a spec that did not
    produce the rows, results that do not measure the same thing. (Rows of mixed lineage are a
    ``evaluation.LineageError``.)"""


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
    per_query, lineage = read_with_lineage(stored, str(file))
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
