"""The pipeline benchmark: --spec (the main job's NDCG_EVAL_SPEC, the CLI's --spec, the
result) and the CPU seconds it gives each step."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest

from tests.support.paths import REPO

_spec = importlib.util.spec_from_file_location(
    "bench_pipeline", REPO / "benchmarks" / "pipeline.py")
pipeline = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = pipeline  # its dataclass looks its module up
_spec.loader.exec_module(pipeline)


@pytest.fixture
def commands(monkeypatch, tmp_path):
    """Every command the benchmark runs, with its environment; no landing is generated."""
    ran = []
    monkeypatch.delenv("NDCG_EVAL_SPEC", raising=False)
    monkeypatch.setattr(pipeline, "landing_folder", lambda *args: pytest.fail("generated"))
    (tmp_path / "landing" / "pools" / pipeline.POOL).mkdir(parents=True)
    monkeypatch.setattr(pipeline, "measure", lambda command, env, log: ran.append(
        (command, env)) or pipeline.Measured(1.0, 1.0, 1, 0))
    monkeypatch.setattr(pipeline, "step_windows", lambda home: [])
    return ran


def test_the_spec_goes_to_the_main_job_and_the_cli_and_into_the_result(commands, tmp_path,
                                                                        capsys):
    spec = REPO / "benchmarks" / "specs" / "trec_dl.yaml"
    assert pipeline.main(["--queries", "1k", "--out", str(tmp_path), "--reuse",
                          "--spec", str(spec)]) == 0
    (job, job_env), (cli, cli_env) = commands
    assert job[-1] == "evaluation_pipeline.main_job"
    assert job_env["NDCG_EVAL_SPEC"] == str(spec)
    assert cli[cli.index("--spec") + 1] == str(spec)
    assert json.loads((tmp_path / "pipeline-benchmark.json").read_text())["spec"] == str(spec)
    assert f"spec {spec}" in capsys.readouterr().out


def test_without_a_spec_the_pipeline_keeps_its_own(commands, tmp_path, capsys):
    assert pipeline.main(["--queries", "1k", "--out", str(tmp_path), "--reuse"]) == 0
    (_, job_env), (cli, _) = commands
    assert "NDCG_EVAL_SPEC" not in job_env
    assert "--spec" not in cli
    assert json.loads((tmp_path / "pipeline-benchmark.json").read_text())["spec"] is None
    assert "spec the packaged one" in capsys.readouterr().out


def test_a_missing_spec_file_stops_before_anything_runs(commands, tmp_path):
    with pytest.raises(SystemExit):
        pipeline.main(["--queries", "1k", "--out", str(tmp_path), "--spec",
                       str(tmp_path / "absent.yaml")])
    assert commands == []


def test_the_two_specs_differ_in_their_measures_alone():
    from evaluation_pipeline.spec import load_spec

    trec_dl, ndcg10 = (load_spec(REPO / "benchmarks" / "specs" / f"{name}.yaml")
                       for name in ("trec_dl", "ndcg10"))
    assert [str(m) for m in trec_dl.measures] == ["nDCG@10", "RR(rel=2)@10", "AP(rel=2)@100",
                                                  "R@100"]
    assert [m.name for m in ndcg10.measure_list] == ["nDCG"] and ndcg10.cutoffs == (10,)
    assert trec_dl.replace(measures=None) == ndcg10


def test_a_steps_cpu_is_the_trees_between_the_samples_around_its_window():
    run = pipeline.Measured(4.0, 4.0, 3, 0, samples=[(0.0, 1, 0.0), (1.0, 3, 0.5),
                                                      (2.0, 2, 1.5), (3.0, 1, 3.0)])
    assert run.cpu_between(1.0, 2.0) == 1.0
    assert run.cpu_between(0.5, 2.5) == 3.0  # from the sample at 0.0 to the one at 3.0
    assert run.peak_between(0.5, 2.5) == 3
    assert pipeline.Measured(1.0, 1.0, 0, 0).cpu_between(0.0, 1.0) == 0.0
