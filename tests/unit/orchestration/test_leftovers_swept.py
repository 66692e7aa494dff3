"""The main job's sweep before its runs reaches the steps' spill folder: the storage's .spill
(whose scratch folders are not hidden names) and a configured NDCG_EVAL_SPILL_DIR."""

from __future__ import annotations

from evaluation_pipeline.io.storage import SPILL_FOLDER
from evaluation_pipeline.orchestration.resources import EvaluationStorage
from tests.support.spill import killed_in


def test_the_storages_spill_folder_and_a_configured_one_are_swept(tmp_path):
    storage = EvaluationStorage(base=str(tmp_path / "storage"))
    beside = killed_in(tmp_path / "storage" / SPILL_FOLDER)
    configured = killed_in(tmp_path / "elsewhere")
    removed = storage.clean_leftovers(tmp_path / "storage" / SPILL_FOLDER)
    assert beside in removed and not beside.exists()
    assert configured.exists()  # not this storage's, and not named
    assert storage.clean_leftovers(tmp_path / "elsewhere") == [configured]
    assert not configured.exists()
