"""``ndcg-eval spec``: a spec, its spec_id and what each field means."""

from __future__ import annotations

import argparse

from evaluation_pipeline.cli.options import resolve_spec
from evaluation_pipeline.spec import FIELD_DOCS


def run(args: argparse.Namespace) -> int:
    spec = resolve_spec(args)
    print(f"spec_id {spec.spec_id}")
    for name, value in spec.to_dict().items():
        print(f"  {name:<17} {value!s:<24} {FIELD_DOCS[name]}")
    return 0
