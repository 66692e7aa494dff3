"""Reading back what ``ndcg-eval score`` wrote: the per-query rows and the spec behind them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import polars as pl

from evaluation_pipeline.core.evaluation import Lineage
from evaluation_pipeline.io.storage import PER_QUERY_FILE, SUMMARY_FILE
from evaluation_pipeline.spec import EvaluationSpec, load_spec, profile, spec_from_mapping
from schemas import validate
from schemas.errors import EvaluationError


class ResultsError(EvaluationError):
    """Results that cannot be reported as asked: no such file, no spec, a spec that did not
    produce the rows, results that do not measure the same thing. (Rows of mixed lineage are a
    ``core.evaluation.LineageError``.)"""


def load_results(
    path: Path, args: argparse.Namespace | None = None
) -> tuple[pl.DataFrame, EvaluationSpec, Lineage]:
    """Per-query rows of an ``ndcg-eval score`` output, with the spec that produced them.

    The spec comes from summary.json beside the rows, or from --spec/--profile; either way its
    spec_id must equal the rows' spec_id.
    """
    file = path / PER_QUERY_FILE if path.is_dir() else path
    if not file.exists():
        raise ResultsError(f"{file}: no such file (expected ndcg-eval score output)")
    per_query = validate("PerQueryResults", pl.read_parquet(file, glob=False), str(file))
    lineage = Lineage.from_rows(per_query, str(file))
    summary = file.parent / SUMMARY_FILE
    if args is not None and (getattr(args, "spec", None) or getattr(args, "profile", None)):
        spec = load_spec(args.spec) if args.spec else profile(args.profile)
    elif summary.exists():
        spec = spec_from_mapping(json.loads(summary.read_text())["spec"], source=str(summary))
    else:
        raise ResultsError(f"{file}: no {SUMMARY_FILE} beside it; give --spec or --profile")
    if spec.spec_id != lineage.spec_id:
        raise ResultsError(
            f"{file}: rows were computed under spec {lineage.spec_id}, not {spec.spec_id}"
        )
    return per_query, spec, lineage
