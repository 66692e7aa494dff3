"""One night's drill-down in the terminal (``ndcg-eval history --night``): the verdicts against
the previous night, the queries that moved most and the change by slice, from the report.json
of the night's headline evaluation."""

from __future__ import annotations

from collections.abc import Sequence

from evaluation_pipeline.report.format import (
    adjusted_interval,
    adjusted_notes,
    floor_notes,
    holm_families,
    interval,
    number,
    p_shown,
    share,
)
from evaluation_pipeline.report.night_html import shown
from evaluation_pipeline.report.tables import aligned
from schemas.columns import label_of, measure_of


def render_night(report: dict, report_path: str, *, rankers: Sequence[str] | None = None,
                 cutoffs: Sequence[int] | None = None,
                 measures: Sequence[str] | None = None) -> str:
    lineage, nightly = report["lineage"], report.get("nightly")
    head = (f"night {lineage['candidate_pool']}: headline evaluation under judgments "
            f"{lineage['judgment_version']}, spec {report['spec_id']}")
    if not nightly or nightly["previous_pool"] is None:
        return "\n".join([head, "the first night: there is no previous night to compare with",
                          f"report: {report_path}"])

    def wanted(c: dict) -> bool:
        return ((not rankers or c["ranker"] in rankers)
                and (not cutoffs or c["cutoff"] in cutoffs)
                and (not measures or measure_of(c) in measures))

    against = "the pinned baseline" if nightly["baseline_pinned"] else "the previous night"
    lines = [head, f"against {nightly['previous_pool']} ({against}), "
             f"{nightly['method']}", ""]
    comparisons = [c for c in nightly["comparisons"] if wanted(c)]
    lines.append(aligned(
        ["ranker", "measure", "paired", "previous", "tonight", "vs prev", "interval",
         "adjusted interval", "detectable", "p (Holm)", "verdict", "recall prev",
         "recall now"],
        [[c["ranker"], label_of(c), c["n_paired"], number(c["mean_previous"]),
          number(c["mean_current"]), number(c["mean_difference"], signed=True),
          interval([c["difference_low"], c["difference_high"]], signed=True),
          adjusted_interval(c), number(c.get("detectable_effect"), 3, missing=""),
          p_shown(c, "p_value_holm"),
          c["verdict"].replace("_", " "), number(c["candidate_recall_previous"], 3),
          number(c["candidate_recall_current"], 3)] for c in comparisons]))
    lines += [f"p (Holm): {family}" for family in holm_families(comparisons)]
    lines += floor_notes(comparisons)
    lines += adjusted_notes(comparisons, nightly.get("power"))
    for c in shown(nightly | {"comparisons": comparisons}, report["headline_cutoff"]):
        title = f"{c['ranker']} {label_of(c)} ({c['verdict'].replace('_', ' ')}"
        lines += ["", f"{title}, {number(c['mean_difference'], signed=True)}): the queries "
                  "that moved most"]
        lines.append(aligned(
            ["query", "query text", "previous", "tonight", "difference"],
            [[m["query_id"], m.get("query_text") or "", number(m["ndcg_previous"]),
              number(m["ndcg_current"]), number(m["difference"], signed=True)]
             for m in c["movers"]], left=2))
        if c["slices"]:
            lines += ["", f"{title}): the change by slice"]
            lines.append(aligned(
                ["slice", "value", "paired", "mean diff", "interval", "share"],
                [[s["slice"], s["value"], s["n_paired"],
                  number(s["mean_difference"], signed=True),
                  interval([s["difference_low"], s["difference_high"]], signed=True),
                  share(s["share"])] for s in c["slices"]],
                left=2))
    lines += ["", f"report: {report_path}"]
    traced = [m["trace"] for c in comparisons for m in c["movers"] if m.get("trace")]
    if traced:
        lines.append(f"traces of both nights: {len(traced)} under "
                     f"{report_path.rsplit('/', 1)[0]}/traces/")
    return "\n".join(lines)
