"""Storage layout: every file name and folder of the project's outputs, declared once.

A result folder of ``ndcg-eval score`` holds PER_QUERY_FILE and SUMMARY_FILE, and with a report
REPORT_FILE, HTML_FILE, AGGREGATES_FILE and TRACES_FOLDER. The pipeline's storage holds
published inputs (a manifest beside each) and one scores and one report folder per evaluation.
"""

from __future__ import annotations

# --- a result folder (CLI --out, and the pipeline's scores and report folders) -----------------
PER_QUERY_FILE = "per_query.parquet"
SUMMARY_FILE = "summary.json"
REPORT_FILE = "report.json"
HTML_FILE = "report.html"
AGGREGATES_FILE = "aggregates.parquet"
TRACES_FOLDER = "traces"

# --- published inputs (the pipeline's storage) -------------------------------------------------
MANIFEST_FILE = "manifest.json"
JUDGMENTS_FILE = "judgments.parquet"
POOL_FILE = "candidates.parquet"
QUERIES_FILE = "queries.parquet"

# --- the landing folder --------------------------------------------------------------------------
READY_MARKER = "_READY"

# --- the nightly watch (the pipeline's storage) ------------------------------------------------
HISTORY_FOLDER = "history"
HISTORY_FILE = "history.parquet"
HISTORY_HTML_FILE = "history.html"
ALERTS_FILE = "alerts.jsonl"
