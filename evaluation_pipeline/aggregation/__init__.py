"""The report's numbers: sums over chunks of queries, aggregates and ranker comparisons.

Pure: no I/O, no Dagster."""
