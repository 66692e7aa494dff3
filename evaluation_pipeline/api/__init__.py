"""The Python API (docs/python.md): the ``ndcg-eval`` commands as functions for notebooks, on
files or on DataFrames, Arrow tables and the nested dicts of pytrec_eval and ir_measures.

    from evaluation_pipeline import evaluate
    result = evaluate(qrels, run, spec="trec_eval", cutoffs=[10])
    result.per_query, result.summary, result.report().write("out/report")
"""

from evaluation_pipeline.api.evaluated import Evaluation, Report
from evaluation_pipeline.api.functions import (
    agreement,
    evaluate,
    explain,
    reconcile,
    resolve_spec,
)

__all__ = ["Evaluation", "Report", "agreement", "evaluate", "explain", "reconcile",
           "resolve_spec"]
