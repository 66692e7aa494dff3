"""report.html: one self-contained page (inline CSS and SVG, no scripts, nothing fetched), the
template ``templates/report.html`` filled with report.json's values as the page prints them."""

from __future__ import annotations

from evaluation_pipeline.report import night_html, svg
from evaluation_pipeline.report.format import (
    TIER_HEADERS,
    adjusted_interval,
    adjusted_notes,
    floor_notes,
    holm_families,
    interval,
    number,
    p_shown,
    tier_cells,
    tiers_note,
    which_measure,
)
from evaluation_pipeline.report.headline import has_other_measures
from evaluation_pipeline.report.templating import Markup, render
from evaluation_pipeline.spec import FIELD_DOCS
from schemas.columns import measure_label, measure_of, ndcg_name

STATUS_LABELS = (
    ("scored", "scored"), ("no_positive", "no positive"), ("incomplete", "incomplete"),
    ("not_judged", "not judged"), ("missing_from_run", "missing from run"),
)


def render_html(report: dict, differences: dict) -> str:
    """The page, its first screen first: the verdict against the previous night (pipeline
    reports), tonight's numbers at the headline cutoff and the conventions in one line; then
    the night over night, the tables per cutoff, the results in words, the charts, the ranker
    comparison, the conventions in full and the lineage."""
    lineage = report["lineage"]
    comparison = report.get("comparison")
    return render(
        "report.html",
        title=f"NDCG report: {lineage['judgment_version']} x {lineage['candidate_pool']}",
        verdict=night_html.verdict(report),
        headline_cutoff=report["headline_cutoff"],
        summary=[_result(r) for r in report["results"] if r["cutoff"] == report["headline_cutoff"]],
        by_measure=_by_measure(report) if has_other_measures(report) else None,
        tiers=_tiers(report),
        spec_id=report["spec_id"],
        brief=brief(report["spec"]),
        nightly=night_html.night_section(report) if report.get("nightly") else None,
        status_labels=[label for _, label in STATUS_LABELS],
        cutoff_tables=[{"cutoff": k, "rows": [_result(r) for r in report["results"]
                                              if r["cutoff"] == k]}
                       for k in report["spec"]["cutoffs"]],
        sentences=[in_words(s, report) for s in report["headline"]],
        note=(comparison or {}).get("note") or None,
        charts=_charts(report, differences),
        comparison=_comparison(report, comparison) if comparison else None,
        agreement=_agreement(report["agreement"]) if report.get("agreement") else None,
        conventions=_conventions(report),
        lineage=[(key, str(value)) for key, value in lineage.items()],
    )


def _tiers(report: dict) -> dict | None:
    """The tiers table of the first screen (report.json's ``tiers``), or None."""
    if not report.get("tiers"):
        return None
    return {"headers": TIER_HEADERS, "rows": [tier_cells(t) for t in report["tiers"]],
            "note": tiers_note(report["statistics"].get("alpha"))}


def _by_measure(report: dict) -> dict:
    """Rankers by measures (report.json's ``measures``, every query): the page's first table
    when the spec scores more than its nDCG@K."""
    names = report["measures"]["names"]
    found = {(r["ranker"], r["measure"]): r for r in report["measures"]["results"]
             if r["slice_column"] == "all"}
    rankers = list(dict.fromkeys(ranker for ranker, _ in found))
    return {"names": names, "rows": [{
        "ranker": ranker,
        "cells": [{"measure": name, "value": number(cell and cell["macro_value"]),
                   "interval": interval(cell and cell["macro_value_interval"], 3)}
                  for name in names for cell in [found.get((ranker, name))]],
    } for ranker in rankers]}


def _result(r: dict) -> dict:
    """A ranker's row of report.json's ``results``, as the tables print it."""
    low, high = r["macro_ndcg_bounds"]
    return {
        "ranker": r["ranker"],
        "macro_ndcg": number(r["macro_ndcg"]),
        "macro_ndcg_interval": interval(r["macro_ndcg_interval"], 4),
        "bounds": night_html.grading_range(low, high, r["n_bounded"]),
        "weighted_ndcg": number(r["weighted_ndcg"]),
        "weighted_ndcg_interval": interval(r["weighted_ndcg_interval"], 4),
        "n_with_number": r["n_with_number"],
        "n_queries": r["n_queries"],
        "status_counts": [(s, r["status_counts"][s]) for s, _ in STATUS_LABELS],
        "mean_judged_at_k": number(r["mean_judged_at_k"], 3),
        "mean_candidate_recall": number(r["mean_candidate_recall"], 3),
    }


def brief(spec: dict) -> str:
    """The conventions as one short line of the spec's fields and values (the cutoffs are the
    tables'); the page spells them out once, under "Declared conventions"."""
    return " · ".join(
        f"{name} {', '.join(map(str, value)) if isinstance(value, list) else value}"
        for name, value in spec.items() if name != "cutoffs")


def in_words(sentence: str, report: dict) -> str:
    """A result sentence without the conventions it repeats: report.json's sentences keep them
    (contract section 4), and the page writes them once, under "Declared conventions"."""
    return sentence.replace(f" ({report['conventions']})", "")


def _conventions(report: dict) -> dict:
    stats = report["statistics"]
    return {
        "sentence": report["conventions"],
        "fields": [{"name": name, "value": str(value), "doc": FIELD_DOCS.get(name, "")}
                   for name, value in report["spec"].items()],
        "weights": report["weights"]["description"],
        "ci_level": f"{stats['ci_level']:.0%}",
        "interval_method": stats["interval_method"],
        "n_bootstrap": stats["n_bootstrap"],
        "seed": stats["seed"],
    }


