"""The NDCG metric: gains, the per-query kernel over whole columns, content hashes.

Pure: no I/O, no Dagster."""
