"""--measure on compare and report: a measure the results lack is refused before anything is
written, and compare's numbers on one measure are report.json's for that measure."""

from __future__ import annotations

import json

import pytest

from evaluation_pipeline.cli.main import main
from tests.support.paths import REPO

LANDING = REPO / "examples" / "data" / "landing"
MEASURES = ["nDCG@10", "RR(rel=2)@10", "AP(rel=2)"]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("measures") / "trec-dl"
    args = ["score", "--judgments", str(LANDING / "judgments" / "maint-v2.csv"), "--run",
            str(LANDING / "pools" / "pool-2026-11-28"), "--profile", "trec_eval",
            "--out", str(out)]
    for measure in MEASURES:
        args += ["--measure", measure]
    assert main(args) == 0
    return out


def test_a_measure_the_results_lack_is_refused_before_anything_is_written(results, tmp_path,
                                                                          capsys):
    capsys.readouterr()
    assert main(["compare", str(results), "--measure", "P@10"]) == 2
    err = capsys.readouterr().err
    assert "--measure P@10: not among the measures of" in err
    assert "AP(rel=2), RR(rel=2)@10, nDCG@10" in err
    out = tmp_path / "report"
    assert main(["report", str(results), "--measure", "P@10", "--out", str(out)]) == 2
    assert "--measure P@10" in capsys.readouterr().err and not out.exists()
    # A name that does not parse is argparse's refusal, with the nearest name.
    with pytest.raises(SystemExit) as refused:
        main(["compare", str(results), "--measure", "RR(rell=2)@10"])
    assert refused.value.code == 2


def test_compare_on_one_measure_gives_report_jsons_numbers(results, tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["report", str(results), "--out", str(out), "--bootstrap", "200"]) == 0
    pairs = [p for p in json.loads((out / "report.json").read_text())["comparison"]["pairs"]
             if p["measure"] == "RR(rel=2)@10"]
    capsys.readouterr()
    assert main(["compare", str(results), "--measure", "RR(rel=2)@10", "--bootstrap",
                 "200"]) == 0
    printed = capsys.readouterr().out
    assert len(pairs) == 3
    for pair in pairs:
        line = next(line for line in printed.splitlines()
                    if line.startswith(f"{pair['second']} vs {pair['first']} "))
        assert f"{pair['mean_difference']:+.4f}" in line
        assert f"{pair['p_value']:.4f}  {pair['p_value_holm']:.4f}" in line