def _charts(report: dict, differences: dict) -> dict:
    """The charts, drawn by ``report.svg`` (which escapes its labels) and placed as they are."""
    cutoff = report["headline_cutoff"]
    rows = [(f"{r['ranker']} @{r['cutoff']}", r["macro_ndcg"], *r["macro_ndcg_interval"])
            for r in report["results"]]
    slices = []
    for column in report["slices"]:
        rows_of = [r for r in report["slice_results"]
                   if r["slice_column"] == column and r["cutoff"] == cutoff]
        values = sorted({r["slice_value"] for r in rows_of})
        groups = [(value, [(r["ranker"], r["macro_ndcg"], r["n_with_number"])
                           for r in rows_of if r["slice_value"] == value]) for value in values]
        slices.append({"column": column, "svg": Markup(
            svg.grouped_bars(groups, report["rankers"], f"NDCG@{cutoff} by {column}"))})
    return {
        "ci_level": f"{report['statistics']['ci_level']:.0%}",
        "ndcg": Markup(svg.interval_chart(rows, "macro NDCG per ranker and cutoff")),
        "slices": slices,
        "differences": [
            {"first": first, "second": second, "n": histogram.n, "svg": Markup(svg.histogram(
                *histogram.chart_bins(), f"{second} minus {first} at {cutoff}"))}
            for (first, second, measure), histogram in differences.items()
            if measure == ndcg_name(cutoff)],
    }


def _comparison(report: dict, comparison: dict) -> dict:
    traces = {(t["ranker"], t["query_id"], measure_of(t)): t["path"] for t in report["traces"]}

    def links(pair: dict, query_id: str) -> list[dict]:
        """Each ranker's trace of the query in the pair's measure, where one was written."""
        found = [(ranker, traces.get((ranker, query_id, measure_of(pair))))
                 for ranker in (pair["first"], pair["second"])]
        return [{"ranker": ranker, "path": path} for ranker, path in found if path]

    return {
        "kind": comparison["kind"],
        "pairs_compared": comparison["pairs_compared"],
        "multiple_comparisons": comparison["multiple_comparisons"],
        "families": holm_families(comparison["pairs"]),
        "notes": (floor_notes(comparison["pairs"])
                  + adjusted_notes(comparison["pairs"], report["statistics"].get("power"))),
        "test_method": report["statistics"]["test_method"],
        "pairs": [{
            "first": p["first"], "second": p["second"],
            "measure": measure_label(p["measure"], p["cutoff"]),
            "n_paired": p["n_paired"],
            "mean_difference": number(p["mean_difference"], signed=True),
            "interval": interval([p["difference_low"], p["difference_high"]], 4, signed=True),
            "adjusted_interval": adjusted_interval(p, 4),
            "detectable": number(p.get("detectable_effect"), 4, missing=""),
            "bounds": night_html.grading_range(p["difference_min"], p["difference_max"],
                                               p["n_bounded"], True),
            "p_value": p_shown(p), "p_value_holm": p_shown(p, "p_value_holm"),
            "wins": p["wins"], "losses": p["losses"], "ties": p["ties"],
        } for p in comparison["pairs"]],
        "regressions": [{
            "first": p["first"], "second": p["second"],
            "measure": measure_label(p["measure"], p["cutoff"]),
            "queries": [{
                "query_id": r["query_id"],
                "ndcg_first": number(r["ndcg_first"]), "ndcg_second": number(r["ndcg_second"]),
                "difference": number(r["difference"], signed=True),
                "traces": links(p, r["query_id"]),
            } for r in p["regressions"]],
        } for p in comparison["pairs"] if p["regressions"]],
    }


def _agreement(agreement: dict) -> dict:
    """The raters' agreement (report.json's ``agreement``, as ``ndcg-eval agreement`` prints
    it): the pairs, the overall statistics, NDCG under each rater and Kendall's tau."""
    ndcg = agreement.get("ndcg") or []
    return {
        "n_raters": len(agreement["raters"]),
        "rule": str(agreement["rule"]),
        "pairs": [{"rater_a": p["rater_a"], "rater_b": p["rater_b"], "overlap": p["overlap"],
                   "cohen_kappa": number(p["cohen_kappa"]),
                   "cohen_kappa_quadratic": number(p["cohen_kappa_quadratic"]),
                   "mean_difference": number(p["mean_difference"])}
                  for p in agreement["pairs"]],
        "krippendorff_alpha_ordinal": number(agreement["krippendorff_alpha_ordinal"]),
        "krippendorff_alpha_interval": number(agreement["krippendorff_alpha_interval"]),
        "fleiss_kappa": number(agreement["fleiss_kappa"]),
        "fleiss_documents": agreement["fleiss_documents"],
        "ndcg": [{"rater": n["rater"], "ranker": n["ranker"], "cutoff": which_measure(n),
                  "mean": number(n["mean"])} for n in ndcg],
        # Kendall's tau compares the rankers' orders under each rater's NDCG: none without it.
        "kendall_tau": [{"rater_a": t["rater_a"], "rater_b": t["rater_b"],
                         "cutoff": which_measure(t), "tau": number(t["tau"])}
                        for t in agreement["kendall_tau"]] if ndcg else [],
    }
