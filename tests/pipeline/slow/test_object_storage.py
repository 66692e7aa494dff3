"""Object storage by configuration alone, against an S3-API server on 127.0.0.1 (moto's).

The server is started once for the session on a free port and stopped at its end; the bucket
is created, and the credentials are moto's test ones (from the environment, as the provider
chain finds them). The endpoint reaches the code through NDCG_EVAL_STORAGE_OPTIONS or
--storage-options, never through AWS_ENDPOINT_URL.
"""

from __future__ import annotations

import json
import os

import pytest

from evaluation_pipeline import settings
from evaluation_pipeline.cli.main import main
from evaluation_pipeline.cli.results import load_results
from evaluation_pipeline.io import result_folder
from evaluation_pipeline.io.atomic import write_parquet
from evaluation_pipeline.io.locations import location
from evaluation_pipeline.io.readers import read_judgments
from evaluation_pipeline.io.storage import HISTORY_FOLDER, RESULT_MARKER
from tests.support.paths import EXAMPLES
from tests.support.refusals import assert_names
from tests.support.s3_server import BUCKET

pytest.importorskip("moto.server")
pytest.importorskip("s3fs")

LANDING = EXAMPLES / "landing"
V1, V2 = LANDING / "judgments" / "maint-v1.csv", LANDING / "judgments" / "maint-v2.csv"
P28 = LANDING / "pools" / "pool-2026-11-28"
FAST = ["--bootstrap", "200"]


@pytest.fixture(scope="session")
def inputs(endpoint, tmp_path_factory):
    """The example judgments (as sorted Parquet, which the streaming engine reads) and one
    pool folder, in the bucket; the same judgment files on a local disk under "local"."""
    base = location(f"s3://{BUCKET}/inputs")
    here = tmp_path_factory.mktemp("judgments")
    for path in (V1, V2):
        frame = read_judgments(path).sort("query_id", "doc_id")
        write_parquet(frame, base / "judgments" / f"{path.stem}.parquet")
        write_parquet(frame, here / f"{path.stem}.parquet")
    for run in sorted(P28.glob("*.parquet")):
        base.fs.put_file(str(run), (base / "pools" / P28.name / run.name).path)
    return {"v1": f"{base}/judgments/maint-v1.parquet",
            "v2": f"{base}/judgments/maint-v2.parquet", "pool": f"{base}/pools/{P28.name}",
            "local": {"v1": here / "maint-v1.parquet", "v2": here / "maint-v2.parquet"}}


def keys(url: str) -> dict[str, str]:
    """Every object under ``url`` with its ETag: what changes when anything is rewritten."""
    where = location(url)
    where.fs.invalidate_cache()
    return {k: info["ETag"] for k, info in where.fs.find(where.path, detail=True).items()}


# -- the commands ----------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["local", "streaming"])
def test_score_report_compare_with_urls_match_a_local_run(engine, inputs, tmp_path, capsys):
    out = f"s3://{BUCKET}/cli/{engine}/v2"
    assert main(["score", "--engine", engine, "--judgments", inputs["v2"], "--run",
                 inputs["pool"], "--out", out, "--report", *FAST]) == 0
    assert f"wrote {out}/per_query.parquet" in capsys.readouterr().out
    local = tmp_path / "local"
    v1, v2 = (str(inputs["local"][v]) for v in ("v1", "v2"))
    assert main(["score", "--engine", engine, "--judgments", v2, "--run", str(P28),
                 "--out", str(local), "--report", *FAST]) == 0
    remote = location(out)
    assert (remote / "per_query.parquet").read_bytes() == (
        local / "per_query.parquet").read_bytes()
    summary = json.loads((remote / "summary.json").read_text())
    expected = json.loads((local / "summary.json").read_text())
    assert summary["results"] == expected["results"]
    assert {"report.json", "report.html", "aggregates.parquet", RESULT_MARKER} <= {
        p.name for p in remote.iterdir()}
    # The traces: the same pages, byte for byte, as the local run's (the streaming engine
    # holds no pool rows, and says so: neither writes traces).
    def traces(folder) -> dict[str, bytes]:
        return ({p.name: p.read_bytes() for p in (folder / "traces").iterdir()}
                if (folder / "traces").exists() else {})
    assert traces(remote) == traces(local)
    assert bool(traces(local)) == (engine == "local")

    # report: results and output on the bucket.
    rep = f"s3://{BUCKET}/cli/{engine}/rep"
    assert main(["report", out, "--out", rep, *FAST]) == 0
    assert f"wrote {rep}/report.html" in capsys.readouterr().out
    assert json.loads((location(rep) / "report.json").read_text())["results"] == json.loads(
        (local / "report.json").read_text())["results"]

    # compare: two results on the bucket (two judgment versions of one pool), with the grades.
    old = f"s3://{BUCKET}/cli/{engine}/v1"
    assert main(["score", "--engine", engine, "--judgments", inputs["v1"], "--run",
                 inputs["pool"], "--out", old]) == 0
    capsys.readouterr()
    assert main(["compare", old, out, "--judgments", inputs["v1"], inputs["v2"], *FAST]) == 0
    remote_text = capsys.readouterr().out
    assert main(["score", "--engine", engine, "--judgments", v1, "--run", str(P28),
                 "--out", str(tmp_path / "v1")]) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "v1"), str(local), "--judgments", v1, v2,
                 *FAST]) == 0
    assert remote_text == capsys.readouterr().out


