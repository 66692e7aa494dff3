"""NDCG evaluation with declared conventions and lineage.

The package is built in layers. Each one imports only from the layers listed before it (and
from within itself); ``tests/unit/test_layering.py`` reads every import and holds the code to
this list:

1. ``schemas``: the pandera models and the one declaration of every table's columns.
2. ``settings``, ``spec_fields``, ``measures``: every NDCG_EVAL_* variable; what declaring a
   spec field takes, and what comes from a declaration; each measure's declaration and the
   parser of its name (ir_measures' syntax).
3. ``spec``: the evaluation spec, its fields each declared once, its profiles.
4. ``io``: readers (``io/formats``), atomic writers, storage paths, landing, locks.
5. ``metric``: the NDCG kernel and the content hashes (``metric/kernels``: numba).
6. ``stats``: seeded resamples, bootstrap intervals, paired tests, Holm.
7. ``aggregation``: the report's numbers, summed over chunks of queries; ranker comparisons.
8. ``ingest``: publishing versions and pools: validate, sort out of core, hash, write.
9. ``evaluation``: one evaluation (judgments x pool under a spec) with its lineage.
10. ``nightly``, ``analysis``: the nightly watch and alerts; reconcile, diff, explain,
    coverage, agreement.
11. ``report``, ``judging``: report.json, report.html and report.md, traces, the trend; the
    judge that grades the holes, and its gate (on ``analysis``' agreement).
12. ``engines``: the choice of engine and the local, streaming and Spark engines.
13. ``api``: the Python API, the commands as functions (``evaluate``, ``explain``,
    ``reconcile``, ``agreement``).
14. ``cli``, ``orchestration``: the ``ndcg-eval`` commands and the Dagster assets and
    resources, on the engines and the API.
15. ``definitions``: the Dagster code location, assembled from the resources and settings.
16. ``main_job``, ``dev_ui``, ``__main__``, ``spec_docs``, ``measures_docs``: the entry points
    of `make run`, `make ui` and ``ndcg-eval``; the writers of docs/spec.md's tables of the
    spec's fields and of the measures.

``metric``, ``stats`` and ``aggregation`` are pure: no I/O, no Dagster. Only ``orchestration``
and the entry points above it import Dagster.

The package face re-exports the Python API (``from evaluation_pipeline import evaluate``),
loaded on first use: ``import evaluation_pipeline`` itself loads nothing (the version, the
layers' own imports of ``settings``).

Docstrings that cite "contract section N" mean the evaluation contract in ``docs/CONTRACT.md``.
"""

__version__ = "0.1.0"

# The Python API's names, each loaded from ``api`` when first asked for.
API = ("evaluate", "explain", "reconcile", "agreement", "Evaluation", "Report")
__all__ = ["__version__", *API]


def __getattr__(name: str):
    if name in API:
        from evaluation_pipeline import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
