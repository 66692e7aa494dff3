"""A pipeline on a temporary instance, landing folder and storage: the code location built
from them, and a runner for its sensors and the runs they request."""

import shutil
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from evaluation_pipeline.definitions import build_definitions
from evaluation_pipeline.orchestration.local_runner import LocalRunner
from tests.support.paths import EXAMPLES

LANDING = EXAMPLES / "landing"
POOL_1, POOL_2 = "pool-2026-11-28", "pool-2026-11-29"
VERSION_1, VERSION_2 = "maint-v1", "maint-v2"


@dataclass
class Pipeline:
    root: Path
    landing: Path
    storage: Path
    defs: dg.Definitions
    instance: dg.DagsterInstance
    runner: LocalRunner
    first_outcomes: list

    def spec_id(self) -> str:
        return self.defs.resolve_assets_def("query_scores").metadata_by_key[
            dg.AssetKey("query_scores")]["spec_id"]

    def report(self, pool: str, version: str) -> Path:
        return self.storage / "reports" / pool / version / self.spec_id() / "report.json"

    def land_pool(self, pool: str, source: Path | None = None) -> None:
        shutil.copytree(source or LANDING / "pools" / pool, self.landing / "pools" / pool)

    def land_version(self, version: str) -> None:
        shutil.copy(LANDING / "judgments" / f"{version}.csv", self.landing / "judgments")


def temporary_instance(home: Path):
    home.mkdir(parents=True, exist_ok=True)
    return dg.instance_for_test(temp_dir=str(home))


def make_pipeline(root: Path, instance: dg.DagsterInstance, **kwargs) -> Pipeline:
    landing = root / "landing"
    (landing / "judgments").mkdir(parents=True)
    (landing / "pools").mkdir()
    queries = Path(shutil.copy(EXAMPLES / "queries.csv", root / "queries.csv"))
    # A copy, as the queries table: a test may change it, and the checkout's stays as it is.
    if "documents_path" not in kwargs:
        kwargs["documents_path"] = str(shutil.copy(EXAMPLES / "documents.csv",
                                                   root / "documents.csv"))
    defs = build_definitions(storage_base=str(root / "storage"), landing_folder=str(landing),
                             queries_path=str(queries), **kwargs)
    return Pipeline(root, landing, root / "storage", defs, instance, LocalRunner(defs, instance),
                    [])
