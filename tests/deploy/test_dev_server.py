"""`dagster dev -w workspace.yaml` serves the code location (the README's UI command)."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from evaluation_pipeline.main_job import INSTANCE_YAML
from tests.support.paths import REPO
from tests.support.ports import free_port

STARTUP_SECONDS = 90
LOCATION_QUERY = (
    "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus "
    "locationOrLoadError { __typename ... on PythonError { message } } } } } }"
)


def _get(url: str, body: dict | None = None) -> dict | None:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.loads(response.read())
    except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
        return None


def _location(base: str) -> dict | None:
    """The evaluation_pipeline location entry once it has loaded (or failed to)."""
    answer = _get(f"{base}/graphql", {"query": LOCATION_QUERY})
    entries = ((answer or {}).get("data") or {}).get("workspaceOrError", {}).get(
        "locationEntries", [])
    for entry in entries:
        if entry["name"] == "evaluation_pipeline" and entry["loadStatus"] == "LOADED":
            return entry
    return None


def test_dagster_dev_serves_the_code_location(tmp_path: Path):
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(INSTANCE_YAML)
    landing = tmp_path / "landing"
    (landing / "judgments").mkdir(parents=True)
    (landing / "pools").mkdir()
    env = os.environ | {
        "DAGSTER_HOME": str(home),
        "NDCG_EVAL_STORAGE": str(tmp_path / "storage"),
        "NDCG_EVAL_LANDING": str(landing),
        "NDCG_EVAL_QUERIES": str(tmp_path / "no-queries.csv"),
    }
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    dagster = Path(sys.executable).parent / "dagster"
    # Its own process group: `dagster dev` passes a signal to its children only that way.
    server = subprocess.Popen(
        [str(dagster), "dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        info = entry = None
        while time.monotonic() < deadline and entry is None:
            assert server.poll() is None, server.stderr.read().decode()[-3000:]
            info = info or _get(f"{base}/server_info")
            entry = _location(base) if info else None
            time.sleep(0.5)
        assert info is not None and "dagster_webserver_version" in info
        assert entry is not None, "the code location did not load"
        assert entry["locationOrLoadError"]["__typename"] == "RepositoryLocation", entry
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)
