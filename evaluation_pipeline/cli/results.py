"""Reading back what ``ndcg-eval score`` wrote: the per-query rows and the spec behind them.

On object storage a result is read through its marker (``io.result_folder``): a folder without
one is refused as incomplete, and each file is read where the marker says.
"""

from __future__ import annotations

import argparse
import json
from importlib import resources

import polars as pl

from evaluation_pipeline import settings
from evaluation_pipeline.evaluation import Lineage, read_with_lineage
from evaluation_pipeline.io import integrity
from evaluation_pipeline.io.locations import Location, is_remote
from evaluation_pipeline.io.result_errors import ResultsError
from evaluation_pipeline.io.result_folder import IncompleteResult, result_file
from evaluation_pipeline.io.storage import (
    DEFAULT_SPEC,
    MANIFEST_FILE,
    PER_QUERY_FILE,
    REPORT_FILE,
    SUMMARY_FILE,
    report_file,
    scores_folder,
)
from evaluation_pipeline.spec import (
    PROFILES,
    EvaluationSpec,
    load_spec,
    profile,
    spec_from_mapping,
)
from schemas import validate
from schemas.columns import with_measure_columns


def load_results(
    path: Location, args: argparse.Namespace | None = None
) -> tuple[pl.DataFrame, EvaluationSpec, Lineage]:
    """Per-query rows of an ``ndcg-eval score`` output or of the pipeline's score and report
    folders, with the spec that produced them.

    The spec comes from --spec/--profile when the command has them, else from what the rows
    carry with them (``spec_of_rows``); either way its spec_id must equal the rows' spec_id.
    """
    if not path.exists():  # named itself: not as a folder (its parent) without a marker
        raise ResultsError(f"{path}: no such file or folder (expected ndcg-eval score output)")
    # A folder is a result folder, unless it is the per-query rows themselves (Spark's parts).
    rows_given = not path.is_dir() or path.name == PER_QUERY_FILE
    folder, name = (path.parent, path.name) if rows_given else (path, PER_QUERY_FILE)
    file = folder / name  # as the user knows it; on object storage read where the marker says
    stored = result_file(folder, name)
    if not stored.exists():
        raise ResultsError(f"{file}: no such file (expected ndcg-eval score output)")
    altered = rows_alteration(folder, stored)
    if altered is not None:
        raise ResultsError(f"{altered}: the rows changed after they were written, and are not "
                           "read. Restore them, or write the result again (ndcg-eval score, "
                           "or the pipeline's next run)")
    per_query, lineage = read_with_lineage(stored, str(file))
    per_query = validate("PerQueryResults", per_query, str(file))
    if args is not None and (getattr(args, "spec", None) or getattr(args, "profile", None)):
        spec = load_spec(args.spec) if args.spec else profile(args.profile)
    else:
        spec = spec_of_rows(folder, lineage, flags=args is not None and hasattr(args, "spec"))
    if spec.spec_id != lineage.spec_id:
        raise ResultsError(
            f"{file}: rows were computed under spec {lineage.spec_id}, not {spec.spec_id}"
        )
    return per_query, spec, lineage


def check_measures(per_query: pl.DataFrame, measures: list[str], results: Location | str
                   ) -> None:
    """Refuse ``--measure`` names the per-query rows of ``results`` lack, naming them and the
    measures the rows have (a file written before the measures has the spec's nDCG@K)."""
    found = sorted(with_measure_columns(per_query)["measure"].unique().to_list())
    missing = [m for m in measures if m not in found]
    if missing:
        raise ResultsError(f"--measure {', '.join(missing)}: not among the measures of "
                           f"{results} ({', '.join(found)})")


def rows_alteration(folder: Location, rows: Location) -> str | None:
    """Why the per-query rows at ``rows`` are not the bytes their writer recorded beside them
    (``io.integrity.dataset_stamp``, hashed again), or None when they are, or when nothing
    recorded them. The stamp is in the pipeline's scores folder's ``manifest.json``, in a
    report's report.json and in ``ndcg-eval score``'s summary.json: report.json first, as
    ``ndcg-eval report`` into a score's folder keeps its summary.json beside rows it writes
    again (Spark's parts as one file). Object storage is read as written: its result marker,
    written last, names the complete result's files."""
    if is_remote(folder):
        return None
    for beside in (MANIFEST_FILE, REPORT_FILE, SUMMARY_FILE):
        recorded = _recorded(folder / beside)
        if recorded is not None and "stamp" in recorded:
            return integrity.dataset_alteration(rows, recorded["stamp"])
    return None


def _recorded(path: Location) -> dict | None:
    """A JSON record written beside the rows, or None (none, or not whole: a torn record
    proves nothing, and its own reader names it)."""
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, NotADirectoryError, json.JSONDecodeError, UnicodeDecodeError):
        return None


def spec_of_rows(folder: Location, lineage: Lineage, *, flags: bool = False) -> EvaluationSpec:
    """The spec of the per-query rows in ``folder``, from what is written beside them:
    ``ndcg-eval score``'s summary.json, a pipeline report's report.json, or, for the pipeline's
    scores folder (``scores/<pool>/<version>/<spec_id>/``), the report.json of the same
    evaluation; else the profile or the pipeline's spec ($NDCG_EVAL_SPEC, or the packaged one)
    whose spec_id the rows carry. ``flags``: the command takes --spec and --profile."""
    beside = [(name, _optional(folder, name)) for name in (SUMMARY_FILE, REPORT_FILE)]
    root = _storage_root(folder, lineage)
    if root is not None:
        beside.append((REPORT_FILE, root.joinpath(*report_file(
            lineage.candidate_pool, lineage.judgment_version, lineage.spec_id))))
    for name, stored in beside:
        if stored is not None and stored.exists():
            return spec_from_mapping(json.loads(stored.read_text())["spec"],
                                     source=str(folder / name))
    for known in _known_specs():
        if known.spec_id == lineage.spec_id:
            return known
    hint = "; give --spec or --profile" if flags else ""
    raise ResultsError(
        f"{folder}: no {SUMMARY_FILE} or {REPORT_FILE} beside the rows, and their spec "
        f"{lineage.spec_id} is none of the profiles ({', '.join(PROFILES)}) nor the "
        f"pipeline's spec{hint}")


def _storage_root(folder: Location, lineage: Lineage) -> Location | None:
    """The pipeline's storage when ``folder`` is its scores folder of the rows' evaluation."""
    place = scores_folder(lineage.candidate_pool, lineage.judgment_version, lineage.spec_id)
    parts = folder.parts[-len(place):] if len(folder.parts) > len(place) else ()
    if tuple(parts) != place:
        return None
    root = folder
    for _ in place:
        root = root.parent
    return root


def _known_specs() -> list[EvaluationSpec]:
    known = [profile(name) for name in PROFILES]
    chosen = settings.SPEC.get()
    if chosen:
        known.append(load_spec(chosen))
    with resources.as_file(DEFAULT_SPEC) as packaged:
        known.append(load_spec(packaged))
    return known


def _optional(folder: Location, name: str) -> Location | None:
    """A file of the result that it may not have (the per-query rows were found)."""
    try:
        return result_file(folder, name)
    except IncompleteResult:
        return None
