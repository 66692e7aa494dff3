"""The headline table: one row per ranker and cutoff of summary.json's or report.json's results.

One renderer for its four views: after ``ndcg-eval score`` (the summary: no intervals), after
``ndcg-eval report`` (intervals and the weighted mean), the markdown of the pipeline's report
metadata, and the pipeline's summary after ``make run``. Each view is a list of columns; a
column is a header, the cell it takes from a result row, and its place in the layout.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from evaluation_pipeline.report import tables
from evaluation_pipeline.report.format import interval, number, with_interval
from schemas.columns import STATUSES, ndcg_name

Cell = Callable[[dict], object]

# Terminal headers of the status counts: short enough for a narrow column.
STATUS_HEADERS = dict(zip(STATUSES, ("scored", "no_pos", "incompl", "notjudg", "missing"),
                          strict=True))
# Markdown headers of the status counts (the report page has room for words).
STATUS_WORDS = dict(zip(STATUSES, ("scored", "no positive", "incomplete", "not judged",
                                   "missing"), strict=True))


def ranker(row: dict) -> str:
    return row["ranker"]


def cutoff(row: dict) -> int:
    return row["cutoff"]


def ndcg(row: dict) -> str:
    return number(row["macro_ndcg"])


def ndcg_interval(row: dict) -> str:
    return interval(row["macro_ndcg_interval"])


def ndcg_with_interval(row: dict) -> str:
    return with_interval(row["macro_ndcg"], row.get("macro_ndcg_interval"))


def weighted(row: dict) -> str:
    return number(row["weighted_ndcg"])


def weighted_with_interval(row: dict) -> str:
    return with_interval(row["weighted_ndcg"], row.get("weighted_ndcg_interval"))


def with_number(row: dict) -> int:
    return row["n_with_number"]


def queries(row: dict) -> int:
    return row["n_queries"]


def status_count(status: str) -> Cell:
    return lambda row: row["status_counts"][status]


@dataclass(frozen=True)
class Column:
    header: str
    cell: Cell
    left: bool = False
    width: int = 0  # fixed layout: the column's width
    gap: int = 1  # fixed layout: spaces before the column


@dataclass(frozen=True)
class View:
    columns: tuple[Column, ...]
    layout: str  # "fixed", "aligned" or "markdown"
    indent: str = ""  # fixed layout: before every line


def headline_table(results: list[dict], view: View) -> str:
    headers = [c.header for c in view.columns]
    rows = [[c.cell(row) for c in view.columns] for row in results]
    lefts = [c.left for c in view.columns]
    if view.layout == "aligned":  # the left-aligned columns lead
        return tables.aligned(headers, rows, left=sum(lefts))
    if view.layout == "markdown":
        return "\n".join(tables.markdown(headers, rows, lefts))
    return "\n".join(tables.fixed(headers, rows, [c.width for c in view.columns], lefts,
                                  [c.gap for c in view.columns], view.indent))


SUMMARY_VIEW = View((
    Column("ranker", ranker, left=True, width=20),
    Column("K", cutoff, width=4),
    Column("NDCG", ndcg, width=7),
    Column("queries", queries, width=8),
    *(Column(STATUS_HEADERS[s], status_count(s), width=7) for s in STATUSES),
), layout="fixed")

REPORT_VIEW = View((
    Column("ranker", ranker, left=True),
    Column("K", cutoff),
    Column("NDCG", ndcg),
    Column("interval", ndcg_interval),
    Column("weighted", weighted),
    Column("with_num", with_number),
    Column("queries", queries),
    *(Column(STATUS_HEADERS[s], status_count(s)) for s in STATUSES if s != "scored"),
), layout="aligned")

MARKDOWN_VIEW = View((
    Column("ranker", ranker, left=True),
    Column("K", cutoff),
    Column("NDCG", ndcg_with_interval, left=True),
    Column("weighted", weighted_with_interval, left=True),
    Column("with number", with_number),
    Column("queries", queries),
    *(Column(STATUS_WORDS[s], status_count(s)) for s in STATUSES if s != "scored"),
), layout="markdown")

PIPELINE_VIEW = View((
    Column("ranker", ranker, left=True, width=14),
    Column("K", cutoff, width=3),
    Column("NDCG [CI]", ndcg_with_interval, left=True, width=26, gap=2),
    Column("with number", with_number, width=11),
    Column("queries", queries, width=7),
), layout="fixed", indent="   ")


def has_other_measures(report: dict) -> bool:
    """Whether a report's spec scores more than its nDCG@K (report.json's ``measures``)."""
    measures = report.get("measures")
    if not measures:
        return False
    own = {ndcg_name(k) for k in report["spec"]["cutoffs"]}
    return any(name not in own for name in measures["names"])


def measures_table(report: dict, layout: str, intervals: bool = True) -> str | None:
    """Rankers by measures, as TREC overviews and ir_measures' ``calc_aggregate`` print them:
    one row per ranker, one column per measure of the spec, each cell the macro mean over all
    queries (with its interval in the report's views). None when the spec scores its nDCG@K
    alone: the views above say all there is."""
    if not has_other_measures(report):
        return None
    names = report["measures"]["names"]
    cells = {(r["ranker"], r["measure"]): r for r in report["measures"]["results"]
             if r["slice_column"] == "all"}
    rankers = list(dict.fromkeys(ranker for ranker, _ in cells))
    columns = (Column("ranker", ranker, left=True),
               *(Column(name, _measure_cell(cells, name, intervals), left=intervals)
                 for name in names))
    rows = [{"ranker": r} for r in rankers]
    return headline_table(rows, View(columns, layout))


def _measure_cell(cells: dict, name: str, intervals: bool) -> Cell:
    def cell(row: dict) -> str:
        found = cells.get((row["ranker"], name))
        if found is None:
            return number(None)
        if not intervals:
            return number(found["macro_value"])
        return with_interval(found["macro_value"], found["macro_value_interval"])
    return cell
