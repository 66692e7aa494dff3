"""Publishing judgment versions and candidate pools: validate, sort (DuckDB, out of core), hash,
write."""
