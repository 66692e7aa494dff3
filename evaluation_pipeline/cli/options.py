"""Options several commands share: the spec (--spec, --profile, --cutoff), the report's, and
where a path argument points (--storage-options), and the memory budget (--memory-limit,
--spill-dir)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from evaluation_pipeline.io import landing, leftovers
from evaluation_pipeline.io.budget import Budget
from evaluation_pipeline.io.locations import Location, location
from evaluation_pipeline.report import ReportConfig
from evaluation_pipeline.spec import EvaluationSpec, load_spec, overridden, profile


def resolve_spec(args: argparse.Namespace) -> EvaluationSpec:
    """The spec of --spec or --profile, its measures replaced by --measure's and its nDCG@K by
    --cutoff's (``spec.overridden``, as the Python API's ``measures=`` and ``cutoffs=``)."""
    spec = load_spec(args.spec) if args.spec else profile(args.profile or "default")
    return overridden(spec, args.cutoff or None, getattr(args, "measure", None) or None)


def report_config(args: argparse.Namespace) -> ReportConfig:
    """The report options; a level outside (0, 1) or no resamples is refused here, before
    anything is read or written (``ReportOptionError``)."""
    return ReportConfig(
        slices=tuple(args.slices) if args.slices else None,
        ci_level=args.ci_level,
        n_bootstrap=args.bootstrap,
        seed=args.seed,
        baseline=args.baseline,
        n_regressions=args.regressions,
    )


def place(args: argparse.Namespace, where: str | os.PathLike | None) -> Location | Any:
    """A path argument as a location: a local Path, or a URL with the storage options of
    --storage-options over NDCG_EVAL_STORAGE_OPTIONS (``io.locations``); None stays None."""
    if where is None:
        return None
    return location(where, getattr(args, "storage_options", None))


def file_sha256(where: Location | None) -> str | None:
    """The SHA-256 of a file's bytes as read (the queries table behind a report,
    ``io.landing.file_sha256``); None for none given."""
    return None if where is None else landing.file_sha256(where)
def memory_budget(args: argparse.Namespace) -> Budget:
    """--memory-limit and --spill-dir, each else its environment variable, else 2 GB and the
    system's temporary folder; a size that is not one, or a spill folder that cannot be one, is
    refused here, before anything is read or written."""
    budget = Budget.of(args.memory_limit, args.spill_dir)
    budget.check_spill_dir()
    # What a killed run's sort left there (a held folder is a live run's, and is kept).
    leftovers.sweep_scratch(budget.spill_dir)
    return budget
