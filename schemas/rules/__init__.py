"""Every input table's rules, each declared once, and the paths made from them.

A table (:class:`schemas.rules.rule.Table`) lists its columns and its rules: the column each
rule names, what it requires in the words a refusal says, and how it is evaluated, as a polars
expression and, where the Spark engine counts it, as a Spark column. From that one list come
the pandera model (``schemas.rules.to_pandera``), the one-pass polars screen
(``schemas.screening``), the streaming engine's batch checks and the Spark engine's counts
(``schemas.rules.to_spark``). A test breaks each rule alone and holds every path to refusing
it (``tests/unit/schemas/test_rules.py``).

This package imports polars only: the screen of a clean input never loads pandera or pyspark.
"""
