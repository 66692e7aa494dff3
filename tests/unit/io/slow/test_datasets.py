"""One reader for result folders (``io.datasets``): it reads what Spark reads, on every layout.

Each layout is read by the reader from a local disk and from an S3 bucket (moto's server,
``tests.support.s3_server``), and by Spark (local[2]): the same rows, columns and types.
"""

from __future__ import annotations

import shutil

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from evaluation_pipeline.engines.spark.cogroup import read_results
from evaluation_pipeline.io.datasets import NoDataFiles, data_files, read_dataset
from evaluation_pipeline.io.locations import location
from tests.support.paths import EXAMPLES
from tests.support.s3_server import BUCKET
from tests.support.spark_session import requires_spark

pytestmark = requires_spark

POOL = EXAMPLES / "landing" / "pools" / "pool-2026-11-28"
SOME = ["query_id", "ranker", "score"]


def _one_file(tmp_path, spark):
    target = tmp_path / "one" / "bm25-v3.parquet"
    target.parent.mkdir()
    shutil.copyfile(POOL / "bm25-v3.parquet", target)
    return target


def _pool_folder(tmp_path, spark):
    """The example pool as landed: a file per ranker beside its _READY marker."""
    target = tmp_path / "pools" / POOL.name
    shutil.copytree(POOL, target)
    assert (target / "_READY").exists()
    return target


def _parts(tmp_path, spark):
    """The pool as Spark writes a result: parts with _SUCCESS and a .crc file per part."""
    target = tmp_path / "written" / "per_query.parquet"
    frame = pl.read_parquet([str(p) for p in sorted(POOL.glob("*.parquet"))])
    spark.createDataFrame(frame.to_pandas()).repartition(3).write.parquet(str(target))
    names = {p.name for p in target.iterdir()}
    assert "_SUCCESS" in names and any(n.endswith(".crc") for n in names)
    return target


LAYOUTS = {"one file": _one_file, "pool folder": _pool_folder, "parts": _parts}


def _ordered(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.sort(frame.columns)  # Spark reads parts in no fixed order


def _uploaded(folder_or_file, name: str):
    """The same files (every one: markers and checksums too) under ``name`` in the bucket."""
    base = location(f"s3://{BUCKET}/datasets/{name.replace(' ', '-')}")
    if folder_or_file.is_dir():
        for path in sorted(folder_or_file.iterdir()):
            base.fs.put_file(str(path), (base / folder_or_file.name / path.name).path)
    else:
        base.fs.put_file(str(folder_or_file), (base / folder_or_file.name).path)
    return base / folder_or_file.name


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_reader_reads_what_spark_reads(layout, tmp_path, spark, endpoint):
    where = LAYOUTS[layout](tmp_path, spark)
    remote = _uploaded(where, layout)
    for columns in (None, SOME):
        by_spark = _ordered(read_results(str(where), columns, spark))
        local = read_dataset(where, columns)
        assert local.schema == by_spark.schema
        assert_frame_equal(_ordered(local), by_spark)
        assert_frame_equal(_ordered(read_dataset(remote, columns)), by_spark)
    assert [f.name for f in data_files(remote)] == [f.name for f in data_files(where)]


def test_parts_are_read_in_name_order_and_markers_never(tmp_path, spark):
    where = _parts(tmp_path, spark)
    files = data_files(where)
    assert [f.name for f in files] == sorted(f.name for f in files)
    assert all(f.name.startswith("part-") for f in files)
    rows = read_dataset(where)
    assert rows.height == sum(pl.read_parquet(f).height for f in files)


def test_a_folder_of_markers_only_is_refused(tmp_path):
    (tmp_path / "_SUCCESS").touch()
    (tmp_path / ".part-0.parquet.crc").touch()
    with pytest.raises(NoDataFiles):
        read_dataset(tmp_path)


def test_a_result_spark_wrote_at_a_url_is_read_whole(tmp_path, spark, endpoint):
    # `score --engine spark --out s3a://...` leaves no marker: its parts, Spark's _SUCCESS and
    # then summary.json. The commands read it as the same result on a local disk, and refuse
    # it while the summary is not there yet.
    from evaluation_pipeline.cli.main import main
    from evaluation_pipeline.cli.results import load_results
    from evaluation_pipeline.io.result_folder import IncompleteResult

    judgments = EXAMPLES / "landing" / "judgments" / "maint-v2.csv"
    judged = tmp_path / "maint-v2.parquet"
    pl.read_csv(judgments, schema_overrides={"grade": pl.Int64}).write_parquet(judged)
    local = tmp_path / "result"
    assert main(["score", "--engine", "spark", "--judgments", str(judged), "--run", str(POOL),
                 "--out", str(local)]) == 0
    assert (local / "per_query.parquet" / "_SUCCESS").exists()
    base = location(f"s3://{BUCKET}/spark-result")
    for path in sorted(local.rglob("*")):
        if path.is_file() and path.name != "summary.json":
            base.fs.put_file(str(path), (base / path.relative_to(local).as_posix()).path)
    with pytest.raises(IncompleteResult):
        load_results(base)
    base.fs.put_file(str(local / "summary.json"), (base / "summary.json").path)
    rows, spec, lineage = load_results(base)
    expected, local_spec, local_lineage = load_results(local)
    assert (spec.spec_id, lineage) == (local_spec.spec_id, local_lineage)
    assert_frame_equal(_ordered(rows), _ordered(expected))
