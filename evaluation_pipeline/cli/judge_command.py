"""``ndcg-eval judge``: an LLM judge grades the pairs a worklist names (docs/judging.md).

    ndcg-eval judge --worklist FILE | --pairs FILE --queries FILE --documents FILE
                    --judge-url URL --model NAME --budget N | --budget-tokens T --out FILE.csv
                    [--concurrency N] [--deadline SECONDS] [--timeout SECONDS] [--retries N]
                    [--cache DIR] [--temperature T] [--max-tokens N] [--template FILE]
                    [--price-per-1k-tokens PRICE] [--rater ID] [--judgment-version NAME]

The output is a judgment version with raters (contract section 1): the judge's id in ``rater``,
``llm`` in ``rater_kind``, and each rating's provenance. The API key is read from
``NDCG_EVAL_JUDGE_API_KEY`` (``settings.JUDGE_API_KEY``) and goes nowhere but the request's
header.

Every option and input is checked before the first request; bad input exits 2 and sends
nothing. A judge that cannot answer (its retries spent, a status retrying cannot change) or
the deadline exits 1: the answers so far are in the cache, --out is left as it was, and the
same command run again asks only what has no answer yet.
"""

from __future__ import annotations

import argparse
import sys

from evaluation_pipeline import settings
from evaluation_pipeline.io.readers import read_queries
from evaluation_pipeline.judging.cache import AnswerCache
from evaluation_pipeline.judging.client import JudgeClient, JudgeFailed, Retries, shown
from evaluation_pipeline.judging.document_reader import read_documents
from evaluation_pipeline.judging.output import default_rater, judgment_frame, write_version
from evaluation_pipeline.judging.pairs import read_pairs, with_texts
from evaluation_pipeline.judging.progress import Progress, cost_text
from evaluation_pipeline.judging.prompt import load_template
from evaluation_pipeline.judging.run import judge_pairs
from evaluation_pipeline.judging.run_options import check_options
from schemas.names import check_safe_name

CACHE_FOLDER = ".ndcg-eval-judge-cache"  # beside --out, unless --cache names another
EXIT_JUDGE_FAILED = 1


def run(args: argparse.Namespace) -> int:
    check_options(args)
    version = args.judgment_version or args.out.stem
    check_safe_name(version, "judgment version")
    template = load_template(args.template)
    source = args.worklist or args.pairs
    pairs = read_pairs(source)
    queries = read_queries(args.queries)
    documents = read_documents(args.documents)
    pairs = with_texts(pairs, queries, documents, str(source), str(args.queries),
                       str(args.documents))
    listed = pairs.height
    if args.budget is not None:
        pairs = pairs.head(args.budget)
    rater = args.rater or default_rater(args.model, template)
    cache_dir = args.cache if args.cache is not None else args.out.parent / CACHE_FOLDER

    print(f"judge: {args.model} at {shown(args.judge_url)}, template {template.name} "
          f"(sha256 {template.sha256[:12]}), temperature {args.temperature:g}; rater {rater}")
    print(f"judging {pairs.height} of the {listed} pairs of {source}"
          + (f", at most {args.budget_tokens:,} tokens" if args.budget_tokens else "")
          + f"; answers cached in {cache_dir}")
    sys.stdout.flush()
    client = JudgeClient(args.judge_url, args.model, api_key=settings.JUDGE_API_KEY.get(),
                         temperature=args.temperature, max_tokens=args.max_tokens,
                         timeout=args.timeout, retries=Retries(attempts=args.retries + 1))
    cache = AnswerCache(cache_dir)
    progress = Progress(pairs.height, args.price_per_1k_tokens)
    try:
        outcome = judge_pairs(pairs, template, client, cache, concurrency=args.concurrency,
                              deadline=args.deadline, budget_tokens=args.budget_tokens,
                              progress=progress)
    except JudgeFailed as exc:
        progress.finish()
        print(f"ndcg-eval: error: the judge failed: {exc}. Nothing was written to {args.out}; "
              f"the {len(cache)} answers in {cache_dir} are kept, and the same command asks "
              "only what has no answer yet", file=sys.stderr)
        return EXIT_JUDGE_FAILED
    finally:
        client.close()
        cache.close()
    progress.finish()
    frame = judgment_frame(outcome.judged, version=version, rater=rater, model=args.model,
                           template=template, temperature=args.temperature)
    write_version(frame, args.out)
    unknown = sum(j.grade is None for j in outcome.judged)
    print(f"wrote {args.out}: judgment version {version}, {frame.height} ratings by {rater} "
          f"({frame.height - unknown} graded, {unknown} unknown); {outcome.calls} asked, "
          f"{frame.height - outcome.calls} from the cache; {outcome.tokens:,} tokens, "
          f"{cost_text(outcome.tokens, args.price_per_1k_tokens)}")
    if outcome.not_judged:
        print(f"the token budget ({args.budget_tokens:,}) left {outcome.not_judged} pairs "
              "unjudged: run again with a larger one to judge them")
    return 0

