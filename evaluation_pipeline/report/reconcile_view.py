"""The terminal form of a reconciliation (``analysis.reconcile``): the walk, Shapley,
sensitivity."""

from __future__ import annotations

from typing import Any

from evaluation_pipeline.report.terminal import table


def render_reconcile(document: dict) -> str:
    source, target = document["from"], document["to"]
    lineage = document["lineage"]
    ks = ", ".join(map(str, document["cutoffs"]))
    lines = [
        f"judgments {lineage['judgment_version']} (sha256 {lineage['judgments_sha256'][:12]}), "
        f"pool {lineage['candidate_pool']} (sha256 {lineage['pool_sha256'][:12]}), NDCG@{ks}",
    ]
    if target is not None:
        lines += _render_walk(document["walk"], source, target, document["weights"])
    if document.get("sensitivity") is not None:
        lines += _render_sensitivity(document["sensitivity"], source, document["weights"])
    return "\n".join(lines)


def _render_walk(walk: dict, source: dict, target: dict, weighted: bool) -> list[str]:
    lines = [f"from {source['name']} (spec {source['spec_id']}) to {target['name']} "
             f"(spec {target['spec_id']})"]
    if not walk["order"]:
        lines.append("the two specs agree on every field: nothing to walk")
    else:
        lines.append(f"order ({walk['order_source']}): {', '.join(walk['order'])}; "
                     "fields that agree are not steps")
    shapley = {(r["ranker"], r["cutoff"]): r for r in (walk["shapley"] or {}).get("results", [])}
    if walk["shapley"] is not None:
        n = walk["shapley"]["n_scorings"]
        lines.append(f"shapley: each field's mean contribution over all orders "
                     f"({n} spec{'s' if n != 1 else ''} scored)")
    for result in walk["results"]:
        key = (result["ranker"], result["cutoff"])
        lines += ["", f"{result['ranker']}, NDCG@{result['cutoff']}",
                  walk_table(result, shapley.get(key), weighted, walk["shapley"] is not None)]
    return lines


def walk_table(result: dict, shapley: dict | None, weighted: bool, with_shapley: bool) -> str:
    headers = ["step", "field", "before -> after", "macro", "change"]
    if weighted:
        headers += ["weighted", "w.change"]
    if with_shapley:
        headers += ["shapley"] + (["w.shapley"] if weighted else [])
    headers += ["changed", "status"]

    def numbers(row: dict, change: dict) -> list:
        cells = [_num(row["macro_ndcg"]), _signed(change["change"])]
        if weighted:
            cells += [_num(row["weighted_ndcg"]), _signed(change["weighted_change"])]
        return cells

    def attribution(field: str | None) -> list:
        if not with_shapley:
            return []
        cells = []
        for name in ("values", "weighted_values")[: 2 if weighted else 1]:
            values = (shapley or {}).get(name)
            cells.append(None if values is None else _signed(
                sum(values.values()) if field is None else values[field]))
        return cells

    start = result["start"]
    rows = [["from", "", "", _num(start["macro_ndcg"]), ""]]
    if weighted:
        rows[0] += [_num(start["weighted_ndcg"]), ""]
    rows[0] += [""] * (len(headers) - len(rows[0]))
    movers = [""]
    for i, step in enumerate(result["steps"], start=1):
        change = f"{shown_value(step['before'])} -> {shown_value(step['after'])}"
        rows.append([str(i), step["field"], change,
                     *numbers(step, step), *attribution(step["field"]), step["n_changed"],
                     step["n_status_changed"]])
        movers.append(", ".join(_mover(m) for m in step["movers"]))
    rows.append(["total", "", "", *numbers(result["end"], result["total"]), *attribution(None),
                 "", ""])
    return _with_text_column(table(headers, rows, left=3), "largest movers", [*movers, ""])


def _render_sensitivity(sensitivity: dict, source: dict, weighted: bool) -> list[str]:
    lines = ["", f"sensitivity from {source['name']} (spec {sensitivity['spec_id']}): each field "
             "set to each alternative, the others kept; * marks the spec's own value"]
    headers = ["field", "range"] + (["w.range"] if weighted else [])
    for result in sensitivity["results"]:
        rows, texts = [], []
        for field in result["fields"]:
            rows.append([field["field"], _num(field["range"]),
                         *([_num(field["weighted_range"])] if weighted else [])])
            texts.append(", ".join(
                f"{shown_value(a['value'])} {_num(a['macro_ndcg']) or 'n/a'}"
                + ("*" if a["value"] == field["current"] else "")
                for a in field["alternatives"]))
        lines += ["", f"{result['ranker']}, NDCG@{result['cutoff']}",
                  _with_text_column(table(headers, rows), "mean under each alternative", texts)]
    return lines


def _with_text_column(text: str, header: str, cells: list[str]) -> str:
    """A left-aligned last column of free text beside a table, ``cells`` one per data row."""
    lines = text.splitlines()
    width = max(map(len, lines))
    cells = [header, "-" * len(header), *cells]
    return "\n".join(f"{line:<{width}}  {cell}".rstrip() for line, cell in zip(lines, cells))


def _mover(mover: dict) -> str:
    before, after = mover["ndcg_before"], mover["ndcg_after"]
    if before is not None and after is not None:
        return f"{mover['query_id']} {after - before:+.4f}"
    return (f"{mover['query_id']} {_num(before) or mover['status_before'] or '(none)'}"
            f"->{_num(after) or mover['status_after'] or '(none)'}")


def shown_value(value: Any) -> str:
    if isinstance(value, dict):  # an explicit gain map
        return "{" + ", ".join(f"{grade}: {gain:g}" for grade, gain in value.items()) + "}"
    return str(value)


def _num(value: float | None) -> str | None:
    return None if value is None else f"{value:.4f}"


def _signed(value: float | None) -> str | None:
    return None if value is None else f"{value:+.4f}"