def test_report_out_url_goes_to_the_bucket_not_a_local_folder(inputs, tmp_path, capsys,
                                                               monkeypatch):
    # It once wrote to a local folder named "s3:" and said "wrote s3:/bucket/...".
    monkeypatch.chdir(tmp_path)
    local = tmp_path / "local"
    assert main(["score", "--judgments", str(V2), "--run", str(P28), "--out", str(local)]) == 0
    rep = f"s3://{BUCKET}/bug/rep"
    assert main(["report", str(local), "--out", rep, *FAST]) == 0
    said = capsys.readouterr().out
    assert f"wrote {rep}/report.html" in said and "s3:/bug" not in said.replace("s3://", "")
    assert not (tmp_path / "s3:").exists()
    assert (location(rep) / "report.html").exists() and (location(rep) / RESULT_MARKER).exists()


def test_explain_and_storage_options_flag_reach_the_bucket(inputs, capsys, monkeypatch):
    options = os.environ[settings.STORAGE_OPTIONS.name]
    monkeypatch.delenv(settings.STORAGE_OPTIONS.name)  # the flag alone carries the endpoint
    query = read_judgments(V2)["query_id"][0]
    args = ["--query", query, "--ranker", "bm25-v3", "--json"]
    assert main(["explain", "--judgments", inputs["v2"], "--run", inputs["pool"],
                 "--storage-options", options, *args]) == 0
    remote = capsys.readouterr().out
    assert main(["explain", "--judgments", str(V2), "--run", str(P28), *args]) == 0
    assert json.loads(remote) == json.loads(capsys.readouterr().out)


def test_history_reads_the_storage_on_the_bucket(endpoint, tmp_path, capsys):
    from tests.support.nightly_week import run_week

    week = run_week(tmp_path)
    (tmp_path / HISTORY_FOLDER).mkdir(exist_ok=True)
    week["history"].write_parquet(tmp_path / HISTORY_FOLDER / "history.parquet")
    storage = location(f"s3://{BUCKET}/nightly")
    for file in (tmp_path / HISTORY_FOLDER).iterdir():
        storage.fs.put_file(str(file), (storage / HISTORY_FOLDER / file.name).path)
    assert main(["history", str(tmp_path)]) == 0
    local = capsys.readouterr().out
    assert main(["history", str(storage)]) == 0
    assert capsys.readouterr().out == local


# -- a write killed midway ------------------------------------------------------------------------


def test_a_write_killed_midway_leaves_the_earlier_result(inputs, monkeypatch, capsys):
    out = f"s3://{BUCKET}/killed/out"
    score = ["score", "--judgments", inputs["v2"], "--run", inputs["pool"], "--out", out]
    assert main([*score, "--cutoff", "10"]) == 0
    earlier = load_results(location(out))
    before = keys(out)

    # Killed after the first object of the new result was put: the marker is the earlier one.
    real_put = result_folder._put_file
    calls = []

    def killed_after_one(source, target):
        if calls:
            raise KeyboardInterrupt("killed")
        calls.append(target)
        real_put(source, target)

    monkeypatch.setattr(result_folder, "_put_file", killed_after_one)
    with pytest.raises(KeyboardInterrupt):
        main([*score, "--cutoff", "5"])
    monkeypatch.undo()
    assert len(keys(out)) == len(before) + 1  # one new object, beside the earlier result
    again = load_results(location(out))
    assert again[1].spec_id == earlier[1].spec_id
    assert again[0].equals(earlier[0])
    capsys.readouterr()
    assert main(["report", out, "--out", f"s3://{BUCKET}/killed/rep", *FAST]) == 0

    # Killed while the new files are copied over the fixed names: the marker names the new
    # files where they were staged, and a reader sees the new result whole.
    monkeypatch.setattr(result_folder, "_copy_file", lambda *a: (_ for _ in ()).throw(
        KeyboardInterrupt("killed")))
    with pytest.raises(KeyboardInterrupt):
        main([*score, "--cutoff", "3"])
    monkeypatch.undo()
    newer = load_results(location(out))
    assert newer[0]["cutoff"].unique().to_list() == [3]

    # A first write killed before its marker: the folder is refused as incomplete.
    fresh = f"s3://{BUCKET}/killed/fresh"
    monkeypatch.setattr(result_folder, "_write_marker", lambda *a: (_ for _ in ()).throw(
        KeyboardInterrupt("killed")))
    with pytest.raises(KeyboardInterrupt):
        main(["score", "--judgments", inputs["v2"], "--run", inputs["pool"], "--out", fresh])
    monkeypatch.undo()
    capsys.readouterr()
    assert main(["report", fresh, *FAST]) == 2
    assert_names(capsys.readouterr().err, fresh, RESULT_MARKER)  # what it lacks


