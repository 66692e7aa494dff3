"""report.json and summary.json: their models, the published JSON Schemas generated from them,
and every file the example evaluations and the example week write, held to those schemas."""

from __future__ import annotations

import json

import jsonschema
import pytest
from pydantic import BaseModel, ValidationError

from evaluation_pipeline import evaluation
from evaluation_pipeline.cli.main import main
from evaluation_pipeline.evaluation import Lineage
from evaluation_pipeline.io.readers import read_queries
from evaluation_pipeline.report import ReportConfig, model, schema, write_report
from evaluation_pipeline.report.build import build_report
from tests.support.nightly_week import SPEC, run_week
from tests.support.paths import EXAMPLES, P28, V1, V2

FAST = ["--bootstrap", "200"]
RATERS = EXAMPLES / "raters" / "maint-raters.csv"


def validator(name: str) -> jsonschema.Draft202012Validator:
    published = json.loads((schema.SCHEMA_FOLDER / name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(published)
    return jsonschema.Draft202012Validator(published)


def assert_valid(path, name: str) -> dict:
    document = json.loads(path.read_text(encoding="utf-8"))
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in validator(name).iter_errors(document)]
    assert not errors, f"{path} against {name}: {errors[:5]}"
    return document


def test_the_published_schemas_and_the_format_tables_are_the_models():
    stale = [str(path) for path, text in schema.generated().items()
             if not path.exists() or path.read_text(encoding="utf-8") != text]
    assert not stale, f"{stale} differ from what the models generate: run `{schema.COMMAND}`"


def test_every_field_says_what_it_means():
    models = {name: of for module in (evaluation, model) for name, of in vars(module).items()
              if isinstance(of, type) and issubclass(of, BaseModel) and of is not BaseModel}
    silent = [f"{name}.{field}" for name, of in models.items()
              for field, info in of.model_fields.items() if not info.description]
    assert not silent


def test_every_model_has_a_table_in_the_format():
    text = schema.FORMAT_DOC.read_text(encoding="utf-8")
    tabled = {match.group(2) for match in schema.TABLE.finditer(text)}
    # Means and AtFamilyLevel only ever appear as the fields of the entries built on them.
    declared = {name for module in (evaluation, model) for name, of in vars(module).items()
                if isinstance(of, type) and issubclass(of, evaluation.Record)
                and of not in (evaluation.Record, evaluation.Means, model.AtFamilyLevel)}
    assert declared - tabled == set()


def test_the_example_evaluations_files_hold_to_the_schemas(tmp_path):
    queries = str(EXAMPLES / "queries.csv")
    scored = tmp_path / "v2"
    args = ["score", "--judgments", str(V2), "--run", str(P28), "--out", str(scored)]
    assert main([*args, "--queries", queries, "--report", "--baseline", "bm25-v3", *FAST]) == 0
    report = assert_valid(scored / "report.json", "report.schema.json")
    assert report["comparison"]["pairs"] and report["slice_results"] and report["traces"]
    summary = assert_valid(scored / "summary.json", "summary.schema.json")
    assert "macro_ndcg_interval" not in summary["results"][0]
    # The results entry is one declaration: summary.json's is report.json's without the
    # resampled intervals and bounds, each number the same.
    shared = set(summary["results"][0]) - {"sentence"}
    assert [{k: r[k] for k in shared} for r in report["results"]] == [
        {k: r[k] for k in shared} for r in summary["results"]]

    plain = tmp_path / "v1"
    assert main(["score", "--judgments", str(V1), "--run", str(P28), "--out", str(plain)]) == 0
    assert main(["report", str(plain), "--out", str(tmp_path / "v1-report"), *FAST]) == 0
    assert_valid(plain / "summary.json", "summary.schema.json")
    assert_valid(tmp_path / "v1-report" / "report.json", "report.schema.json")

    rated = tmp_path / "raters"
    spec = tmp_path / "raters.yaml"
    spec.write_text("raters: majority:higher\n")
    assert main(["score", "--judgments", str(RATERS), "--run", str(P28), "--out", str(rated),
                 "--spec", str(spec), "--report", *FAST]) == 0
    assert "agreement" in assert_valid(rated / "report.json", "report.schema.json")


@pytest.fixture(scope="module")
def week(tmp_path_factory):
    root = tmp_path_factory.mktemp("week")
    return root, run_week(root)


def test_the_pipelines_nightly_reports_hold_to_the_schema(week, tmp_path):
    root, outcome = week
    gen = outcome["gen"]
    queries = read_queries(root / gen.NIGHTLY_DIR / "queries.csv")
    regressed = [key for key, section in outcome["sections"].items()
                 if any(c["verdict"] == "regressed" for c in section["comparisons"])]
    attributed = [key for key, section in outcome["sections"].items() if section["attribution"]]
    first = [key for key, section in outcome["sections"].items() if not section["comparisons"]]
    assert regressed and attributed and first
    for pool, version in {regressed[0], attributed[0], first[0]}:
        rows = outcome["per_query"][(pool, version)]
        out = tmp_path / f"{pool}-{version}"
        write_report(out, rows, SPEC, Lineage.from_rows(rows), queries,
                     ReportConfig(n_bootstrap=200), nightly=outcome["sections"][(pool, version)],
                     scoring={"path": "full", "reason": "no earlier version"})
        report = assert_valid(out / "report.json", "report.schema.json")
        assert report["nightly"]["judgment_version"] == version


def test_a_field_the_models_lack_is_refused_before_anything_is_written(week):
    _, outcome = week
    (pool, version), section = next((key, s) for key, s in outcome["sections"].items()
                                    if s["comparisons"])
    rows = outcome["per_query"][(pool, version)]
    lineage = Lineage.from_rows(rows)
    report, _, _ = build_report(rows, SPEC, lineage, config=ReportConfig(n_bootstrap=200),
                                nightly=section)
    assert model.Report.checked(report) == report
    renamed = section | {"comparisons": [
        {("mean_diff" if k == "mean_difference" else k): v for k, v in c.items()}
        for c in section["comparisons"]]}
    with pytest.raises(ValidationError, match=r"nightly\.comparisons\.0\.mean_diff\n"
                                              r"  Extra inputs are not permitted"):
        build_report(rows, SPEC, lineage, config=ReportConfig(n_bootstrap=200), nightly=renamed)
    with pytest.raises(ValidationError, match="rank\n  Extra inputs are not permitted"):
        model.Report.checked(report | {"rank": 1})
    with pytest.raises(ValidationError, match="results.0.cutoff\n  Input should be a valid int"):
        model.Report.checked(report | {"results": [report["results"][0] | {"cutoff": "ten"}]})
