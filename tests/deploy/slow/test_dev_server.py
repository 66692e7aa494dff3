"""`dagster dev -w workspace.yaml` serves the code location (the README's UI command)."""

import os
from pathlib import Path

from evaluation_pipeline.main_job import INSTANCE_YAML
from tests.support.dagster_dev import dagster_dev, get_json, location_entry

STARTUP_SECONDS = 90


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
    seen = {}

    def ready(base: str) -> bool:
        seen["info"] = seen.get("info") or get_json(f"{base}/server_info")
        seen["entry"] = location_entry(base) if seen["info"] else None
        return seen["entry"] is not None

    with dagster_dev(env, ready, STARTUP_SECONDS):
        assert "dagster_webserver_version" in seen["info"]
        assert seen["entry"]["locationOrLoadError"]["__typename"] == "RepositoryLocation", \
            seen["entry"]
