"""What the tests share: paths of the checkout, small frames, generated inputs, a temporary
pipeline, and the servers and sessions some tests need (S3, PostgreSQL, Spark)."""
