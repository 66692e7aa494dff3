"""Statistics over queries: seeded resamples, bootstrap intervals, paired tests, Holm.

Pure: no I/O, no Dagster."""
