"""The nightly watch through the Dagster assets, end to end.

The example week lands one input at a time into a temporary landing folder; after each landing
the sensors and the runs they request run until quiet (``orchestration.example_week``). The
alert webhook is a local HTTP server on 127.0.0.1 that records what it receives.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Self

import dagster as dg
import polars as pl
import pytest

from evaluation_pipeline.definitions import build_definitions
from evaluation_pipeline.nightly.alerts import read_alerts
from evaluation_pipeline.nightly.history import check_unique
from evaluation_pipeline.nightly.verdicts import READY_AT, describe_regression
from evaluation_pipeline.orchestration.example_week import (
    QUERIES_NAME,
    generator,
    run_week,
)
from evaluation_pipeline.orchestration.local_runner import LocalRunner, RunOutcome
from evaluation_pipeline.orchestration.partitions import evaluation_key
from evaluation_pipeline.orchestration.resources import NightlyWatch
from evaluation_pipeline.stats.inference import at_floor, below_floor
from schemas.columns import INCONCLUSIVE, NO_CHANGE, REGRESSED
from tests.support.refusals import assert_names
from tests.support.temporary_pipeline import temporary_instance


class Webhook:
    """A local server that answers every POST with 200 and keeps the JSON bodies."""

    def __init__(self) -> None:
        self.received: list[dict] = []
        received = self.received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.append(json.loads(body))
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args) -> None:  # keep the test output quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class Week:
    gen: ModuleType
    storage: Path
    spec_id: str
    instance: dg.DagsterInstance
    outcomes: list[RunOutcome]
    received_after_week: list[dict]
    webhook: Webhook
    rerun: RunOutcome
    history_rows_before_rerun: int

    def report(self, pool: str, version: str) -> dict:
        path = self.storage / "reports" / pool / version / self.spec_id / "report.json"
        return json.loads(path.read_text())

    def history(self) -> pl.DataFrame:
        return pl.read_parquet(self.storage / "history" / "history.parquet")

    def evaluations(self) -> list[tuple[str, str]]:
        return [tuple(o.partition.split("|")) for o in self.outcomes if o.job == "evaluate"]


@pytest.fixture(scope="module")
def week(tmp_path_factory):
    root = tmp_path_factory.mktemp("nightly")
    gen = generator()
    gen.generate_nightly(root)
    nightly_dir, landing = root / gen.NIGHTLY_DIR, root / "landing"
    with Webhook() as webhook, temporary_instance(root / "home") as instance:
        defs = build_definitions(
            storage_base=str(root / "storage"), landing_folder=str(landing),
            queries_path=str(nightly_dir / QUERIES_NAME),
            watch=NightlyWatch(alert_webhook=webhook.url))
        spec_id = defs.resolve_assets_def("query_scores").metadata_by_key[
            dg.AssetKey("query_scores")]["spec_id"]
        runner = LocalRunner(defs, instance)
        outcomes = run_week(runner, landing, nightly_dir, say=lambda _: None)
        received = list(webhook.received)
        rows = pl.read_parquet(root / "storage" / "history" / "history.parquet").height
        # A rerun of the evaluation that alerted: it replaces its rows and alerts nothing.
        rerun = runner.execute("evaluate", dg.RunRequest(
            partition_key=evaluation_key(gen.REGRESSION_NIGHT, gen.JUDGMENT_VERSION_2)))
        yield Week(gen, root / "storage", spec_id, instance, outcomes, received, webhook, rerun,
                   rows)


def test_the_week_is_ingested_and_every_version_x_pool_evaluated(week: Week):
    gen = week.gen
    assert all(o.success for o in week.outcomes), [o.error for o in week.outcomes if o.error]
    evaluations = week.evaluations()
    assert len(evaluations) == len(set(evaluations)) == len(gen.NIGHTLY_POOLS) * 2
    # The three pools before maint-v2 landed are backfilled under it.
    assert evaluations[3:6] == [(pool, gen.JUDGMENT_VERSION_2) for pool in gen.NIGHTLY_POOLS[:3]]
    manifests = [json.loads((week.storage / "pools" / pool / "manifest.json").read_text())
                 for pool in gen.NIGHTLY_POOLS]
    ready = [m[READY_AT] for m in manifests]
    assert ready == sorted(ready) and len(set(ready)) == len(ready)
    assert week.rerun.success


def test_exactly_one_alert_for_the_regressed_ranker_on_its_night(week: Week):
    gen = week.gen
    (payload,) = week.received_after_week
    assert payload["candidate_pool"] == gen.REGRESSION_NIGHT
    assert payload["previous_pool"] == gen.NIGHTLY_POOLS[gen.NIGHTLY_POOLS.index(
        gen.REGRESSION_NIGHT) - 1]
    assert payload["judgment_version"] == gen.JUDGMENT_VERSION_2
    assert payload["spec_id"] == week.spec_id
    assert {r["ranker"] for r in payload["regressions"]} == {gen.REGRESSED_RANKER}
    assert all(r["mean_difference"] < 0 and r["difference_high"] < 0
               for r in payload["regressions"])
    assert payload["text"].startswith(f"NDCG regression in {gen.REGRESSION_NIGHT}")
    assert Path(payload["report"]).is_file()
    # Recorded once, delivered; the rerun added neither a request nor a record.
    assert week.webhook.received == week.received_after_week
    (record,) = read_alerts(week.storage / "history" / "alerts.jsonl")
    assert record["delivery"]["delivered"] is True and record["delivery"]["status"] == 200
    assert record["payload"] == payload


def test_no_verdict_for_the_noisy_ranker_nor_the_regressed_one_on_other_nights(week: Week):
    gen = week.gen
    for pool, version in week.evaluations():
        section = week.report(pool, version)["nightly"]
        for c in section["comparisons"]:
            if c["ranker"] == gen.NOISY_RANKER or pool != gen.REGRESSION_NIGHT:
                # No change was seen: "no change" where the night could tell one of
                # min_effect from none, "inconclusive" where it could not.
                assert c["verdict"] in (NO_CHANGE, INCONCLUSIVE), (pool, version, c)
    # The regression shows under the older version too; that evaluation is not the night's
    # headline (nor are the backfills), so only one evaluation alerted.
    older = week.report(gen.REGRESSION_NIGHT, gen.JUDGMENT_VERSION_1)["nightly"]
    assert {c["ranker"] for c in older["comparisons"] if c["verdict"] == REGRESSED} == {
        gen.REGRESSED_RANKER}
    assert week.report(gen.NIGHTLY_POOLS[0], gen.JUDGMENT_VERSION_1)["nightly"][
        "previous_pool"] is None


def test_attribution_adds_up_on_the_night_the_judgments_changed(week: Week):
    gen = week.gen
    night, previous = gen.NIGHTLY_POOLS[3], gen.NIGHTLY_POOLS[2]
    old, new = gen.JUDGMENT_VERSION_1, gen.JUDGMENT_VERSION_2
    attribution = week.report(night, new)["nightly"]["attribution"]
    assert attribution

    def mean(pool: str, version: str, ranker: str, cutoff: int) -> float:
        (result,) = [r for r in week.report(pool, version)["results"]
                     if (r["ranker"], r["cutoff"]) == (ranker, cutoff)]
        return result["macro_ndcg"]

    for a in attribution:
        key = (a["ranker"], a["cutoff"])
        assert a["previous_judgment_version"] == old
        assert a["from_judgments"] + a["from_pool"] == a["total_change"]
        assert a["from_judgments"] == pytest.approx(mean(previous, new, *key)
                                                    - mean(previous, old, *key), abs=1e-12)
        assert a["from_pool"] == pytest.approx(mean(night, new, *key)
                                               - mean(previous, new, *key), abs=1e-12)
    # Only that night's headline evaluation carries one.
    assert [(p, v) for p, v in week.evaluations() if week.report(p, v)["nightly"][
        "attribution"]] == [(night, new)]
    page = (week.storage / "reports" / night / new / week.spec_id / "report.html").read_text()
    assert '<table class="nightly">' in page and '<table class="attribution">' in page


def test_the_history_holds_every_evaluation_once(week: Week):
    gen, history = week.gen, week.history()
    check_unique(history)
    assert history.height == week.history_rows_before_rerun
    evaluations = set(history.select("candidate_pool", "judgment_version").unique().iter_rows())
    assert evaluations == set(week.evaluations())
    headline = dict(history.filter(pl.col("headline"))
                    .select("candidate_pool", "judgment_version").unique().iter_rows())
    assert headline == {pool: gen.JUDGMENT_VERSION_1 if i < 3 else gen.JUDGMENT_VERSION_2
                        for i, pool in enumerate(gen.NIGHTLY_POOLS)}
    page = (week.storage / "history" / "history.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and 'class="regression"' in page
    assert (f'href="../reports/{gen.REGRESSION_NIGHT}/{gen.JUDGMENT_VERSION_2}/{week.spec_id}/'
            'report.html"') in page


def _check_evaluation(week: Week, pool: str, version: str) -> dg.AssetCheckEvaluation:
    """The nightly_regression evaluation of the week's run of ``pool`` x ``version``."""
    (run_id,) = [o.run_id for o in week.outcomes
                 if o.partition == evaluation_key(pool, version)]
    (event,) = [e for e in week.instance.all_logs(
        run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
        if e.dagster_event.event_specific_data.check_name == "nightly_regression"]
    return event.dagster_event.event_specific_data


def test_the_nightly_regression_check_fails_with_error_on_the_night_it_regressed(week: Week):
    gen = week.gen
    failed = _check_evaluation(week, gen.REGRESSION_NIGHT, gen.JUDGMENT_VERSION_2)
    assert failed.passed is False
    assert failed.severity == dg.AssetCheckSeverity.ERROR
    description = failed.description
    regressions = [c for c in week.report(gen.REGRESSION_NIGHT, gen.JUDGMENT_VERSION_2)[
        "nightly"]["comparisons"] if c["verdict"] == REGRESSED]
    assert regressions
    for c in regressions:
        assert describe_regression(c) in description
        assert (f"{gen.REGRESSED_RANKER} NDCG@{c['cutoff']} {c['mean_difference']:+.4f}"
                in description)
        # The interval that agrees with the verdict: adjusted, and so labelled.
        assert (f"[{c['difference_low_adjusted']:+.4f}, {c['difference_high_adjusted']:+.4f}] "
                f"(adjusted, {c['adjusted_level']:.2%})") in description
        # The regressed ranker's p is beyond every resample: shown as the bound it is.
        shown = (below_floor(c["p_value_holm"]) if at_floor(c)
                 else f"= {c['p_value_holm']:.4g}")
        assert f"Holm-adjusted p {shown}" in description
    for pool in (gen.NIGHTLY_POOLS[0], gen.NIGHTLY_POOLS[-1]):
        passed = _check_evaluation(week, pool, gen.JUDGMENT_VERSION_2)
        assert passed.passed is True, passed.description


def test_the_headline_history_materialization_carries_a_number_per_ranker_and_cutoff(
        week: Week):
    event = week.instance.get_latest_materialization_event(dg.AssetKey("evaluation_report"))
    metadata = event.asset_materialization.metadata
    # On the report, the versions of a night would alternate on one plotted axis: no numbers.
    assert not [label for label in metadata if label.startswith("ndcg@")]
    assert metadata["alerted"].value is False  # the rerun
    history = week.instance.get_latest_materialization_event(
        dg.AssetKey("evaluation_history")).asset_materialization
    assert history.partition == evaluation_key(week.gen.REGRESSION_NIGHT,
                                               week.gen.JUDGMENT_VERSION_2)
    assert history.metadata["headline_evaluation"].value is True
    for ranker in week.gen.RANKERS:
        for cutoff in (5, 10):
            assert isinstance(history.metadata[f"ndcg@{cutoff}/{ranker}"].value, float)
    assert history.metadata["dagster/row_count"].value == week.history().height
    assert history.metadata["evaluations"].value == len(week.evaluations())


def test_the_older_version_of_the_regressed_night_fails_with_warn(week: Week):
    gen = week.gen
    older = _check_evaluation(week, gen.REGRESSION_NIGHT, gen.JUDGMENT_VERSION_1)
    assert older.passed is False
    assert older.severity == dg.AssetCheckSeverity.WARN
    assert older.metadata["headline"].value is False
    assert older.metadata["headline_evaluation"].value == str(
        evaluation_key(gen.REGRESSION_NIGHT, gen.JUDGMENT_VERSION_2))


def test_the_regressed_report_leads_with_its_verdict_and_what_drove_it(week: Week):
    gen = week.gen
    report = week.report(gen.REGRESSION_NIGHT, gen.JUDGMENT_VERSION_2)
    regressed = [c for c in report["nightly"]["comparisons"] if c["verdict"] == REGRESSED]
    # the headline's first lines are the regressions, before any result sentence
    for sentence, c in zip(report["headline"], regressed, strict=False):
        assert sentence.startswith(f"{c['ranker']} NDCG@{c['cutoff']} regressed against "
                                   f"{report['nightly']['previous_pool']}")
        assert "Holm-adjusted p" in sentence and "candidate recall" in sentence
    assert not any(" regressed against " in s for s in report["headline"][len(regressed):])
    folder = week.storage / "reports" / gen.REGRESSION_NIGHT / gen.JUDGMENT_VERSION_2 / week.spec_id
    for c in regressed:
        assert c["movers"] and all(m["query_text"] for m in c["movers"])
        for m in c["movers"]:  # the pipeline writes both nights' traces of each mover
            page = (folder / m["trace"]).read_text()
            assert m["query_id"] in page and report["nightly"]["previous_pool"] in page
        assert {s["slice"] for s in c["slices"]} == set(report["slices"])
    html = (folder / "report.html").read_text()
    first_screen = html[:html.index('<h2 id="nightly">')]
    assert "Regressed against" in first_screen and gen.REGRESSED_RANKER in first_screen
    # the night over night comes before the ranker comparison
    assert html.index('id="nightly"') < html.index("<h2>Ranker comparison</h2>")
    assert html.index('id="movers"') < html.index('id="slices"') < html.index("Ranker comparison")


def test_compare_and_the_night_drill_down_run_on_the_pipelines_folders(week: Week, capsys):
    from evaluation_pipeline.cli.main import main

    gen = week.gen
    night = gen.REGRESSION_NIGHT
    previous = gen.NIGHTLY_POOLS[gen.NIGHTLY_POOLS.index(night) - 1]
    for kind in ("reports", "scores"):
        folders = [str(week.storage / kind / pool / gen.JUDGMENT_VERSION_2 / week.spec_id)
                   for pool in (previous, night)]
        assert main(["compare", *folders]) == 0, kind
        out = capsys.readouterr().out
        assert f"{gen.REGRESSED_RANKER}: {night} vs {previous}" in out
    assert main(["history", str(week.storage), "--night", night, "--ranker",
                 gen.REGRESSED_RANKER]) == 0
    out = capsys.readouterr().out
    section = week.report(night, gen.JUDGMENT_VERSION_2)["nightly"]
    c = next(c for c in section["comparisons"] if c["verdict"] == REGRESSED)
    assert f"against {previous}" in out and "regressed" in out
    assert c["movers"][0]["query_id"] in out and c["movers"][0]["query_text"] in out
    assert "the change by slice" in out
    assert str(week.storage / "reports" / night / gen.JUDGMENT_VERSION_2 / week.spec_id /
               "report.html") in out
    (payload,) = week.received_after_week
    assert f"--night {night}" in payload["drill_down"]
    assert payload["drill_down"] in payload["text"] and payload["report"] in payload["text"]
    assert main(["history", str(week.storage), "--night", "pool-1999-01-01"]) == 2
    # The night asked for, the history searched, and a night it holds.
    assert_names(capsys.readouterr().err, "'pool-1999-01-01'", str(week.storage), night)


def test_the_movers_and_the_slices_are_those_of_the_two_nights_per_query_files(week: Week):
    """The regressed night's report against a plain recomputation from the two per-query
    files the pipeline wrote and the queries table it published."""
    gen = week.gen
    night = gen.REGRESSION_NIGHT
    previous = gen.NIGHTLY_POOLS[gen.NIGHTLY_POOLS.index(night) - 1]
    version = gen.JUDGMENT_VERSION_2
    report = week.report(night, version)

    def scores(pool: str) -> pl.DataFrame:
        return pl.read_parquet(week.storage / "scores" / pool / version / week.spec_id /
                               "per_query.parquet").filter(pl.col("ndcg").is_not_null())

    queries = pl.read_parquet(next((week.storage / "queries").rglob("*.parquet")))
    joined = (scores(previous).select("ranker", "cutoff", "query_id", before="ndcg")
              .join(scores(night).select("ranker", "cutoff", "query_id", after="ndcg"),
                    on=["ranker", "cutoff", "query_id"])
              .with_columns(difference=pl.col("after") - pl.col("before"))
              .join(queries, on="query_id", how="left"))
    for c in report["nightly"]["comparisons"]:
        mine = joined.filter((pl.col("ranker") == c["ranker"]) & (pl.col("cutoff") == c["cutoff"]))
        assert c["n_paired"] == mine.height
        top = (mine.filter(pl.col("difference").abs() > 1e-12)
               .sort(pl.col("difference").abs(), "query_id", descending=[True, False])
               .head(len(c["movers"])))
        assert [m["query_id"] for m in c["movers"]] == top["query_id"].to_list()
        assert [m["query_text"] for m in c["movers"]] == top["query_text"].to_list()
        assert [m["difference"] for m in c["movers"]] == pytest.approx(
            top["difference"].to_list(), abs=1e-12)
        total = mine["difference"].sum()
        told = c["difference_low"] > 0 or c["difference_high"] < 0  # else no shares
        for s in c["slices"]:
            part = mine.filter(pl.col(s["slice"]).fill_null("(none)") == s["value"])
            assert s["n_paired"] == part.height
            assert s["mean_difference"] == pytest.approx(part["difference"].mean(), abs=1e-12)
            assert s["share"] == (pytest.approx(part["difference"].sum() / total, abs=1e-12)
                                  if told else None)
