"""A report folder whose report.json was written under ``format_version`` 1 (the nightly
section's former field names) is read back by ``ndcg-eval report`` and ``ndcg-eval compare`` as
before: they read its stamp and its spec, which did not change."""

from __future__ import annotations

import json

from evaluation_pipeline.cli.main import main
from tests.support.paths import P28, V1, V2

FAST = ["--bootstrap", "200"]
# A night-over-night comparison as format_version 1 wrote it.
FORMER_NIGHTLY = {
    "previous_pool": "pool-2026-11-27", "baseline_pinned": False, "judgment_version": "maint-v2",
    "alpha": 0.05, "min_effect": 0.01, "method": "paired", "attribution": None,
    "comparisons": [{"ranker": "bm25-v3", "cutoff": 10, "paired": 40, "mean_previous": 0.8,
                     "mean_current": 0.79, "mean_diff": -0.01, "ci_low": -0.03, "ci_high": 0.01,
                     "p": 0.4, "n_bounded": 30, "diff_min": -0.05, "diff_max": 0.02,
                     "holds_for_every_grading": False, "candidate_recall_previous": 0.9,
                     "candidate_recall_current": 0.9, "movers": [], "slices": [],
                     "p_adjusted": 0.8, "verdict": "no_change"}]}


def test_report_and_compare_read_a_folder_whose_report_json_is_format_1(tmp_path, capsys):
    folder = tmp_path / "v2"
    assert main(["score", "--judgments", str(V2), "--run", str(P28), "--out", str(folder),
                 "--report", *FAST]) == 0
    report = json.loads((folder / "report.json").read_text())
    report["format_version"] = 1
    report["nightly"] = FORMER_NIGHTLY
    (folder / "report.json").write_text(json.dumps(report, indent=2))
    (folder / "summary.json").unlink()  # report.json alone is what stands beside the rows
    capsys.readouterr()

    assert main(["report", str(folder), "--out", str(tmp_path / "again"), *FAST]) == 0
    again = json.loads((tmp_path / "again" / "report.json").read_text())
    assert again["format_version"] == 3
    assert again["results"] == report["results"]

    other = tmp_path / "v1"
    assert main(["score", "--judgments", str(V1), "--run", str(P28), "--out", str(other)]) == 0
    capsys.readouterr()
    assert main(["compare", str(other), str(folder), "--judgments", str(V1), str(V2)]) == 0
    assert "judgments maint-v1 -> maint-v2 over pool pool-2026-11-28" in capsys.readouterr().out
