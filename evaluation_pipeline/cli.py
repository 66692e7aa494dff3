"""``ndcg-eval``: score a run against a judgment version under a declared spec.

    ndcg-eval score --judgments FILE --run FILE|DIR [--queries FILE]
                    [--spec FILE | --profile NAME] [--cutoff K ...] --out DIR
    ndcg-eval spec [--spec FILE | --profile NAME] [--cutoff K ...]

Bad input exits with status 2, a message naming file, column, rule and rows, and writes nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polars as pl

from evaluation_pipeline import __version__
from evaluation_pipeline.core.evaluation import evaluate, summarize
from evaluation_pipeline.core.gains import GainError
from evaluation_pipeline.io.atomic import write_json, write_parquet
from evaluation_pipeline.io.readers import FORMATS, read_judgments, read_pool, read_queries, read_run
from evaluation_pipeline.spec import FIELD_DOCS, PROFILES, EvaluationSpec, SpecError, load_spec, profile
from schemas import InputError, PerQueryResults, validate
from schemas.names import UnsafeNameError

EXIT_BAD_INPUT = 2

PER_QUERY_FILE = "per_query.parquet"
SUMMARY_FILE = "summary.json"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ndcg-eval",
        description="NDCG@K with declared conventions and lineage.",
    )
    parser.add_argument("--version", action="version", version=f"ndcg-eval {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    score = commands.add_parser("score", help="score a run against a judgment version")
    score.add_argument("--judgments", required=True, type=Path, help="judgment version file")
    score.add_argument("--run", required=True, type=Path,
                       help="run file, or a pool folder with one run file per ranker")
    score.add_argument("--queries", type=Path, help="query weights and slice columns")
    score.add_argument("--out", required=True, type=Path, help="output folder")
    score.add_argument("--format", choices=FORMATS, help="format of every input file")
    score.add_argument("--judgments-format", choices=FORMATS)
    score.add_argument("--run-format", choices=FORMATS)
    score.add_argument("--judgment-version", help="version name when the file carries none")
    score.add_argument("--pool", help="candidate pool name when the file carries none")
    score.add_argument("--ranker", help="ranker name for a run file without one")
    _spec_arguments(score)

    spec = commands.add_parser("spec", help="print a spec, its spec_id and what each field means")
    _spec_arguments(spec)
    return parser


def _spec_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--spec", type=Path, help="YAML or TOML spec file")
    group.add_argument("--profile", choices=sorted(PROFILES), help="a named spec")
    parser.add_argument("--cutoff", type=int, action="append", metavar="K",
                        help="NDCG@K cutoff; repeat for several (overrides the spec's)")


def resolve_spec(args: argparse.Namespace) -> EvaluationSpec:
    spec = load_spec(args.spec) if args.spec else profile(args.profile or "default")
    if args.cutoff:
        spec = spec.replace(cutoffs=tuple(args.cutoff))
    return spec


def cmd_score(args: argparse.Namespace) -> int:
    spec = resolve_spec(args)
    judgments = read_judgments(
        args.judgments, args.judgments_format or args.format, version=args.judgment_version
    )
    run_format = args.run_format or args.format
    if args.run.is_dir():
        pool = read_pool(args.run, pool=args.pool, fmt=run_format)
    else:
        pool = read_run(args.run, run_format, pool=args.pool, ranker=args.ranker)
    queries = read_queries(args.queries) if args.queries else None
    per_query, lineage = evaluate(judgments, pool, spec)
    per_query = validate(PerQueryResults, per_query, "per-query results")
    summary = summarize(per_query, spec, lineage, queries)
    # Everything is computed and validated before the first byte is written.
    write_parquet(per_query, args.out / PER_QUERY_FILE)
    write_json(summary, args.out / SUMMARY_FILE)
    print(render_summary(summary, args.out))
    return 0


def cmd_spec(args: argparse.Namespace) -> int:
    spec = resolve_spec(args)
    print(f"spec_id {spec.spec_id}")
    for name, value in spec.to_dict().items():
        print(f"  {name:<17} {value!s:<24} {FIELD_DOCS[name]}")
    return 0


def render_summary(summary: dict, out: Path | None = None) -> str:
    lineage = summary["lineage"]
    lines = [
        f"judgments {lineage['judgment_version']} (sha256 {lineage['judgments_sha256'][:12]}), "
        f"pool {lineage['candidate_pool']} (sha256 {lineage['pool_sha256'][:12]}), "
        f"spec {summary['spec_id']}",
        f"conventions: {summary['conventions']}",
        "",
        f"{'ranker':<20} {'K':>4} {'NDCG':>7} {'queries':>8} {'scored':>7} {'no_pos':>7} "
        f"{'incompl':>7} {'notjudg':>7} {'missing':>7}",
    ]
    for row in summary["results"]:
        counts = row["status_counts"]
        value = "n/a" if row["macro_ndcg"] is None else f"{row['macro_ndcg']:.4f}"
        lines.append(
            f"{row['ranker']:<20} {row['cutoff']:>4} {value:>7} {row['n_queries']:>8} "
            f"{counts['scored']:>7} {counts['no_positive']:>7} {counts['incomplete']:>7} "
            f"{counts['not_judged']:>7} {counts['missing_from_run']:>7}"
        )
    if out is not None:
        lines += ["", f"wrote {out / PER_QUERY_FILE} and {out / SUMMARY_FILE}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler = {"score": cmd_score, "spec": cmd_spec}[args.command]
    try:
        return handler(args)
    except (InputError, SpecError, GainError, UnsafeNameError) as exc:
        print(f"ndcg-eval: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except pl.exceptions.PolarsError as exc:  # an input we did not anticipate: still no traceback
        print(f"ndcg-eval: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
