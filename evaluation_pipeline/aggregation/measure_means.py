"""Each ranker's mean of each measure over the queries with a number, as a macro mean of
nDCG@K is taken (contract section 4): what ``ndcg-eval score`` prints beside its nDCG@K table
and the Python API's ``Evaluation.means()``."""

from __future__ import annotations

import polars as pl


def measure_means(rows: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """Per (ranker, measure), sorted: ``mean`` of ``value`` over the rows with one, ``n`` those
    rows, ``none`` the rows without (a query counted apart by its status); one streamed pass
    over a scan, the rows never held."""
    return (rows.lazy().group_by("ranker", "measure")
            .agg(pl.col("value").mean().alias("mean"), pl.col("value").count().alias("n"),
                 pl.col("value").null_count().alias("none"))
            .sort("ranker", "measure").collect(engine="streaming"))
