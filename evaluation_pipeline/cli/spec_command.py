"""``ndcg-eval spec``: a spec, its spec_id and what each field means."""

from __future__ import annotations

import argparse

from evaluation_pipeline.cli.options import resolve_spec
from evaluation_pipeline.spec import FIELDS, EvaluationSpec

# A value wider than this pushes its line's meaning to the right rather than being cut.
VALUE_WIDTH = 24


def describe(spec: EvaluationSpec) -> str:
    """What ``ndcg-eval spec`` prints: the spec_id, then a line per declared field with its
    value (``unset`` for an optional field the spec does not set) and its meaning."""
    width = max(len(field.name) for field in FIELDS) + 1
    lines = [f"spec_id {spec.spec_id}"]
    for field in FIELDS:
        value = field.shown(getattr(spec, field.name))
        lines.append(f"  {field.name:<{width}} {value:<{VALUE_WIDTH}} {field.meaning}")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    print(describe(resolve_spec(args)), end="")
    return 0
