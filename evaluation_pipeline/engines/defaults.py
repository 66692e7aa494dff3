"""Sizes every engine shares, below them all: each engine takes them from here without loading
the others, and the CLI's defaults load no engine."""

# The streaming engine's batch: the fastest of the sizes timed at 100M rows, at a peak set by
# the summary, not by the batches (benchmarks/README.md, "The streaming engine").
DEFAULT_BATCH_ROWS = 500_000
# Rows of a row group of per_query.parquet, in every engine that writes one file: the file's
# bytes are then a function of its rows alone, whichever engine ``auto`` (and so the memory
# budget) picks. Left to polars, the in-memory write splits a frame by its size and the
# streaming sink by the batches it is fed, so past some 85k rows the two files differed.
PER_QUERY_ROW_GROUP_ROWS = 512**2
