"""Arrow buffers of a string column, for the compiled loops of ``core.kernel``."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa


def string_buffers(series: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, data) of a non-null string column: value i is ``data[offsets[i]:offsets[i+1]]``.

    No copy of the data when the column is a single chunk; offsets are int64 (large_string).
    """
    array = series.cast(pl.String).rechunk().to_arrow(compat_level=pl.CompatLevel.oldest())
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if array.type != pa.large_string():
        array = array.cast(pa.large_string())
    _, offsets, data = array.buffers()
    offsets = np.frombuffer(offsets, dtype=np.int64)[array.offset:array.offset + len(array) + 1]
    if data is None or data.size == 0:  # read-only like np.frombuffer: one compiled signature
        return offsets, np.frombuffer(b"\0", dtype=np.uint8)
    return offsets, np.frombuffer(data, dtype=np.uint8)
