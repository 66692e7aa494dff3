"""``ndcg-eval``: score a run against a judgment version under a declared spec.

    ndcg-eval score --judgments FILE --run FILE|DIR [--queries FILE]
                    [--spec FILE | --profile NAME] [--cutoff K ...] --out DIR
    ndcg-eval spec [--spec FILE | --profile NAME] [--cutoff K ...]
    ndcg-eval report RESULTS [--queries FILE] [--baseline RANKER] [--out DIR] ...
    ndcg-eval compare RESULTS [RESULTS] [--baseline RANKER] [--judgments OLD NEW] ...
    ndcg-eval explain --judgments FILE --run FILE|DIR --query ID --ranker NAME --cutoff K
    ndcg-eval reconcile --judgments FILE --run FILE|DIR --from SPEC --to SPEC [--shapley] ...
    ndcg-eval history STORAGE [--ranker R] [--cutoff K] [--night POOL] [--json]
    ndcg-eval agreement --judgments FILE [--run FILE|DIR] [--spec FILE] [--json]
    ndcg-eval holes --judgments FILE --run FILE|DIR [--queries FILE] [--budget N] [--out FILE]
    ndcg-eval gate --judgments FILE [--run FILE|DIR] [--spec FILE] [--json]

RESULTS is the output folder of ``ndcg-eval score`` or its per_query.parquet.

Bad input exits with status 2, a message naming file, column, rule and rows, and writes nothing;
a write that fails (a full disk) exits with status 1, naming the file.
This module parses the arguments and dispatches; each command's body is in its own module
beside it, ``evaluation_pipeline/cli/<command>_command.py``.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from pathlib import Path

import polars as pl

from evaluation_pipeline import __version__, settings
from evaluation_pipeline.analysis.reconcile import MAX_ROW_SCORINGS
from evaluation_pipeline.cli import agreement_command as agreement
from evaluation_pipeline.cli import compare_command as compare
from evaluation_pipeline.cli import explain_command as explain
from evaluation_pipeline.cli import gate_command as gate
from evaluation_pipeline.cli import help_text
from evaluation_pipeline.cli import history_command as history
from evaluation_pipeline.cli import holes_command as holes
from evaluation_pipeline.cli import judge_command as judge
from evaluation_pipeline.cli import reconcile_command as reconcile
from evaluation_pipeline.cli import report_command as report
from evaluation_pipeline.cli import score_command as score
from evaluation_pipeline.cli import spec_command as spec
from evaluation_pipeline.engines import AUTO, DEFAULT_BATCH_ROWS, ENGINES
from evaluation_pipeline.ingest.external_sort import SpillFolderFull
from evaluation_pipeline.io.atomic import WriteFailed
from evaluation_pipeline.io.locations import argument
from evaluation_pipeline.io.readers import FORMATS
from evaluation_pipeline.io.storage import HISTORY_FILE, HISTORY_FOLDER
from evaluation_pipeline.measures.declarations import DECLARATIONS
from evaluation_pipeline.measures.parse import MeasureError, parse_measure
from evaluation_pipeline.report import ReportConfig
from evaluation_pipeline.report.config import DEFAULT_RESAMPLES
from evaluation_pipeline.spec import PROFILES
from schemas.errors import EvaluationError

EXIT_BAD_INPUT = 2
EXIT_WRITE_FAILED = 1
HELP_WIDTH = 88
# The measures --measure takes, from their declarations.
MEASURE_NAMES = tuple(declaration.name for declaration in DECLARATIONS)

COMMANDS = {"score": score.run, "spec": spec.run, "report": report.run, "compare": compare.run,
            "explain": explain.run, "reconcile": reconcile.run, "history": history.run,
            "agreement": agreement.run, "holes": holes.run, "judge": judge.run,
            "gate": gate.run}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ndcg-eval",
        description="NDCG@K with declared conventions and lineage.",
    )
    parser.add_argument("--version", action="version", version=f"ndcg-eval {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    score = _command(commands, "score", "score a run against a judgment version")
    score.add_argument("--judgments", required=True, type=_location,
                       help="judgment version file, or a URL (s3://bucket/key; with --engine "
                       "spark: any URL Spark reads)")
    score.add_argument("--run", required=True, type=_location,
                       help="run file, or a pool folder with one run file per ranker")
    score.add_argument("--queries", type=_location, help="query weights and slice columns")
    score.add_argument("--out", required=True, type=_location,
                       help="output folder, or a URL (with --engine spark: any URL Spark writes)")
    score.add_argument("--format", choices=FORMATS, help="format of every input file")
    score.add_argument("--judgments-format", choices=FORMATS,
                       help="format of the judgments file "
                       "(default: from its extension, or --format)")
    score.add_argument("--run-format", choices=FORMATS,
                       help="format of the run files (default: from their extension, or --format)")
    score.add_argument("--judgment-version", help="version name when the file carries none")
    score.add_argument("--pool", help="candidate pool name when the file carries none")
    score.add_argument("--ranker", help="ranker name for a run file without one")
    score.add_argument("--engine", choices=ENGINES, default=AUTO,
                       help="auto (default: streaming for Parquet inputs, local for CSV, TREC "
                       "and small inputs), local (in memory, any format), streaming (Parquet "
                       "in batches of whole queries, bounded memory) or spark (PySpark, any "
                       "URL it reads)")
    score.add_argument("--memory-limit", metavar="SIZE",
                       help=f"memory budget of sorting unsorted input, e.g. 2GB, 512MB "
                       f"(default ${settings.MEMORY_LIMIT.name}, else 2GB)")
    score.add_argument("--spill-dir", type=Path, metavar="DIR",
                       help="where a sort spills past the budget "
                       f"(default ${settings.SPILL_DIR.name}, else the system's temporary folder)")
    score.add_argument("--batch-rows", type=int, default=DEFAULT_BATCH_ROWS, metavar="N",
                       help="streaming: about N candidate rows per batch of whole queries")
    score.add_argument("--spark-master", metavar="URL",
                       help="spark: the cluster (spark://host:7077, yarn, k8s://...); default a "
                       "local session, or under spark-submit its --master")
    score.add_argument("--report", action="store_true",
                       help="also write report.json, aggregates.parquet, report.html, traces/")
    _spec_arguments(score)
    _report_arguments(score)
    _storage_arguments(score)

    report = _command(commands, "report",
                      "aggregates with intervals, ranker comparison and report.html")
    report.add_argument("results", type=_location,
                        help="ndcg-eval score output folder or per_query.parquet")
    report.add_argument("--queries", type=_location, help="query weights and slice columns")
    report.add_argument("--out", type=_location,
                        help="output folder (default: the results folder)")
    report.add_argument("--judgments", type=_location, help="judgment version, to write traces")
    report.add_argument("--run", type=_location, help="run file or pool folder, to write traces")
    report.add_argument("--format", choices=FORMATS, help="format of the judgment and run files")
    report.add_argument("--measure", action="append", type=_measure_name, metavar="NAME",
                        help="only this measure beside the spec's nDCG@K, which every report "
                        "holds (repeatable; default: every measure of the results)")
    _spec_arguments(report, cutoff=False)
    _report_arguments(report)
    _storage_arguments(report)

    compare = _command(
        commands, "compare",
        "rankers within one result; or two results (other pool, or other judgment version)")
    compare.add_argument("results", type=_location, nargs="+", metavar="RESULTS",
                         help="one or two ndcg-eval score output folders, the pipeline's "
                         "score or report folders, or per_query.parquet files")
    compare.add_argument("--judgments", type=_location, nargs=2, metavar=("OLD", "NEW"),
                         help="the two judgment versions, to list documents added/removed/regraded")
    compare.add_argument("--pools", type=_location, nargs=2, metavar=("OLD", "NEW"),
                         help="the two pool folders, to count candidates added/removed")
    compare.add_argument("--cutoff", type=int, action="append", metavar="K",
                         help="only these cutoffs")
    compare.add_argument("--measure", action="append", type=_measure_name, metavar="NAME",
                         help="only this measure (repeatable; default: every measure of the "
                         "results); the p-values stay adjusted within the spec's family")
    compare.add_argument("--format", choices=FORMATS, help="format of judgment and run files")
    _report_arguments(compare)
    _storage_arguments(compare)

    explain_cmd = _command(commands, "explain",
                           "per-candidate trace of one number: gain, discount, contribution")
    explain_cmd.add_argument("--judgments", required=True, type=_location,
                             help="judgment version file")
    explain_cmd.add_argument("--run", required=True, type=_location,
                             help="run file or pool folder")
    explain_cmd.add_argument("--query", required=True, help="query_id")
    explain_cmd.add_argument("--ranker", required=True, help="the ranker whose number it is")
    explain_cmd.add_argument("--format", choices=FORMATS, help="format of every input file")
    explain_cmd.add_argument("--judgment-version", help="version name when the file carries none")
    explain_cmd.add_argument("--pool", help="candidate pool name when the file carries none")
    explain_cmd.add_argument("--json", action="store_true", help="print the trace as JSON")
    _spec_arguments(explain_cmd, cutoff=False)
    explain_cmd.add_argument("--measure", action="append", type=_measure_name, metavar="NAME",
                             help="trace this measure instead of NDCG@K, in ir_measures' syntax "
                             "(RR(rel=2)@10, AP(rel=2)@100, R@100; docs/spec.md, Measures): "
                             "each position's part in it under the spec's conventions; repeat "
                             "for several. Measures: " + ", ".join(MEASURE_NAMES))
    explain_cmd.add_argument("--cutoff", type=int, action="append", metavar="K",
                             help="NDCG@K cutoff; repeat for several (overrides the spec's); "
                             "beside --measure, the measures' own cutoffs")
    _storage_arguments(explain_cmd)

    agreement_cmd = _command(
        commands, "agreement", "a version's raters: their agreement, and whether they rank the "
        "rankers alike")
    agreement_cmd.add_argument("--judgments", required=True, type=_location,
                               help="a judgment version with a rater column")
    agreement_cmd.add_argument("--run", type=_location, help="run file or pool folder: NDCG "
                               "per ranker under each rater, and Kendall's tau between them")
    agreement_cmd.add_argument("--format", choices=FORMATS, help="format of every input file")
    agreement_cmd.add_argument("--judgment-version",
                               help="version name when the file carries none")
    agreement_cmd.add_argument("--pool", help="candidate pool name when the file carries none")
    agreement_cmd.add_argument("--json", action="store_true", help="print it as JSON")
    _spec_arguments(agreement_cmd)
    _storage_arguments(agreement_cmd)

    spec = _command(commands, "spec", "print a spec, its spec_id and what each field means")
    _spec_arguments(spec)
    _reconcile_parser(commands)
    _history_parser(commands)
    _holes_parser(commands)
    _judge_parser(commands)
    _gate_parser(commands)
    return parser


def _command(commands: argparse._SubParsersAction, name: str, summary: str
             ) -> argparse.ArgumentParser:
    """A subcommand: its line in ``ndcg-eval --help``, its description and an example."""
    description = textwrap.fill(help_text.COMMANDS[name][0], HELP_WIDTH)
    return commands.add_parser(name, help=summary, description=description,
                               epilog=help_text.epilog(name),
                               formatter_class=argparse.RawDescriptionHelpFormatter)


# Every path argument: a local Path, or a URL kept as written (a Path would fold its "//");
# each command makes it a location with the storage options (io.locations).
_location = argument


def _storage_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--storage-options", metavar="JSON",
                        help="fsspec options for URLs, e.g. '{\"endpoint_url\": "
                        f"\"http://127.0.0.1:9000\"}}', "
                        f"over those of {settings.STORAGE_OPTIONS.name}")


def _spec_arguments(parser: argparse.ArgumentParser, cutoff: bool = True) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--spec", type=Path, help="YAML or TOML spec file")
    group.add_argument("--profile", choices=sorted(PROFILES), help="a named spec")
    if cutoff:
        parser.add_argument("--measure", action="append", metavar="NAME",
                            help="a measure, in ir_measures' syntax (nDCG@10, RR(rel=2)@10, "
                            "AP(rel=2), R@100; docs/spec.md, Measures); repeat for several "
                            "(replaces the spec's list; one must be a plain nDCG@K). Measures: "
                            + ", ".join(MEASURE_NAMES))
        parser.add_argument("--cutoff", type=int, action="append", metavar="K",
                            help="NDCG@K cutoff; repeat for several (overrides the spec's)")


def _report_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = ReportConfig()
    parser.add_argument("--baseline",
                        help="compare each ranker with this one (default: every pair)")
    parser.add_argument("--slice", action="append", metavar="COLUMN", dest="slices",
                        help="query-table slice column; repeat (default: every string column)")
    parser.add_argument("--ci-level", type=float, default=defaults.ci_level, metavar="LEVEL",
                        help="level of the bootstrap intervals, in (0, 1) "
                        f"(default {defaults.ci_level})")
    parser.add_argument("--bootstrap", type=int, default=None,
                        help="bootstrap and randomization resamples (default: the spec's "
                        f"resamples, else {DEFAULT_RESAMPLES})")
    parser.add_argument("--seed", type=int, default=defaults.seed,
                        help="seed every resample derives from, recorded in report.json "
                        f"(default {defaults.seed})")
    parser.add_argument("--regressions", type=int, default=defaults.n_regressions,
                        help="most regressed queries listed per pair")

def _reconcile_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = _command(
        subparsers, "reconcile",
        "walk from one spec to another field by field: what each convention does to the mean")
    parser.add_argument("--judgments", required=True, type=_location,
                        help="judgment version file")
    parser.add_argument("--run", required=True, type=_location,
                        help="run file, or a pool folder with one run file per ranker")
    parser.add_argument("--from", dest="source", required=True, metavar="SPEC",
                        help=f"profile ({', '.join(PROFILES)}) or spec file to start from")
    parser.add_argument("--to", dest="target", metavar="SPEC",
                        help="profile or spec file to walk to (optional with --sensitivity)")
    parser.add_argument("--cutoff", type=int, action="append", metavar="K",
                        help="compare at NDCG@K; repeat for several (needed when the two specs' "
                        "cutoffs differ)")
    parser.add_argument("--queries", type=_location,
                        help="query weights: adds the weighted mean")
    parser.add_argument("--order", metavar="F1,F2,...",
                        help="fields to walk first, in this order (default: spec field order)")
    parser.add_argument("--shapley", action="store_true",
                        help="each field's mean contribution over all orders (scores 2^n specs; "
                        f"refused past {MAX_ROW_SCORINGS:,} row scorings)")
    parser.add_argument("--sensitivity", action="store_true",
                        help="from --from, each field set to each alternative, one at a time")
    parser.add_argument("--json", nargs="?", const="-", metavar="FILE",
                        help="the same as a JSON document: on stdout, or written to FILE")
    parser.add_argument("--format", choices=FORMATS, help="format of every input file")
    parser.add_argument("--judgment-version", help="version name when the file carries none")
    parser.add_argument("--pool", help="candidate pool name when the file carries none")
    parser.add_argument("--ranker", help="ranker name for a run file without one")
    parser.add_argument("--measure", metavar="NAME",
                        help="compare this measure instead of NDCG@K, in ir_measures' syntax "
                        "(AP(rel=2)@100, RR(rel=2)@10, nDCG(dcg=log2)@10; docs/spec.md, "
                        "Measures), on both sides unless --to-measure names the --to side's; "
                        "its differing parameters (rel, cutoff, dcg, ...) are steps too")
    parser.add_argument("--to-measure", metavar="NAME",
                        help="the --to side's measure, of --measure's family (AP(rel=1)@100 "
                        "-> AP(rel=2)@100); without --to, walk within the --from spec")
    _storage_arguments(parser)
    return parser


def _history_parser(subparsers) -> argparse.ArgumentParser:
    parser = _command(subparsers, "history",
                      "the nightly trend: NDCG per night, verdicts, attributions, alerts")
    parser.add_argument("storage", type=_location, metavar="STORAGE",
                        help=f"the pipeline's storage (it holds {HISTORY_FOLDER}/{HISTORY_FILE})")
    parser.add_argument("--ranker", action="append", help="only this ranker (repeatable)")
    parser.add_argument("--cutoff", type=int, action="append", help="only this K (repeatable)")
    parser.add_argument("--measure", action="append", type=_measure_name, metavar="NAME",
                        help="only this measure, headline or not (repeatable; default: the "
                        "spec's headline measures)")
    parser.add_argument("--spec-id", help="only evaluations under this spec_id")
    parser.add_argument("--night", metavar="POOL",
                        help="that night's drill-down instead of the trend: its verdicts, the "
                        "queries that moved most and the change by slice, and its report")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    _storage_arguments(parser)
    return parser


def _holes_parser(subparsers) -> argparse.ArgumentParser:
    parser = _command(subparsers, "holes",
                      "the unjudged and unknown documents to judge next, in priority order")
    parser.add_argument("--judgments", required=True, type=_location,
                        help="judgment version file")
    parser.add_argument("--run", required=True, type=_location,
                        help="run file, or a pool folder with one run file per ranker")
    parser.add_argument("--queries", type=_location,
                        help="query weights (traffic) and query_text; without it every query "
                        "weighs 1")
    parser.add_argument("--budget", type=int, metavar="N",
                        help="only the first N holes (default: every hole)")
    parser.add_argument("--out", type=_location, metavar="FILE",
                        help="write the worklist to this .csv file (default: print it); with "
                        "its grade column filled in it is a judgment version")
    parser.add_argument("--format", choices=FORMATS, help="format of every input file")
    parser.add_argument("--judgment-version", help="version name when the file carries none")
    parser.add_argument("--pool", help="candidate pool name when the file carries none")
    parser.add_argument("--ranker", help="ranker name for a run file without one")
    _spec_arguments(parser)
    _storage_arguments(parser)
    return parser


def _gate_parser(subparsers) -> argparse.ArgumentParser:
    parser = _command(subparsers, "gate",
                      "would a version with a judge's ratings be promoted: its agreement with "
                      "people against the declared thresholds")
    parser.add_argument("--judgments", required=True, type=_location,
                        help="a judgment version with raters: people's (rater_kind human) and "
                        "a judge's (rater_kind llm)")
    parser.add_argument("--run", type=_location, help="run file or pool folder: Kendall's tau "
                        "between the rankers' orders under people alone and combined")
    parser.add_argument("--format", choices=FORMATS, help="format of every input file")
    parser.add_argument("--judgment-version", help="version name when the file carries none")
    parser.add_argument("--pool", help="candidate pool name when the file carries none")
    parser.add_argument("--min-kappa", type=float, metavar="K",
                        help=f"least quadratic kappa (default {settings.GATE_MIN_KAPPA.name}, "
                        f"else {settings.GATE_MIN_KAPPA.default})")
    parser.add_argument("--min-tau", type=float, metavar="T",
                        help=f"least Kendall's tau (default {settings.GATE_MIN_TAU.name}, "
                        f"else {settings.GATE_MIN_TAU.default})")
    parser.add_argument("--min-overlap", type=int, metavar="N",
                        help="fewest documents both graded for a kappa to decide (default "
                        f"{settings.GATE_MIN_OVERLAP.name}, else "
                        f"{settings.GATE_MIN_OVERLAP.default})")
    parser.add_argument("--json", action="store_true", help="print the verdict as JSON")
    _spec_arguments(parser)
    _storage_arguments(parser)
    return parser


def _judge_parser(subparsers) -> argparse.ArgumentParser:
    parser = _command(subparsers, "judge",
                      "an LLM judge grades the worklist's pairs: a judgment version with raters")
    pairs = parser.add_mutually_exclusive_group(required=True)
    pairs.add_argument("--worklist", type=Path, metavar="FILE",
                       help="the worklist of ndcg-eval holes (.csv), judged in its order")
    pairs.add_argument("--pairs", type=Path, metavar="FILE",
                       help="instead: any .csv or .parquet file with query_id and doc_id")
    parser.add_argument("--queries", required=True, type=Path, metavar="FILE",
                        help="the queries table; its query_text is what the judge reads")
    parser.add_argument("--documents", required=True, type=Path, metavar="FILE",
                        help="the documents table (doc_id, title, text), .csv or .parquet")
    parser.add_argument("--judge-url", required=True, metavar="URL",
                        help="an OpenAI-compatible endpoint: .../chat/completions, or the base "
                        "it is under (http://127.0.0.1:8000/v1); the API key, if any, from "
                        f"${settings.JUDGE_API_KEY.name}")
    parser.add_argument("--model", required=True, metavar="NAME",
                        help="the model the endpoint serves")
    parser.add_argument("--budget", type=int, metavar="N",
                        help="judge the first N pairs (the worklist's most useful first)")
    parser.add_argument("--budget-tokens", type=int, metavar="T",
                        help="send no further pair once the answers of this run took T tokens")
    parser.add_argument("--out", required=True, type=Path, metavar="FILE",
                        help="the judgment version to write (.csv), whole or not at all")
    parser.add_argument("--concurrency", type=int, default=4, metavar="N",
                        help="requests in flight at once (default 4)")
    parser.add_argument("--deadline", type=float, default=3600.0, metavar="SECONDS",
                        help="the whole run's limit (default 3600); past it the run stops, "
                        "its answers kept in the cache")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                        help="one request's limit (default 60)")
    parser.add_argument("--retries", type=int, default=5, metavar="N",
                        help="retries of a request on 429, 5xx, a timeout or a broken answer, "
                        "with exponential backoff and jitter, honouring Retry-After (default 5)")
    parser.add_argument("--cache", type=Path, metavar="DIR",
                        help="the answers already paid for (default: .ndcg-eval-judge-cache "
                        "beside --out)")
    parser.add_argument("--temperature", type=float, default=0.0,
                        help="sampling temperature (default 0)")
    parser.add_argument("--max-tokens", type=int, metavar="N",
                        help="the longest reply (default: the server's)")
    parser.add_argument("--template", type=Path, metavar="FILE",
                        help="the prompt template (default: the packaged UMBRELA 0-3 prompt)")
    parser.add_argument("--price-per-1k-tokens", type=float, metavar="PRICE",
                        help="the price of 1,000 tokens, for the estimated cost")
    parser.add_argument("--rater", metavar="ID",
                        help="the judge's id in the rater column (default MODEL@ and the "
                        "template's hash)")
    parser.add_argument("--judgment-version", metavar="NAME",
                        help="the version's name (default: --out's stem)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except SpillFolderFull as exc:  # a full disk, as a write's: not the input's fault
        print(f"ndcg-eval: error: {exc}", file=sys.stderr)
        return EXIT_WRITE_FAILED
    except EvaluationError as exc:
        print(f"ndcg-eval: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except pl.exceptions.PolarsError as exc:  # an input we did not anticipate: still no traceback
        print(f"ndcg-eval: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except WriteFailed as exc:  # a full disk: the file that could not be written, no traceback
        print(f"ndcg-eval: error: {exc}", file=sys.stderr)
        return EXIT_WRITE_FAILED
    except Exception as exc:
        if not _from_object_storage(exc):
            raise
        # No credentials, an endpoint that does not answer: the storage's word, no traceback.
        print(f"ndcg-eval: error: object storage: {type(exc).__name__}: {exc} (credentials "
              "come from the provider chain: AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, ~/.aws, "
              f"an instance role; the endpoint from {settings.STORAGE_OPTIONS.name} or "
              "--storage-options)", file=sys.stderr)
        return EXIT_BAD_INPUT


def _measure_name(name: str) -> str:
    """A measure as --measure filters by it: its canonical name (``RR(rel=2)@10``), so that any
    spelling ir_measures reads finds the rows; a name that does not parse is refused by
    argparse, with the nearest name."""
    try:
        return str(parse_measure(name))
    except MeasureError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _from_object_storage(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is an error of an object store's client library."""
    while exc is not None:
        if type(exc).__module__.split(".")[0] in ("botocore", "aiobotocore", "google", "azure"):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def run() -> None:
    """The ``ndcg-eval`` command: main(), then exit without the interpreter's teardown.

    By then every output is written, closed and renamed into place; tearing down gigabytes of
    frames and the compiler's state would only add to the run's time (benchmarks/README.md,
    "The CLI's exit").
    """
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader closed the pipe (`ndcg-eval spec | head -2`): it had what it wanted.
        code = 0
    try:
        sys.stderr.flush()
    except BrokenPipeError:
        pass
    os._exit(code)


if __name__ == "__main__":
    run()
