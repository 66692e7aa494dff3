"""What ``ndcg-eval COMMAND --help`` says about each command: a description and one example,
on the bundled example data (run from the checkout's folder)."""

from __future__ import annotations

JUDGMENTS = "examples/data/landing/judgments/maint-v2.csv"
POOL = "examples/data/landing/pools/pool-2026-11-28"

# command: (description, example)
COMMANDS: dict[str, tuple[str, str]] = {
    "score": (
        "Score a run (a file, or a pool folder with one run file per ranker) against a "
        "judgment version under a spec: per_query.parquet and summary.json in --out, every row "
        "with its lineage; with --report also the report.",
        f"ndcg-eval score --judgments {JUDGMENTS} --run {POOL} --out out/demo"),
    "report": (
        "The report of an ndcg-eval score result: aggregates with bootstrap intervals, paired "
        "ranker comparisons, slices of the queries table, report.json and report.html; with "
        "--judgments and --run, traces of the most regressed queries.",
        "ndcg-eval report out/demo --queries examples/data/queries.csv --baseline bm25-v3"),
    "compare": (
        "The rankers of one result, paired over queries; or two results: over the same pool, "
        "the judgment-version diff (documents added, removed, regraded); else the two pools.",
        "ndcg-eval compare out/demo --baseline bm25-v3"),
    "explain": (
        "The per-candidate trace of one per-query number, for each cutoff of the spec: grade, "
        "gain, position, discount and contribution, and the ideal order.",
        f"ndcg-eval explain --judgments {JUDGMENTS} --run {POOL} --query boiler-32 "
        "--ranker dense-v2"),
    "spec": (
        "Print a spec (the default, a profile or a file), its spec_id and what each field "
        "means.",
        "ndcg-eval spec --profile trec_eval"),
    "reconcile": (
        "Walk from one spec to another one field at a time, with what each convention does to "
        "the mean and the queries it moves most; optionally each field's Shapley share, or "
        "each field's alternatives one at a time (--sensitivity).",
        f"ndcg-eval reconcile --judgments {JUDGMENTS} --run {POOL} --from default "
        "--to trec_eval --cutoff 10"),
    "agreement": (
        "The raters of a judgment version with a rater column: per pair their overlap, Cohen's "
        "kappa (unweighted and quadratic), confusion matrix and mean difference; over all, "
        "Krippendorff's alpha and Fleiss' kappa; with --run, NDCG per ranker under each rater "
        "and the spec's rule, and Kendall's tau between the raters' ranker orders.",
        "ndcg-eval agreement --judgments examples/data/raters/maint-raters.csv"),
    "history": (
        "The pipeline's nightly trend from its storage: NDCG per night with intervals, the "
        "verdict against the previous night and its split into judgments and pool; --night "
        "drills into one night.",
        "ndcg-eval history .storage --ranker dense-v2 --cutoff 10"),
    "holes": (
        "The worklist of what to judge next: every unknown or unjudged document (hole) of the "
        "judged queries, ordered by how much its grade is expected to narrow the bounds of "
        "each ranker's NDCG at the spec's largest cutoff, weighted by the queries' traffic "
        "and summed over the rankers; ties by query_id, then doc_id. With --out a CSV file "
        "that, with its grade column filled in, is a judgment version.",
        f"ndcg-eval holes --judgments {JUDGMENTS} --run {POOL} "
        "--queries examples/data/queries.csv --budget 5"),
    "judge": (
        "An LLM judge grades the pairs of a worklist (or a list of pairs) through any "
        "OpenAI-compatible chat-completions endpoint, under the UMBRELA 0-3 prompt or "
        "--template, within a budget of pairs or tokens: a judgment version whose rater is "
        "the judge (rater_kind llm), each rating with its model, template hash, temperature, "
        "raw answer and tokens. Answers are cached, so a rerun pays for none twice.",
        "ndcg-eval judge --worklist out/worklist.csv --queries examples/data/queries.csv "
        "--documents examples/data/documents.csv --judge-url http://127.0.0.1:8000/v1 "
        "--model qwen2.5-7b-instruct --budget 20 --out out/judged.csv"),
    "gate": (
        "The gate of a version that mixes people's ratings (rater_kind human) and a judge's "
        "(rater_kind llm): quadratic Cohen's kappa per judge and person over the documents "
        "both graded and, with --run, Kendall's tau between the rankers' orders under people "
        "alone and under the combined version, against the declared thresholds. Exit status "
        "0: promoted; 3: refused, with the reason.",
        "ndcg-eval gate --judgments examples/data/raters/maint-raters.csv "
        "--run examples/data/landing/pools/pool-2026-11-28"),
}


def epilog(command: str) -> str:
    return f"example:\n  {COMMANDS[command][1]}"
