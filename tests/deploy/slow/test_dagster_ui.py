"""The regressed night as a user sees it in the Dagster UI, in Chromium.

The example week runs through the main job (`make run`) on a temporary instance and storage
(the session's one run of it, tests.support.example_run);
then `dagster dev` serves that instance on 127.0.0.1, and a headless Chromium (Debian's
/usr/bin/chromium, driven by playwright) opens the asset graph, the checks, the partitions, the
plots, the Jobs page, the Overview timeline and the regressed run. What a page draws as a
colour is read back through the webserver's GraphQL, from the same browser session.

``SAVE_UI_SCREENSHOTS=<folder>`` keeps the three screenshots the docs show there
(ui-asset-checks.png, ui-partitions.png, ui-plots.png).
"""

from __future__ import annotations

import os
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from evaluation_pipeline.orchestration.checks import HEADLINE_REGRESSED, NIGHTLY_TAG
from evaluation_pipeline.orchestration.example_week import WEEK_SPEC
from evaluation_pipeline.spec import load_spec
from tests.support.dagster_dev import dagster_dev, location_entry
from tests.support.example_run import example_week
from tests.support.paths import REPO

playwright = pytest.importorskip("playwright.sync_api")

CHROMIUM = Path("/usr/bin/chromium")
STARTUP_SECONDS = 120
REGRESSED, OLDER, HEADLINE = "pool-2026-12-05", "maint-v1", "maint-v2"
NIGHTS = [f"pool-2026-12-0{day}" for day in range(1, 8)]
# Each night's headline version: maint-v2 was published after the third night.
HEADLINES = [(night, "maint-v1" if i < 3 else "maint-v2") for i, night in enumerate(NIGHTS)]
SCREENSHOTS = os.environ.get("SAVE_UI_SCREENSHOTS")
RANKERS = ("bm25-v3", "dense-v2", "hybrid-v1")
# `make run`'s week declares the TREC DL set; nDCG@10 is its headline, plotted as ndcg@10/<ranker>
# (numeric_metadata), and the other three measures are recorded, not plotted.
SPEC = load_spec(WEEK_SPEC)
HEADLINE_SERIES = {f"ndcg@10/{ranker}" for ranker in RANKERS}

CHECK_EXECUTIONS = """
query ($check: String!, $asset: [String!]!) {
  assetCheckExecutions(assetKey: {path: $asset}, checkName: $check, limit: 100) {
    partition status runId evaluation { success severity description
      metadataEntries { label ... on TextMetadataEntry { text } } }
  }
}"""
HISTORY_MATERIALIZATIONS = """
{ assetOrError(assetKey: {path: ["evaluation_history"]}) { ... on Asset {
    assetMaterializations(limit: 100) { partition timestamp
      metadataEntries { label ... on FloatMetadataEntry { floatValue } } } } } }"""
JOB_RUNS = """
{ pipelineOrError(params: {repositoryLocationName: "evaluation_pipeline",
    repositoryName: "__repository__", pipelineName: "evaluate"}) {
  ... on Pipeline { runs(limit: 100) { id tags { key value } } } } }"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`make run` then `make ui`, on a temporary instance and storage: the base URL."""
    if not CHROMIUM.is_file():
        pytest.skip(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    week = example_week(tmp_path_factory)
    storage = week.storage
    env = os.environ | {"DAGSTER_HOME": str(week.home), "NDCG_EVAL_STORAGE": str(storage),
                        "NDCG_EVAL_DEV": "1"}
    env |= {"NDCG_EVAL_LANDING": str(storage / "example-landing"),
            "NDCG_EVAL_QUERIES": str(REPO / "examples" / "data" / "nightly" / "queries.csv"),
            "NDCG_EVAL_SPEC": str(WEEK_SPEC)}
    with dagster_dev(env, lambda base: location_entry(base) is not None,
                     STARTUP_SECONDS) as base:
        yield base


@pytest.fixture(scope="module")
def page(server):
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=str(CHROMIUM),
                                         args=["--no-sandbox"])
        try:
            tab = browser.new_page(viewport={"width": 1600, "height": 1000}, base_url=server)
            # The first visit's newsletter dialog covers the page, and may open after the
            # page's text has shown: skipped whenever it shows before an action.
            skip = tab.get_by_role("button", name="Skip")
            tab.add_locator_handler(skip, lambda: skip.click())
            yield tab
        finally:
            browser.close()


def _open(page, path: str, text: str) -> str:
    """Open ``path`` and wait until ``text`` shows; the page's text."""
    page.goto(path)
    page.get_by_text(text).first.wait_for(timeout=60_000)
    return page.inner_text("body")


def _graphql(page, query: str, **variables) -> dict:
    answer = page.request.post("/graphql", data={"query": query, "variables": variables})
    assert answer.ok, answer.text()
    body = answer.json()
    assert "errors" not in body, body["errors"]
    return body["data"]


def _save(page, name: str) -> None:
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / name))


def test_the_asset_graph_shows_failed_checks_on_the_report_and_the_history(page):
    text = _open(page, "/locations/evaluation_pipeline/asset-groups/evaluation", "2 / 2 Passed")
    # query_scores passes both of its checks; the report's and the history's fail.
    assert text.count("0 / 1 Passed") == 2, text
    assert "2 / 2 Passed" in text


