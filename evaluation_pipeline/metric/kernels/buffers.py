"""Arrow buffers of a string column, for the compiled kernels (``metric.kernels.loading``)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

# Bytes past the last string: the kernel copies short strings as whole 8-byte words.
_SLACK = 16


def string_buffers(series: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, data) of a non-null string column: value i is ``data[offsets[i]:offsets[i+1]]``.

    polars holds strings as Arrow string views; they are copied into one contiguous buffer by a
    compiled loop (about three times faster than Arrow's cast to large_string here). Both arrays
    are read-only, as buffers from Arrow are, so the kernels compile one signature.
    """
    # Here, not at the top: numba loads with the first kernel call (see metric.kernels.loading).
    from evaluation_pipeline.metric.kernels.strings import (
        view_bytes_total,
        views_to_strings,
    )

    chunks = [chunk.to_arrow(compat_level=pl.CompatLevel.newest())
              for chunk in series.cast(pl.String).get_chunks()]
    views = [_views(array) for array in chunks]
    offsets = np.zeros(len(series) + 1, dtype=np.int64)
    size = sum(view_bytes_total(array_views) for array_views, _ in views)
    data = np.empty(size + _SLACK, dtype=np.uint8)
    first = 0
    for array_views, addresses in views:
        views_to_strings(array_views, array_views.view(np.uint8), addresses, offsets, data,
                         first)
        first += len(array_views) // 4
    offsets.flags.writeable = False
    data.flags.writeable = False
    return offsets, data


def _views(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(views as int32, four per value; start address of each data buffer) of a string view
    array without nulls."""
    if not isinstance(array, pa.StringViewArray):
        array = array.cast(pa.string_view())
    buffers = array.buffers()
    start, stop = 4 * array.offset, 4 * (array.offset + len(array))
    views = np.frombuffer(buffers[1], dtype=np.int32)[start:stop]
    addresses = np.array([b.address for b in buffers[2:]] or [0], dtype=np.int64)
    return views, addresses
