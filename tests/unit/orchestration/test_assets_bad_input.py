"""Every bad file of the corpus, landed and ingested through the Dagster asset, fails its step
with the same message the CLI gives (file, column, rule, rows) and publishes nothing."""

from __future__ import annotations

import shutil

import dagster as dg
import pytest

from evaluation_pipeline.orchestration.ingest_assets import candidate_pools, judgments
from evaluation_pipeline.orchestration.partitions import (
    candidate_pool_partitions,
    judgment_version_partitions,
)
from evaluation_pipeline.orchestration.resources import (
    EvaluationStorage,
    LandingZone,
    MemoryBudget,
)
from evaluation_pipeline.orchestration.scoring import ScoringEngine
from tests.support.bad_input import BAD, assert_explains, case_ids
from tests.support.make_bad_inputs import CORPUS

VERSION, POOL = "bad-v1", "bad-pool"
LANDABLE = [c for c in BAD if c.fmt is None]


@pytest.fixture(scope="module")
def instance():
    with dg.instance_for_test() as instance:
        yield instance


def _land(case, landing):
    source = CORPUS / case.path
    if case.kind == "judgments":
        target = landing / "judgments" / f"{VERSION}{source.suffix}"
        target.parent.mkdir(parents=True)
    else:
        folder = landing / "pools" / POOL
        folder.mkdir(parents=True)
        target = folder / source.name
        (folder / "_READY").touch()
    shutil.copy(source, target)
    return target


@pytest.mark.parametrize("case", LANDABLE, ids=case_ids(LANDABLE))
def test_ingest_asset_fails_with_the_message_and_publishes_nothing(case, tmp_path, instance):
    landing, storage = tmp_path / "landing", tmp_path / "storage"
    landed = _land(case, landing)
    asset, partitions, key = (
        (judgments, judgment_version_partitions, VERSION) if case.kind == "judgments"
        else (candidate_pools, candidate_pool_partitions, POOL)
    )
    instance.add_dynamic_partitions(partitions.name, [key])
    result = dg.materialize(
        [asset], partition_key=key, instance=instance, raise_on_error=False,
        resources={
            "landing": LandingZone(folder=str(landing), queries_path=str(tmp_path / "q.csv")),
            "storage": EvaluationStorage(base=str(storage)),
            "memory": MemoryBudget(),
            "scoring": ScoringEngine(),
        },
    )
    assert not result.success
    failure = result.get_step_failure_events()[0].step_failure_data.error
    messages = []
    while failure is not None:  # Dagster wraps the user error: read down to its cause
        messages.append(failure.message)
        failure = failure.cause
    assert_explains(next(m for m in messages if "invalid input" in m), case, landed)
    assert not storage.exists() or not any(p.is_file() for p in storage.rglob("*"))
