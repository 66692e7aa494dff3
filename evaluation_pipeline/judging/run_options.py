"""The options of a judge run, checked before any input is read or request sent: by the same
rules for ``ndcg-eval judge`` and the ``judgments_llm`` asset's config (as a namespace with the
command's option names)."""

from __future__ import annotations

import argparse
from pathlib import Path

from evaluation_pipeline.judging.client import shown
from schemas.errors import EvaluationError

CSV_SUFFIX = ".csv"


class JudgeOptionError(EvaluationError):
    """An option of ndcg-eval judge that cannot apply."""


def check_options(args: argparse.Namespace) -> None:
    """Every option that cannot apply is refused before any input is read or request sent."""
    if args.budget is None and args.budget_tokens is None:
        raise JudgeOptionError("give --budget N (pairs) or --budget-tokens T, or both: a judge "
                               "costs money, and nothing is spent unasked")
    for name, least in (("budget", 1), ("budget_tokens", 1), ("concurrency", 1),
                        ("retries", 0), ("max_tokens", 1)):
        value = getattr(args, name)
        if value is not None and value < least:
            raise JudgeOptionError(f"--{name.replace('_', '-')} {value}: give a whole number "
                                   f">= {least}")
    for name in ("deadline", "timeout"):
        value = getattr(args, name)
        if value is not None and not value > 0:
            raise JudgeOptionError(f"--{name} {value:g}: give a number of seconds above 0")
    if not 0 <= args.temperature <= 2:
        raise JudgeOptionError(f"--temperature {args.temperature:g}: give a number from 0 to 2")
    if args.price_per_1k_tokens is not None and args.price_per_1k_tokens < 0:
        raise JudgeOptionError("--price-per-1k-tokens: give a price >= 0")
    if not args.judge_url.lower().startswith(("http://", "https://")):
        raise JudgeOptionError(f"--judge-url {shown(args.judge_url)}: give an http:// or "
                               "https:// URL (its chat-completions endpoint, or the base it "
                               "is under: http://127.0.0.1:8000/v1)")
    if not args.model.strip():
        raise JudgeOptionError("--model: name the model the endpoint serves")
    if args.rater is not None and not args.rater.strip():
        raise JudgeOptionError("--rater: give a non-empty id")
    out = args.out
    if out.is_dir():
        raise JudgeOptionError(f"--out {out} is a folder: name the judgment version's file")
    if out.suffix.lower() != CSV_SUFFIX:
        raise JudgeOptionError(f"--out {out}: the ratings are written as a CSV file (name it "
                               f"*{CSV_SUFFIX})")
    inputs = [args.worklist, args.pairs, args.queries, args.documents, args.template]
    if any(given is not None and Path(given).resolve() == out.resolve() for given in inputs):
        raise JudgeOptionError(f"--out {out} is one of the inputs: name another file")