# -- shared files on the bucket: the record of alerts and the history's lock -------------------


def test_evaluations_alerting_together_on_a_bucket_each_keep_their_alert(endpoint):
    """Conditional writes: of concurrent appends to alerts.jsonl, none is lost."""
    from concurrent.futures import ThreadPoolExecutor

    from evaluation_pipeline.nightly.alerts import AlertSettings, notify, read_alerts

    alerts_file = location(f"s3://{BUCKET}/alerts-race/history/alerts.jsonl")
    regression = {"ranker": "dense-v2", "cutoff": 10, "mean_difference": -0.08,
                  "difference_low": -0.1, "difference_high": -0.05, "p_value_holm": 0.001,
                  "verdict": "regressed", "difference_min": -0.12, "difference_max": -0.03,
                  "holds_for_every_grading": True}

    def alert(night: int) -> dict | None:
        nightly = {"previous_pool": f"night-{night - 1}", "judgment_version": "v2",
                   "comparisons": [regression]}
        return notify(alerts_file, nightly, candidate_pool=f"night-{night}", spec_id="s",
                      report="r", newest=True, headline=True, settings=AlertSettings())

    with ThreadPoolExecutor(8) as pool:
        records = list(pool.map(alert, range(1, 17)))
    assert all(r is not None for r in records)
    assert sorted(r["key"] for r in read_alerts(alerts_file)) == sorted(
        f"night-{n}/v2/s" for n in range(1, 17))
    # Each alert twice in the log (sending, then its outcome), nothing else and nothing lost.
    lines = alerts_file.read_text().splitlines()
    assert len(lines) == 32
    assert list(map(alert, range(1, 17))) == [None] * 16  # reruns: quiet


def test_the_history_lock_on_a_bucket_lets_one_run_at_a_time(endpoint):
    """Runs that read, change and write a shared file under storage.locked() on a bucket
    lose no change; a lease a killed run left is taken over once it is stale."""
    from concurrent.futures import ThreadPoolExecutor

    from evaluation_pipeline.io import conditional
    from evaluation_pipeline.io.object_lock import lock_object, object_lock
    from evaluation_pipeline.orchestration.resources import EvaluationStorage

    storage = EvaluationStorage(base=f"s3://{BUCKET}/lock-race")
    storage.write_text("0", "history", "counter")

    def increment(_: int) -> None:
        with storage.locked("history", "counter"):
            value = int(storage.path("history", "counter").read_text())
            storage.write_text(str(value + 1), "history", "counter")

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(increment, range(24)))
    assert storage.path("history", "counter").read_text() == "24"
    target = storage.path("history", "counter")
    assert not lock_object(target).exists()  # released

    # A killed holder's lease: waited for while fresh, taken over once stale.
    conditional.put_if(lock_object(target), json.dumps(
        {"owner": "gone|1|x", "since": "2000-01-01T00:00:00+00:00"}).encode(), None)
    with object_lock(target, timeout=5):
        pass
    conditional.put_if(lock_object(target), json.dumps(
        {"owner": "busy|2|y", "since": "2999-01-01T00:00:00+00:00"}).encode(), None)
    from evaluation_pipeline.io.lock import LockTimeout

    with pytest.raises(LockTimeout) as timed_out:
        with object_lock(target, timeout=0.5):
            pass
    assert_names(timed_out, str(lock_object(target)), "busy")  # the lock, and its holder's host