def test_the_history_check_names_the_regressed_night_on_the_newest_night(page):
    # Waited for the check's own text: the panel loads after the check's name.
    text = _open(page, "/assets/evaluation_history?view=checks", f"newest night {NIGHTS[-1]}")
    assert "Failed" in text
    assert f"newest night {NIGHTS[-1]}" in text
    assert f"dense-v2 NDCG@10 regressed on {REGRESSED} ({HEADLINE})" in text
    _save(page, "ui-asset-checks.png")
    (latest, *_) = _graphql(page, CHECK_EXECUTIONS, check="headline_trend",
                            asset=["evaluation_history"])["assetCheckExecutions"]
    assert latest["evaluation"]["success"] is False
    assert latest["evaluation"]["severity"] == "ERROR"
    labels = {e["label"]: e.get("text") for e in latest["evaluation"]["metadataEntries"]}
    assert labels["regressed_evaluation"] == f"{REGRESSED}|{HEADLINE}"


def test_the_headline_partition_fails_with_error_and_the_older_version_with_warn(page):
    _open(page, "/assets/evaluation_report?view=checks", "nightly_regression")
    page.get_by_text("Partitions", exact=True).last.click()
    page.get_by_text("Failed (2)").wait_for(timeout=30_000)
    for key in (REGRESSED, HEADLINE):  # the night, then its headline version
        page.get_by_text(key, exact=True).filter(visible=True).last.click()
    page.get_by_text("the night's headline evaluation: regressed").first.wait_for(
        timeout=30_000)
    _save(page, "ui-partitions.png")
    executions = _graphql(page, CHECK_EXECUTIONS, check="nightly_regression",
                          asset=["evaluation_report"])["assetCheckExecutions"]
    by_partition = {e["partition"]: e["evaluation"] for e in executions}
    assert len(by_partition) == 14
    failed = {key: e["severity"] for key, e in by_partition.items() if not e["success"]}
    assert failed == {f"{REGRESSED}|{HEADLINE}": "ERROR", f"{REGRESSED}|{OLDER}": "WARN"}
    older = {e["label"]: e.get("text") for e in by_partition[f"{REGRESSED}|{OLDER}"][
        "metadataEntries"]}
    assert older["headline_evaluation"] == f"{REGRESSED}|{HEADLINE}"
    assert "report_html" in older


def test_the_plots_hold_one_series_per_ranker_and_headline_measure_one_point_per_night(page):
    assert SPEC.headline_measures == ("nDCG@10",) and len(SPEC.measures) == 4
    _open(page, "/assets/evaluation_history", "Plots")
    page.get_by_text("Plots", exact=True).first.click()
    for label in sorted(HEADLINE_SERIES):  # the plots' titles, as the page draws them
        page.get_by_text(label, exact=True).first.wait_for(timeout=30_000)
    # The screenshot opens on the headline's plots (Dagster's own row counts come first).
    page.get_by_text(min(HEADLINE_SERIES), exact=True).first.evaluate(
        "title => title.scrollIntoView({block: 'start'})")
    _save(page, "ui-plots.png")
    events = _graphql(page, HISTORY_MATERIALIZATIONS)["assetOrError"]["assetMaterializations"]
    plotted = {m["label"] for e in events for m in e["metadataEntries"]
               if m.get("floatValue") is not None}
    # Exactly the headline's series: RR, AP and R are in the history, not on the plots.
    assert plotted == HEADLINE_SERIES, plotted
    for label in sorted(HEADLINE_SERIES):
        points = sorted((float(e["timestamp"]), e["partition"]) for e in events
                        if any(m["label"] == label for m in e["metadataEntries"]))
        assert [tuple(p.split("|")) for _, p in points] == HEADLINES, label


def test_the_runs_are_listed_under_the_evaluate_job_and_on_the_timeline(page):
    runs = _graphql(page, JOB_RUNS)["pipelineOrError"]["runs"]
    assert len(runs) == 14
    text = _open(page, "/locations/evaluation_pipeline/jobs/evaluate/runs", "evaluations_ready")
    assert "No runs found" not in text
    assert text.count("evaluations_ready") >= 14
    # The bookkeeping of the executing process is hidden: no ndcg_eval/pid in the list.
    assert "ndcg_eval/pid" not in text and "ndcg_eval/host" not in text
    text = _open(page, "/overview/activity/timeline", "ingest_candidate_pool")
    assert "No runs found" not in text and "evaluate" in text


def test_the_regressed_run_carries_the_nightly_tag(page):
    runs = _graphql(page, JOB_RUNS)["pipelineOrError"]["runs"]
    tagged = {tag["value"]: run["id"] for run in runs for tag in run["tags"]
              if tag["key"] == NIGHTLY_TAG}
    assert set(tagged) == {HEADLINE_REGRESSED, "regressed, not headline"}
    # The runs list filtered on the tag: the regressed headline run, and no other.
    query = urllib.parse.quote(f"tag:{NIGHTLY_TAG}={HEADLINE_REGRESSED}")
    text = _open(page, f"/runs?q%5B0%5D={query}", tagged[HEADLINE_REGRESSED][:8])
    assert tagged["regressed, not headline"][:8] not in text
    assert text.count("evaluations_ready") == 1, text[:3000]
