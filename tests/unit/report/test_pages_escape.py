"""Names users supply (rankers, query ids, query text, document ids) are text on every page the
reports write: report.html, the traces of both kinds and the trend page. Markup, ampersands and
quotes in them are escaped, never run, rendered or cut short (in text and in attributes)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest

from evaluation_pipeline.aggregation.aggregate_table import aggregate_with_intervals
from evaluation_pipeline.evaluation import evaluate
from evaluation_pipeline.io.readers import read_judgments, read_pool, read_queries
from evaluation_pipeline.nightly.watch import (
    WatchSettings,
    compared_frames,
    record_evaluation,
    watch_evaluation,
)
from evaluation_pipeline.report import ReportConfig, write_report
from evaluation_pipeline.report.trend import render_trend
from evaluation_pipeline.spec import EvaluationSpec
from tests.support.paths import EXAMPLES, P28, P29, V2

MARKUP = '<script>alert("x")</script> & \'q\''
SETTINGS = WatchSettings(n_bootstrap=200)
SPEC = EvaluationSpec(cutoffs=(5, 10))


def named(column: str) -> pl.Expr:
    """A column of names with the markup appended to each."""
    return pl.col(column) + MARKUP


def href(pool: str, version: str, spec_id: str) -> str:
    return f"../reports/{pool}/{version}/{spec_id}/report.html"


def write_pages(root: Path) -> dict:
    """The example's two nights with the markup in every name: the second night's report (its
    traces of both kinds) and the trend page of both. Returns the pages (name -> HTML), the
    report (report.json's dict), tonight's candidates and the judgments."""
    judgments = read_judgments(V2).with_columns(named("query_id"), named("doc_id"))
    version = judgments["judgment_version"][0]
    queries = read_queries(EXAMPLES / "queries.csv").with_columns(
        named("query_id"), named("query_text"))
    nights = [read_pool(pool).with_columns(named("ranker"), named("query_id"), named("doc_id"))
              for pool in (P28, P29)]
    ready = {P28.name: "2026-11-28T06:00:00+00:00", P29.name: "2026-11-29T06:00:00+00:00"}
    history, previous = None, None
    for pool, candidates in zip((P28, P29), nights):
        rows, lineage = evaluate(judgments, candidates, SPEC)
        step = watch_evaluation(
            compared_frames(previous, rows, SETTINGS), candidate_pool=pool.name,
            judgment_version=version, spec_id=SPEC.spec_id, ready_at=ready,
            published_at={version: "2026-11-27T06:00:00+00:00"}, history=history,
            now=ready[pool.name], settings=SETTINGS)
        history = record_evaluation(history, aggregate_with_intervals(rows, queries,
                                                                      n_bootstrap=100),
                                    step, evaluated_at=ready[pool.name])
        previous = rows
    out = root / "report"
    report = write_report(out, rows, SPEC, lineage, queries,
                          ReportConfig(n_bootstrap=200, n_regressions=3),
                          candidates=nights[1], judgments=judgments, nightly=step.section,
                          night_inputs=(judgments, nights[1], nights[0]))
    pages = {str(p.relative_to(out)): p.read_text() for p in sorted(out.rglob("*.html"))}
    pages["history.html"] = render_trend(history, href)
    return {"pages": pages, "report": report, "candidates": nights[1], "judgments": judgments}


class Parsed(HTMLParser):
    """A page's elements, text and attribute values as a browser reads them."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attributes: list[str] = []
        self.texts: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += [value for _, value in attrs if value is not None]

    def handle_data(self, data):
        self.texts.append(data)

    @property
    def text(self) -> str:
        return "".join(self.texts)


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> dict:
    return write_pages(tmp_path_factory.mktemp("markup"))


def top_documents(written: dict, ranker: str, query_id: str) -> list[str]:
    """The judged documents a ranker scored highest for a query: first on every trace of it
    (the spec leaves unjudged documents out)."""
    rows = written["candidates"].filter(
        (pl.col("ranker") == ranker) & (pl.col("query_id") == query_id)
    ).join(written["judgments"], on=["query_id", "doc_id"], how="semi")
    return rows.filter(pl.col("score") == pl.col("score").max())["doc_id"].to_list()


def test_every_page_is_written(written):
    report, pages = written["report"], written["pages"]
    movers = [m for c in report["nightly"]["comparisons"] for m in c["movers"] if m.get("trace")]
    assert movers and report["traces"]
    assert set(pages) == {"report.html", "history.html", *(t["path"] for t in report["traces"]),
                          *(m["trace"] for m in movers)}


def test_no_page_runs_or_renders_the_markup(written):
    for name, page in written["pages"].items():
        assert MARKUP not in page and "<script" not in page and "&lt;script&gt;" in page, name
        assert "script" not in Parsed(page).tags, name
        # Every ampersand starts an entity: none is left bare to be read as one.
        assert not re.findall(r"&(?![a-zA-Z]+;|#[0-9]+;|#x[0-9a-fA-F]+;)", page), name


def test_every_page_shows_its_names_whole(written):
    """Each page shows the names it is about as text, the markup included (escaped, not
    dropped or cut short)."""
    report, pages = written["report"], written["pages"]
    rankers = report["rankers"]
    assert all(name.endswith(MARKUP) for name in rankers)
    expected = {"report.html": list(rankers), "history.html": list(rankers)}
    for c in report["nightly"]["comparisons"]:
        for m in c["movers"]:
            if m.get("trace"):
                expected["report.html"] += [m["query_id"], m["query_text"]]
                expected[m["trace"]] = [c["ranker"], m["query_id"], m["query_text"],
                                        *top_documents(written, c["ranker"], m["query_id"])]
    for t in report["traces"]:
        expected[t["path"]] = [t["ranker"], t["query_id"],
                               *top_documents(written, t["ranker"], t["query_id"])]
    assert set(expected) == set(pages)
    for name, names in expected.items():
        text = Parsed(pages[name]).text
        for shown in names:
            assert shown.endswith(MARKUP) and shown in text, (name, shown)


def test_names_in_attributes_are_whole(written):
    """A quote in a name does not end the attribute it is in: report.html's data-ranker cells
    hold each ranker's whole name."""
    attributes = Parsed(written["pages"]["report.html"]).attributes
    for ranker in written["report"]["rankers"]:
        assert ranker in attributes
