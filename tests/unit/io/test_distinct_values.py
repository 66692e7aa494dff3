"""``io.datasets.distinct_values``: each column's distinct values, without holding the columns."""

import subprocess
import sys
import textwrap

import polars as pl

from evaluation_pipeline.io.datasets import distinct_values


def test_each_columns_values_from_a_file_and_a_folder_of_parts(tmp_path):
    rows = pl.DataFrame({"a": ["x", "y", "x", None], "b": ["z"] * 4, "n": [1, 2, 2, 3]})
    rows.write_parquet(tmp_path / "one.parquet")
    parts = tmp_path / "parts"
    parts.mkdir()
    rows.slice(0, 2).write_parquet(parts / "part-0.parquet")
    rows.slice(2).write_parquet(parts / "part-1.parquet")
    (parts / "_SUCCESS").touch()
    for where in (tmp_path / "one.parquet", parts):
        found = distinct_values(where, ["a", "b", "n"])
        assert sorted(found["a"], key=str) == sorted(["x", "y", None], key=str)
        assert found["b"] == ["z"] and sorted(found["n"]) == [1, 2, 3]
    assert distinct_values(parts, []) == {}


def test_the_columns_are_not_held(tmp_path):
    """Six columns of one 64-byte value over 2M rows, as the lineage columns of per-query rows
    are: the peak grows by about 20 MB. Imploding the uniques in one select held the columns
    (148 MB here, 1.95 GB at 20M rows)."""
    path = tmp_path / "lineage.parquet"
    names = [f"c{i}" for i in range(6)]
    pl.select(pl.int_range(0, 2_000_000).alias("row")).with_columns(
        pl.lit("x" * 64).alias(name) for name in names).write_parquet(path)
    probe = textwrap.dedent(f"""
        from pathlib import Path

        import polars as pl
        from evaluation_pipeline.io.datasets import distinct_values

        def peak_mb():
            with open("/proc/self/status") as status:
                line = next(line for line in status if line.startswith("VmHWM:"))
            return int(line.split()[1]) // 1024

        pl.scan_parquet({str(path)!r}).select(pl.len()).collect()  # the engine started
        before = peak_mb()
        assert distinct_values(Path({str(path)!r}), {names!r}) == {{
            name: ["x" * 64] for name in {names!r}}}
        print(peak_mb() - before)
    """)
    grown = int(subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True,
                               text=True).stdout.strip())
    assert grown < 75, f"the peak grew by {grown} MB"
