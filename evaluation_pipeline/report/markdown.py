"""A short markdown view of report.json: the headline table and sentences (Dagster metadata)."""

from __future__ import annotations


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _interval(pair: list) -> str:
    return "" if pair[0] is None else f" [{pair[0]:.3f}, {pair[1]:.3f}]"


def headline_markdown(report: dict) -> str:
    lines = [
        "| ranker | K | NDCG | weighted | with number | queries | no positive | incomplete "
        "| not judged | missing |",
        "|---|---:|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in report["results"]:
        c = r["status_counts"]
        lines.append(
            f"| {r['ranker']} | {r['cutoff']} | {_num(r['macro_ndcg'])}"
            f"{_interval(r['macro_ndcg_interval'])} | {_num(r['weighted_ndcg'])}"
            f"{_interval(r['weighted_ndcg_interval'])} | {r['n_with_number']} | "
            f"{r['n_queries']} | {c['no_positive']} | {c['incomplete']} | {c['not_judged']} | "
            f"{c['missing_from_run']} |"
        )
    lines.append("")
    lines += [f"- {sentence}" for sentence in report["headline"]]
    return "\n".join(lines)
