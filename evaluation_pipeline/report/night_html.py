"""report.html's night over night, as the values its template (``templates/night.html``) shows:
the verdict box of the first screen, and the section on the previous night with the queries
that moved most and the change broken down by slice."""

from __future__ import annotations

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
from schemas.columns import label_of


def grading_range(low: float | None, high: float | None, n_bounded: int, signed: bool = False
                  ) -> dict | None:
    """A mean's range over every grading of the holes and the number of queries it runs over;
    None (a blank cell) when no query has a number under every grading."""
    if low is None:
        return None
    return {"text": interval([low, high], 4, signed), "n_bounded": n_bounded}


def shown(nightly: dict, top_cutoff: int) -> list[dict]:
    """The comparisons whose movers and slices the page lists: every one with a verdict, and
    each ranker's at the headline cutoff; the regressed first, then the improved."""
    listed = [c for c in nightly["comparisons"]
              if c["verdict"] != "no_change" or c["cutoff"] == top_cutoff]
    first = {"regressed": 0, "improved": 1}
    return sorted(listed, key=lambda c: first.get(c["verdict"], 2))


def verdict(report: dict) -> dict | None:
    """The first thing on the page: did tonight regress against the previous night? None on
    a report without a nightly section."""
    nightly = report.get("nightly")
    if not nightly:
        return None
    regressed = any(c["verdict"] == "regressed" for c in nightly["comparisons"])
    return {"previous_pool": nightly["previous_pool"],
            "judgment_version": nightly["judgment_version"],
            "regressed": nightly["previous_pool"] is not None and regressed,
            "sentences": [s for s in report["headline"] if " regressed against " in s]}


def night_section(report: dict) -> dict:
    """The comparison with the previous night (or the pinned baseline): verdicts, movers, the
    change by slice, and the attribution."""
    nightly = report["nightly"]
    listed = shown(nightly, report["headline_cutoff"])
    return {
        "against": "the pinned baseline pool" if nightly["baseline_pinned"]
        else "the previous night",
        "previous_pool": nightly["previous_pool"],
        "judgment_version": nightly["judgment_version"],
        "method": nightly["method"],
        "alpha": f"{nightly['alpha']:g}",
        "min_effect": f"{nightly['min_effect']:g}",
        "comparisons": [_comparison(c) for c in nightly["comparisons"]],
        "families": holm_families(nightly["comparisons"]),
        "notes": (floor_notes(nightly["comparisons"])
                  + adjusted_notes(nightly["comparisons"], nightly.get("power"))),
        "movers": movers(listed),
        "slices": [_slices(c) for c in listed if c.get("slices")],
        "attribution": _attribution(nightly["attribution"]),
    }


def _comparison(c: dict) -> dict:
    return {
        "ranker": c["ranker"], "cutoff": c["cutoff"], "measure": label_of(c),
        "n_paired": c["n_paired"],
        "mean_previous": number(c["mean_previous"]), "mean_current": number(c["mean_current"]),
        "mean_difference": number(c["mean_difference"], signed=True),
        "interval": interval([c["difference_low"], c["difference_high"]], 4, signed=True),
        "adjusted_interval": adjusted_interval(c, 4),
        "detectable": number(c.get("detectable_effect"), 4, missing=""),
        "bounds": grading_range(c["difference_min"], c["difference_max"], c["n_bounded"],
                                True),
        "p_value": p_shown(c),
        "p_value_holm": p_shown(c, "p_value_holm"),
        "verdict": c["verdict"], "verdict_words": c["verdict"].replace("_", " ") + (
            # A measure outside the spec's headline is compared and recorded, never alerted.
            " (no alert)" if c["verdict"] in ("regressed", "improved")
            and not c.get("headline", True)
            else ""),
        "candidate_recall_previous": number(c["candidate_recall_previous"], 3),
        "candidate_recall_current": number(c["candidate_recall_current"], 3),
    }


def movers(listed: list[dict]) -> list[dict]:
    """Per listed comparison with movers, the queries that moved most and their traces."""
    return [{
        "ranker": c["ranker"], "cutoff": c["cutoff"], "measure": label_of(c),
        "mean_difference": number(c["mean_difference"], signed=True),
        "movers": [{
            "query_id": m["query_id"], "query_text": m.get("query_text") or "",
            "ndcg_previous": number(m["ndcg_previous"]),
            "ndcg_current": number(m["ndcg_current"]),
            "difference": number(m["difference"], signed=True),
            "trace": m.get("trace") or None,
        } for m in c["movers"]],
    } for c in listed if c.get("movers")]


def _slices(c: dict) -> dict:
    return {"ranker": c["ranker"], "cutoff": c["cutoff"], "measure": label_of(c), "slices": [{
        "slice": s["slice"], "value": s["value"], "n_paired": s["n_paired"],
        "mean_difference": number(s["mean_difference"], signed=True),
        "interval": interval([s["difference_low"], s["difference_high"]], 4, signed=True),
        "share": share(s["share"]),
    } for s in c["slices"]]}


def _attribution(rows: list[dict] | None) -> dict | None:
    if not rows:
        return None
    return {"previous_judgment_version": rows[0]["previous_judgment_version"], "rows": [{
        "ranker": a["ranker"], "cutoff": a["cutoff"],
        "total_change": number(a["total_change"], signed=True),
        "from_judgments": number(a["from_judgments"], signed=True),
        "from_pool": number(a["from_pool"], signed=True),
    } for a in rows]}
