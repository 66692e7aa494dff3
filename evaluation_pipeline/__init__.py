"""NDCG evaluation with declared conventions and lineage.

The metric code (``core``), readers and writers (``io``) and the spec never import Dagster;
``orchestration`` and ``definitions`` assemble them into a Dagster code location.

Docstrings that cite "contract section N" mean the evaluation contract in ``docs/CONTRACT.md``.
"""

__version__ = "0.1.0"
