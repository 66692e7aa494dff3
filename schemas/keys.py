"""Key uniqueness at the cost of a sort of 64-bit hashes rather than a hash table of strings."""

from __future__ import annotations

import numpy as np
import polars as pl


def unique_rows(frame: pl.LazyFrame, keys: list[str]) -> pl.LazyFrame:
    """One boolean per row: False where the row's key tuple occurs more than once.

    Rows are hashed to 64 bits and the hashes sorted; only rows whose hash repeats are compared
    exactly, so a hash collision can never report a false duplicate.
    """
    present = [k for k in keys if k in frame.collect_schema().names()]
    if len(present) < len(keys):  # a missing key column is reported on its own
        return frame.select(pl.lit(True).alias("unique"))
    hashes = frame.select(pl.struct(keys).hash(seed=0)).collect().to_series().to_numpy()
    ordered = np.sort(hashes)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]
    if len(repeated) == 0:
        return frame.select(pl.lit(True).alias("unique"))
    suspect = np.isin(hashes, repeated)
    exact = (
        frame.select(keys)
        .with_row_index("row")
        .filter(pl.Series(suspect))
        .filter(pl.struct(keys).is_duplicated())
        .select("row")
        .collect()
        .to_series()
        .to_numpy()
    )
    unique = np.ones(len(hashes), dtype=bool)
    unique[exact] = False
    return pl.LazyFrame({"unique": unique})
