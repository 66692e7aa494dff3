"""A real `dagster dev -w workspace.yaml` on 127.0.0.1, started and stopped by a test, and the
GraphQL and HTTP calls the tests make to it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.paths import REPO
from tests.support.ports import free_port

LOCATION_QUERY = (
    "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus "
    "locationOrLoadError { __typename ... on PythonError { message } } } } } }"
)


def get_json(url: str, body: dict | None = None) -> dict | None:
    """A GET (or, with ``body``, a POST of JSON), None while the server does not answer."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.loads(response.read())
    except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
        return None


def location_entry(base: str) -> dict | None:
    """The evaluation_pipeline location entry once it has loaded (or failed to)."""
    answer = get_json(f"{base}/graphql", {"query": LOCATION_QUERY})
    entries = ((answer or {}).get("data") or {}).get("workspaceOrError", {}).get(
        "locationEntries", [])
    for entry in entries:
        if entry["name"] == "evaluation_pipeline" and entry["loadStatus"] == "LOADED":
            return entry
    return None


@contextmanager
def dagster_dev(env: dict[str, str], ready: Callable[[str], bool], timeout: float
                ) -> Iterator[str]:
    """The base URL of a `dagster dev` on a free port, once ``ready(base)``; stopped on exit,
    whatever happened (its own process group: `dagster dev` passes a signal to its children
    only that way)."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    dagster = Path(sys.executable).parent / "dagster"
    # Its log goes to a file: dagster dev writes more than a pipe holds, and an unread pipe
    # would stop its webserver or daemon mid-write.
    log = tempfile.NamedTemporaryFile(prefix="dagster-dev-", suffix=".log")
    process = subprocess.Popen(
        [str(dagster), "dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)

    def tail() -> str:  # read through its own handle: the shared one is the writer's offset
        return Path(log.name).read_text(errors="replace")[-3000:]

    try:
        deadline = time.monotonic() + timeout
        while not ready(base):
            assert process.poll() is None, tail()
            assert time.monotonic() < deadline, (
                f"dagster dev was not ready in {timeout:g} s:\n{tail()}")
            time.sleep(0.5)
        yield base
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        log.close()
