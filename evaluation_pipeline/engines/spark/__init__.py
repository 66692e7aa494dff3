"""The Spark engine: scoring, ingest and the report's sums on a cluster's executors."""
