"""report.html renders in headless Chromium, without console errors, with report.json's numbers."""

from __future__ import annotations

import re
import shutil
import subprocess
from html import escape
from html.parser import HTMLParser
from pathlib import Path

import pytest

from evaluation_pipeline.evaluation import evaluate
from evaluation_pipeline.io.readers import read_judgments, read_pool, read_queries
from evaluation_pipeline.report import ReportConfig, write_report
from evaluation_pipeline.spec import profile
from tests.support.paths import EXAMPLES, REPO

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = REPO / "test-artifacts"

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (apt-get install -y chromium); report.html is not rendered",
)


class FieldCells(HTMLParser):
    """Collects the text of every <td data-field=...> cell, keyed by field, ranker, cutoff."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: dict[tuple[str, str, int], str] = {}
        self._key = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "td" and "data-field" in a:
            self._key = (a["data-field"], a["data-ranker"], int(a["data-cutoff"]))

    def handle_data(self, data):
        if self._key is not None:
            self.cells[self._key] = data.strip()
            self._key = None


def chromium(args: list[str], profile_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--no-first-run",
         "--disable-sync", f"--user-data-dir={profile_dir}", "--enable-logging=stderr", "--v=0",
         *args],
        capture_output=True, text=True, timeout=90,
    )


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    data = EXAMPLES / "landing"
    judgments = read_judgments(data / "judgments" / "maint-v2.csv")
    candidates = read_pool(data / "pools" / "pool-2026-11-28")
    spec = profile("default")
    per_query, lineage = evaluate(judgments, candidates, spec)
    report = write_report(out, per_query, spec, lineage, read_queries(EXAMPLES / "queries.csv"),
                          ReportConfig(n_bootstrap=400, n_regressions=3),
                          candidates=candidates, judgments=judgments)
    url = (out / "report.html").as_uri()
    dom = chromium(["--dump-dom", url], tmp_path_factory.mktemp("chromium-profile"))
    ARTIFACTS.mkdir(exist_ok=True)
    shot = chromium(["--window-size=1280,2600", f"--screenshot={ARTIFACTS / 'report.png'}", url],
                    tmp_path_factory.mktemp("chromium-profile"))
    return report, dom, shot, out


def test_page_renders_without_console_errors(rendered):
    _, dom, shot, _ = rendered
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "<svg" in dom.stdout and "NDCG@10" in dom.stdout
    for log in (dom.stderr, shot.stderr):
        assert not re.findall(r".*(?:CONSOLE|Uncaught).*", log)
    assert (ARTIFACTS / "report.png").stat().st_size > 10_000


def test_headline_numbers_equal_report_json(rendered):
    report, dom, _, _ = rendered
    parser = FieldCells()
    parser.feed(dom.stdout)
    assert len(parser.cells) == len(report["results"]) * 8
    for r in report["results"]:
        key = (r["ranker"], r["cutoff"])
        assert parser.cells[("macro_ndcg", *key)] == f"{r['macro_ndcg']:.4f}"
        assert parser.cells[("weighted_ndcg", *key)] == f"{r['weighted_ndcg']:.4f}"
        assert int(parser.cells[("n_with_number", *key)]) == r["n_with_number"]
        for status, count in r["status_counts"].items():
            assert int(parser.cells[(f"n_{status}", *key)]) == count
    # Each sentence of report.json, less the conventions, which the page writes out once.
    conventions = f" ({report['conventions']})"
    assert all(conventions in s for s in report["headline"] if s.startswith("NDCG@"))
    for sentence in report["headline"]:
        # As the page escapes it: "&" and the "<" of a p at the test's floor ("p < 0.0025").
        assert escape(sentence.replace(conventions, ""), quote=False) in dom.stdout
    assert dom.stdout.count(escape(report["conventions"], quote=False)) == 1


def test_the_first_screen_says_the_conventions_in_one_short_line(rendered):
    report, dom, _, _ = rendered
    line = re.search(r'<p class="conventions">(.*?)</p>', dom.stdout).group(1)
    text = re.sub(r"<[^>]+>", "", line)
    assert len(text) < len(report["conventions"]) and "\n" not in text
    for name, value in report["spec"].items():
        if name != "cutoffs":
            assert f"{name} {value}" in text
    assert 'href="#conventions"' in line


def test_each_interval_has_its_range_over_every_grading_beside_it(rendered):
    report, dom, _, _ = rendered
    for r in report["results"]:
        low, high = r["macro_ndcg_bounds"]
        cell = f"[{low:.4f}, {high:.4f}]"
        # The summary of the first screen (headline cutoff) and the table of its cutoff.
        assert dom.stdout.count(cell) >= (2 if r["cutoff"] == report["headline_cutoff"] else 1)
        assert low <= r["macro_ndcg"] <= high or r["n_bounded"] != r["n_with_number"]
    for p in report["comparison"]["pairs"]:
        assert f"[{p['difference_min']:+.4f}, {p['difference_max']:+.4f}]" in dom.stdout


def test_the_page_fetches_nothing_and_links_existing_traces(rendered):
    report, dom, _, out = rendered
    html = (out / "report.html").read_text()
    assert "<script" not in html
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in html
    assert report["traces"]
    for trace in report["traces"]:
        assert (out / trace["path"]).exists()
        assert f'href="{trace["path"]}"' in html
