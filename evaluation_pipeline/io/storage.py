"""Storage layout: every path and file name of the project's inputs and outputs, declared once.

A result folder of ``ndcg-eval score`` holds PER_QUERY_FILE and SUMMARY_FILE, and with a report
REPORT_FILE, HTML_FILE, AGGREGATES_FILE and TRACES_FOLDER.

The pipeline's storage (a local folder or an fsspec URL) holds each published input with a
manifest beside it, and one scores and one report folder per evaluation::

    judgments/<version>/            judgments.parquet, manifest.json
    pools/<pool>/                   candidates.parquet, manifest.json
    queries/                        queries.parquet, manifest.json
    documents/                      documents.parquet, manifest.json (the judge's documents)
    scores/<pool>/<version>/<spec_id>/    per_query.parquet, manifest.json (its stamp)
    reports/<pool>/<version>/<spec_id>/   report.json, report.html, aggregates.parquet, ...
    history/                        history.parquet, history.stamp.json, history.html,
                                    alerts.jsonl (nightly watch)
    .staging/                       scratch folders of running steps (removed by the next run)
    .spill/                         a local storage's scratch: sorts past the memory budget

A place in the storage is a tuple of path components; the storage resource joins them and checks
every one with ``check_safe_name``, so a name can never climb out of its folder.

The landing folder, where inputs arrive::

    judgments/<version>.<ext>       one file per judgment version
    pools/<pool>/                   one run file per ranker, and the READY_MARKER written last
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

# --- a result folder (CLI --out, and the pipeline's scores and report folders) -----------------
PER_QUERY_FILE = "per_query.parquet"
SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.json"
HTML_FILE = "report.html"
AGGREGATES_FILE = "aggregates.parquet"
WORKLIST_FILE = "worklist.csv"  # the holes to judge next (ndcg-eval holes --out, judging_worklist)
TRACES_FOLDER = "traces"
# On object storage only (io.result_folder): written after every file of a result, it names
# them; readers require it. A rewrite stages its files under INCOMING_FOLDER first.
RESULT_MARKER = "_COMPLETE.json"
INCOMING_FOLDER = "_incoming"
# What Spark (Hadoop's output committer) writes into a folder of parts once every part is there.
SPARK_SUCCESS = "_SUCCESS"

# --- published inputs (the pipeline's storage) -------------------------------------------------
MANIFEST_FILE = "manifest.json"
JUDGMENTS_FILE = "judgments.parquet"
POOL_FILE = "candidates.parquet"
QUERIES_FILE = "queries.parquet"
DOCUMENTS_FILE = "documents.parquet"
# Scratch of steps that spill past the memory budget, under a local storage (hidden: no input
# or result is ever named so).
SPILL_FOLDER = ".spill"

# Scratch folders of the pipeline's steps, under the (local) storage, where the next run finds
# and removes those a killed run left (io.leftovers).
STAGING_FOLDER = ".staging"

# --- the landing folder --------------------------------------------------------------------------
LANDED_JUDGMENTS_FOLDER = "judgments"
LANDED_POOLS_FOLDER = "pools"
READY_MARKER = "_READY"

# --- the nightly watch (the pipeline's storage) ------------------------------------------------
HISTORY_FOLDER = "history"
HISTORY_FILE = "history.parquet"
HISTORY_HTML_FILE = "history.html"
# The hashes of the history's bytes its writer left (io.integrity.rewrite_stamp), proven
# before the history is read back.
HISTORY_STAMP_FILE = "history.stamp.json"
ALERTS_FILE = "alerts.jsonl"

# --- the pipeline's default spec: package data, so an installed code location has it too -------
SPEC_FILE = "evaluation_spec.yaml"
DEFAULT_SPEC = resources.files("evaluation_pipeline") / SPEC_FILE

# --- a source checkout's example setup: used only under the development switch ----------------
# `make run`, `make ui` and the tests set NDCG_EVAL_DEV=1; a deployment names its landing
# folder, queries table and storage instead (an installed package has no repository beside it),
# and a documents table if it judges.
REPO = Path(__file__).resolve().parents[2]
DEFAULT_STORAGE = REPO / ".storage"
DEFAULT_LANDING = REPO / "examples" / "data" / "landing"
DEFAULT_QUERIES = REPO / "examples" / "data" / "queries.csv"
DEFAULT_DOCUMENTS = REPO / "examples" / "data" / "documents.csv"
# `make run`'s week: generated once into DEFAULT_NIGHTLY, landed night by night into
# EXAMPLE_LANDING_FOLDER under a local storage (a bucket's: under the Dagster instance folder).
DEFAULT_NIGHTLY = REPO / "examples" / "data" / "nightly"
EXAMPLE_LANDING_FOLDER = "example-landing"

Place = tuple[str, ...]


# --- places in the pipeline's storage ------------------------------------------------------------
def judgments_folder(version: str) -> Place:
    return ("judgments", version)


def judgments_file(version: str) -> Place:
    return (*judgments_folder(version), JUDGMENTS_FILE)


def pool_folder(pool: str) -> Place:
    return ("pools", pool)


def pool_file(pool: str) -> Place:
    return (*pool_folder(pool), POOL_FILE)


QUERIES_FOLDER: Place = ("queries",)


def queries_file() -> Place:
    return (*QUERIES_FOLDER, QUERIES_FILE)


DOCUMENTS_FOLDER: Place = ("documents",)


def documents_file() -> Place:
    return (*DOCUMENTS_FOLDER, DOCUMENTS_FILE)


def manifest_file(folder: Place) -> Place:
    """The manifest of a published input: written last, its presence marks the folder published."""
    return (*folder, MANIFEST_FILE)


def scores_folder(pool: str, version: str, spec_id: str) -> Place:
    return ("scores", pool, version, spec_id)


def scores_file(pool: str, version: str, spec_id: str) -> Place:
    return (*scores_folder(pool, version, spec_id), PER_QUERY_FILE)


def report_folder(pool: str, version: str, spec_id: str) -> Place:
    return ("reports", pool, version, spec_id)


def report_file(pool: str, version: str, spec_id: str) -> Place:
    return (*report_folder(pool, version, spec_id), REPORT_FILE)


def worklist_file(pool: str, version: str, spec_id: str) -> Place:
    """Beside the scores and the report, in a folder of its own: a report's folder is replaced
    whole when the report is written again, which would take a worklist with it."""
    return ("worklists", pool, version, spec_id, WORKLIST_FILE)


HISTORY: Place = (HISTORY_FOLDER,)


def history_file() -> Place:
    return (*HISTORY, HISTORY_FILE)


def history_stamp_file() -> Place:
    return (*HISTORY, HISTORY_STAMP_FILE)


def history_html_file() -> Place:
    return (*HISTORY, HISTORY_HTML_FILE)


def alerts_file() -> Place:
    return (*HISTORY, ALERTS_FILE)
