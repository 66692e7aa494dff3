"""An S3-API server on 127.0.0.1 (moto's) for the tests of object storage.

The ``endpoint`` fixture (one per test session, registered in conftest so that every test file
shares it) starts the server on a free port, creates the bucket ``BUCKET`` and sets moto's
test credentials and NDCG_EVAL_STORAGE_OPTIONS (never AWS_ENDPOINT_URL) while it runs. Without
moto or s3fs the tests that use it are skipped.
"""

from __future__ import annotations

import json
import logging

import pytest

from evaluation_pipeline import settings
from evaluation_pipeline.io.locations import location
from tests.support.ports import free_port

BUCKET = "ndcg-test"


@pytest.fixture(scope="session")
def endpoint():
    """The server's URL; the environment holds its options and test credentials meanwhile."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    port = free_port()
    moto_server = pytest.importorskip("moto.server")
    pytest.importorskip("s3fs")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("AWS_ACCESS_KEY_ID", "testing")
        env.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        env.setenv("AWS_DEFAULT_REGION", "us-east-1")
        env.delenv("AWS_ENDPOINT_URL", raising=False)
        env.setenv(settings.STORAGE_OPTIONS.name, json.dumps({"endpoint_url": url}))
        location(f"s3://{BUCKET}").fs.mkdir(BUCKET)
        try:
            yield url
        finally:
            server.stop()
