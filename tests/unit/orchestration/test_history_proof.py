"""The evaluation history is rewritten by every report and read back by the next: it is proven
first against the stamp its writer left (the hashes of the bytes it replaced and wrote), so a
history altered by hand stops the report, named, while a writer killed between the stamp and
the file leaves a history the next report still reads."""

from __future__ import annotations

import polars as pl
import pytest

from evaluation_pipeline.io import integrity
from evaluation_pipeline.io.landing import file_sha256
from evaluation_pipeline.io.storage import history_file, history_stamp_file
from evaluation_pipeline.orchestration.assets import _read_history, _write_history
from evaluation_pipeline.orchestration.resources import EvaluationStorage
from schemas.errors import EvaluationError

FIRST = pl.DataFrame({"ranker": ["bm25"], "ndcg": [0.5]})
SECOND = pl.DataFrame({"ranker": ["bm25", "dense"], "ndcg": [0.5, 0.75]})


@pytest.fixture
def storage(tmp_path) -> EvaluationStorage:
    return EvaluationStorage(base=str(tmp_path / "store"))


def test_a_written_history_is_read_back_with_its_hash(storage):
    assert _read_history(storage) == (None, None)
    _write_history(storage, FIRST, None)
    history, digest = _read_history(storage)
    assert history.equals(FIRST)
    assert digest == file_sha256(storage.path(*history_file()))
    _write_history(storage, SECOND, digest)
    assert _read_history(storage)[0].equals(SECOND)


def test_an_altered_history_is_named(storage):
    _write_history(storage, FIRST, None)
    FIRST.with_columns(ndcg=pl.lit(0.9)).write_parquet(storage.path(*history_file()))
    with pytest.raises(EvaluationError) as refused:
        _read_history(storage)
    assert str(storage.path(*history_file())) in str(refused.value)
    assert str(storage.path(*history_stamp_file())) in str(refused.value)


def test_a_writer_killed_between_stamp_and_file_leaves_a_proven_history(storage):
    _write_history(storage, FIRST, None)
    _, digest = _read_history(storage)
    # The stamp of the next write, without the write that follows it.
    storage.write_json(integrity.rewrite_stamp(digest, "0" * 64), *history_stamp_file())
    assert _read_history(storage)[0].equals(FIRST)


def test_a_history_written_before_stamps_is_read(storage):
    _write_history(storage, FIRST, None)
    storage.path(*history_stamp_file()).unlink()
    assert _read_history(storage)[0].equals(FIRST)
