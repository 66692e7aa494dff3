"""One reader per input format (CSV/TSV, TREC, Parquet) and the cell rules they share."""
