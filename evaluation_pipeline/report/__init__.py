"""Reports: report.json, aggregates.parquet, per_query.parquet and report.html for one evaluation.

Field names of report.json are documented in REPORT_FORMAT.md beside this file.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import polars as pl

from evaluation_pipeline.aggregation.sums import Numbers
from evaluation_pipeline.evaluation import Lineage
from evaluation_pipeline.io import integrity
from evaluation_pipeline.io.atomic import copy_file, write_json, write_parquet, write_text
from evaluation_pipeline.io.datasets import read_dataset, scan_dataset
from evaluation_pipeline.io.locations import Location, is_remote
from evaluation_pipeline.io.storage import (
    AGGREGATES_FILE,
    HTML_FILE,
    PER_QUERY_FILE,
    REPORT_FILE,
    TRACES_FOLDER,
)
from evaluation_pipeline.report.build import (
    ReportPlan,
    build_report,
    check_options,
)
from evaluation_pipeline.report.config import ReportConfig, ReportOptionError
from evaluation_pipeline.report.html import render_html
from evaluation_pipeline.report.markdown import headline_markdown
from evaluation_pipeline.report.model import Report
from evaluation_pipeline.spec import EvaluationSpec
from schemas import validate
from schemas.columns import REPORT_COLUMNS

__all__ = ["REPORT_COLUMNS", "ReportConfig", "ReportOptionError", "check_options",
           "headline_markdown", "write_report"]


def write_report(
    out_dir: Path,
    per_query: pl.DataFrame | None,
    spec: EvaluationSpec,
    lineage: Lineage,
    queries: pl.DataFrame | None = None,
    config: ReportConfig | None = None,
    *,
    candidates: pl.DataFrame | None = None,
    judgments: pl.DataFrame | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    nightly: dict | None = None,
    queries_sha256: str | None = None,
    per_query_source: Location | None = None,
    numbers: tuple[ReportPlan, Numbers] | None = None,
    night_inputs: tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame] | None = None,
    agreement: dict | None = None,
    scoring: dict | None = None,
) -> dict:
    """Write the report files into ``out_dir`` (each atomically) and return report.json's dict.

    With ``candidates`` (the pool) and ``judgments`` the per-candidate traces of the most
    regressed queries are written to ``traces/`` and linked from the page. ``nightly`` is the
    pipeline's comparison with the previous night (report.json's ``nightly``, a table on the
    page). ``queries_sha256``, the hash of the queries table the weights and slices came from,
    joins the lineage (``lineage.queries_sha256``) when a queries table is given.
    ``per_query_source``: the per-query results ``per_query`` was read from, copied whole
    into the report's per_query.parquet (``_write_per_query``); ``per_query`` may then hold
    only the columns the report reads (``REPORT_COLUMNS``), or be None when ``numbers`` (the
    report's plan and numbers, summed on a cluster or from both nights at once:
    ``report.build.local_numbers``) are given. ``night_inputs``: (judgments, tonight's
    candidates, the previous night's), at least of the queries ``traces.mover_queries`` names:
    the movers' traces of both nights are written and linked. ``scoring``: in the pipeline, how
    the per-query rows were scored (report.json's ``scoring``: in full, or from an earlier
    version's scores, and why). ``agreement``: a version with
    raters, its ``analysis.agreement`` document (report.json's ``agreement``, a section of
    the page).
    """
    out_dir = Path(out_dir)
    config = (config or ReportConfig()).under(spec)
    report, aggregates, differences = build_report(
        per_query, spec, lineage, queries, config, progress, candidates, nightly, numbers
    )
    aggregates = validate("Aggregates", aggregates, "aggregates")
    if queries is not None and queries_sha256 is not None:
        report["lineage"]["queries_sha256"] = queries_sha256
    if candidates is not None and judgments is not None and report["comparison"]:
        from evaluation_pipeline.report.traces import write_regression_traces

        report["traces"] = write_regression_traces(
            out_dir / TRACES_FOLDER, report["comparison"], candidates, judgments, spec, progress
        )
    if night_inputs is not None and report.get("nightly"):
        from evaluation_pipeline.report.traces import write_night_traces

        report["nightly"] = write_night_traces(out_dir / TRACES_FOLDER, report["nightly"],
                                               report["headline_cutoff"], *night_inputs, spec)
    if agreement is not None:
        report["agreement"] = agreement
    if scoring is not None:
        report["scoring"] = scoring
    report["files"] = {
        "report": REPORT_FILE,
        "aggregates": AGGREGATES_FILE,
        "per_query": PER_QUERY_FILE,
        "html": HTML_FILE,
        "traces": TRACES_FOLDER if (out_dir / TRACES_FOLDER).is_dir() else None,
    }
    # Everything is computed before the first file is written.
    html = render_html(report, differences)
    _write_per_query(per_query, per_query_source, out_dir / PER_QUERY_FILE)
    # The rows' bytes as written, for those who read them back (``compare``, ``report``) to
    # prove them, as summary.json records them: report.json is written last.
    report["stamp"] = integrity.dataset_stamp(out_dir / PER_QUERY_FILE)
    # Held to its model whole: no field it lacks is written (REPORT_FORMAT.md).
    report = Report.checked(report)
    write_parquet(aggregates, out_dir / AGGREGATES_FILE)
    write_text(html, out_dir / HTML_FILE)
    write_json(report, out_dir / REPORT_FILE)
    return report


def _write_per_query(per_query: pl.DataFrame | None, source: Location | None,
                     target: Path) -> None:
    """The report's per_query.parquet: ``per_query`` written, else the rows at ``source``.
    One local file is copied byte for byte: streaming its rows through polars' sink took 6.8 s
    and 0.83 GB for 20M rows, the copy 0.1 s and no memory. A folder of parts (Spark's) is
    streamed into one file, and rows on object storage are read and written."""
    if source is None:
        write_parquet(per_query, target)
    elif is_remote(source):
        write_parquet(read_dataset(source), target)
    elif not Path(source).is_dir():
        copy_file(Path(source), target)
    else:
        write_parquet(scan_dataset(source), target)
