"""A spec that lists measures beside nDCG@K, through the pipeline: two nights scored with every
measure, the rows equal to the scoring on its own, the report, history and nightly watch on
every measure (the spec's nDCG@K the headline), and the old files still read."""

import json
import re

import polars as pl
import pytest

from evaluation_pipeline.cli.main import main
from evaluation_pipeline.engines import score_files
from evaluation_pipeline.nightly.alerts import regression_record
from evaluation_pipeline.report.format import adjusted_interval, number
from evaluation_pipeline.spec import load_spec
from schemas.columns import LINEAGE_COLUMNS, PER_QUERY_KEY, label_of
from tests.support.temporary_pipeline import (
    LANDING,
    POOL_1,
    POOL_2,
    Pipeline,
    make_pipeline,
    temporary_instance,
)

VERSION = "maint-v2"
MEASURES = ["nDCG@10", "nDCG@5", "RR(rel=2)@10", "AP(rel=2)@100", "R@100", "P(rel=2)@10"]


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    root = tmp_path_factory.mktemp("measures")
    spec = root / "spec.yaml"
    spec.write_text("profile: trec_eval\nmeasures: [" + ", ".join(
        f"'{m}'" for m in MEASURES) + "]\n")
    with temporary_instance(root / "dagster_home") as instance:
        env = make_pipeline(root, instance, spec_path=str(spec))
        env.land_version(VERSION)
        env.land_pool(POOL_1)
        env.first_outcomes = env.runner.run_until_quiet()
        env.land_pool(POOL_2)
        env.first_outcomes += env.runner.run_until_quiet()
        yield env


def test_each_night_holds_every_measure_as_the_scoring_alone(pipeline: Pipeline, tmp_path):
    assert all(o.success for o in pipeline.first_outcomes), pipeline.first_outcomes
    spec = load_spec(pipeline.root / "spec.yaml")
    assert spec.cutoffs == (5, 10) and pipeline.spec_id() == spec.spec_id
    for pool in (POOL_1, POOL_2):
        stored = pl.read_parquet(pipeline.report(pool, VERSION).parent / "per_query.parquet")
        assert set(stored["measure"]) == set(MEASURES)
        score_files(LANDING / "judgments" / f"{VERSION}.csv", LANDING / "pools" / pool, spec,
                    tmp_path / f"{pool}.parquet", engine="local", progress=False)
        alone = pl.read_parquet(tmp_path / f"{pool}.parquet")
        assert stored.drop(LINEAGE_COLUMNS).sort(PER_QUERY_KEY).equals(
            alone.drop(LINEAGE_COLUMNS).sort(PER_QUERY_KEY))


def test_the_report_and_the_watch_carry_every_measure(pipeline: Pipeline):
    report = json.loads(pipeline.report(POOL_2, VERSION).read_text())
    assert {(r["ranker"], r["cutoff"]) for r in report["results"]} == {
        (ranker, k) for ranker in ("bm25-v3", "dense-v2", "hybrid-v1") for k in (5, 10)}
    per_query = pl.read_parquet(pipeline.report(POOL_2, VERSION).parent / "per_query.parquet")
    own = per_query.filter(pl.col("measure") == "nDCG@10")
    for result in report["results"]:
        if result["cutoff"] == 10:
            mean = own.filter(pl.col("ranker") == result["ranker"])["ndcg"].mean()
            assert result["macro_ndcg"] == pytest.approx(mean, abs=1e-12)
    assert report["nightly"]["previous_pool"] == POOL_1
    # Every measure is reported and compared night over night; the spec's nDCG@K, the default
    # headline, alone alerts.
    assert sorted(report["measures"]["names"]) == sorted(MEASURES)
    compared = sorted((c["measure"], c["headline"]) for c in report["nightly"]["comparisons"])
    assert compared == sorted((m, m.startswith("nDCG@")) for m in MEASURES for _ in range(3))
    history = pl.read_parquet(pipeline.storage / "history" / "history.parquet")
    assert set(history["measure"]) == set(MEASURES)
    assert set(history.filter(pl.col("headline_measure"))["measure"]) == {"nDCG@5", "nDCG@10"}


def test_compare_and_report_read_files_written_before_the_measures(tmp_path, capsys):
    # Files of the former shape (no measure, value, value_min or value_max) read as they did:
    # the same report and comparison as the files of today.
    from evaluation_pipeline.spec import profile

    folders = {}
    for pool in (POOL_1, POOL_2):
        for shape in ("now", "before"):
            folder = tmp_path / shape / pool
            folder.mkdir(parents=True)
            score_files(LANDING / "judgments" / f"{VERSION}.csv", LANDING / "pools" / pool,
                        profile("trec_eval"), folder / "per_query.parquet", engine="local",
                        progress=False)
            if shape == "before":
                pl.read_parquet(folder / "per_query.parquet").drop(
                    "measure", "value", "value_min", "value_max").write_parquet(
                    folder / "per_query.parquet")
            folders[shape, pool] = folder / "per_query.parquet"
    shown = {}
    for shape in ("now", "before"):
        assert main(["compare", str(folders[shape, POOL_1]), str(folders[shape, POOL_2])]) == 0
        shown[shape] = capsys.readouterr().out
        assert main(["report", str(folders[shape, POOL_2]), "--out",
                     str(tmp_path / f"report-{shape}")]) == 0
        capsys.readouterr()
    assert shown["now"] == shown["before"] and "NDCG" in shown["now"]
    now, before = (json.loads((tmp_path / f"report-{shape}" / "report.json").read_text())
                   for shape in ("now", "before"))
    assert now["results"] == before["results"] and now["comparison"] == before["comparison"]


def printed_rows(out: str, first_header: str) -> list[dict]:
    """The rows of the aligned table in ``out`` whose header starts with ``first_header``, by
    header, cut at the spans of its rule of dashes."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first_header))
    spans = [m.span() for m in re.finditer(r"-+", lines[start + 1])]
    headers = [lines[start][a:b].strip() for a, b in spans]
    rows = []
    for line in lines[start + 2:]:
        if not line.strip() or line.startswith(("p (Holm): ", "p holm: ")):
            break  # the table's end, or the Holm families named below it
        # The last column runs to the end of the line.
        cells = [line[a:b if k < len(spans) - 1 else None].strip()
                 for k, (a, b) in enumerate(spans)]
        rows.append(dict(zip(headers, cells, strict=True)))
    return rows


AT_LEVEL = ("adjusted_level", "difference_low_adjusted", "difference_high_adjusted",
            "detectable_effect")


def test_one_pair_of_nights_has_one_adjusted_p_and_one_verdict_everywhere(
        pipeline: Pipeline, capsys):
    # The same two evaluations (maint-v2 on the two nights) as report.json's nightly section,
    # the history, `history --night`, `compare A B` (narrowed to one measure or not) and the
    # alert's record of a regression show them: one Holm family, one adjusted p, one verdict.
    report = json.loads(pipeline.report(POOL_2, VERSION).read_text())
    comparisons = {(c["ranker"], label_of(c)): c for c in report["nightly"]["comparisons"]}
    assert {c["holm_family"] for c in comparisons.values() if c["headline"]} == {
        "Holm over 6 tests: 3 rankers x 2 measures (nDCG@5, nDCG@10)"}
    assert comparisons["dense-v2", "RR(rel=2)@10"]["holm_family"] == (
        "Holm over 3 tests: 3 rankers x 1 measure (RR(rel=2)@10)")

    history = pl.read_parquet(pipeline.storage / "history" / "history.parquet").filter(
        (pl.col("candidate_pool") == POOL_2) & pl.col("slice").is_null())
    for row in history.iter_rows(named=True):
        c = comparisons[row["ranker"], label_of(row)]
        assert (row["p_value_holm"], row["holm_family"], row["verdict"]) == (
            c["p_value_holm"], c["holm_family"], c["verdict"])
        for field in AT_LEVEL:
            assert row[field] == c[field] == regression_record(c)[field], field
        assert regression_record(c)["p_value_holm"] == c["p_value_holm"]
        assert regression_record(c)["holm_family"] == c["holm_family"]
        # The interval beside the verdict agrees with it.
        excludes = c["difference_low_adjusted"] is not None and (
            c["difference_low_adjusted"] > 0 or c["difference_high_adjusted"] < 0)
        assert excludes == (c["p_value_holm"] < report["nightly"]["alpha"])

    assert main(["history", str(pipeline.storage), "--night", POOL_2,
                 "--measure", "RR(rel=2)@10", "--measure", "nDCG@10"]) == 0
    night = capsys.readouterr().out
    shown = printed_rows(night, "ranker")
    assert len(shown) == 6
    for row in shown:
        c = comparisons[row["ranker"], row["measure"]]
        assert (row["p (Holm)"], row["verdict"]) == (number(c["p_value_holm"]),
                                                    c["verdict"].replace("_", " "))
        assert row["adjusted interval"] == adjusted_interval(c)
    assert "p (Holm): Holm over 6 tests: 3 rankers x 2 measures (nDCG@5, nDCG@10)" in night

    folders = [str(pipeline.report(pool, VERSION).parent) for pool in (POOL_1, POOL_2)]
    for narrowed, n_shown in (([], len(comparisons)), (["--measure", "nDCG@10"], 3),
                              (["--cutoff", "5"], 3)):
        assert main(["compare", *folders, *narrowed]) == 0
        out = capsys.readouterr().out
        rows = printed_rows(out, "pair")
        assert len(rows) == n_shown
        for row in rows:
            ranker = row["pair"].split(":")[0]
            c = comparisons[ranker, row.get("measure") or f"NDCG@{row['K']}"]
            assert row["p holm"] == number(c["p_value_holm"]), (row, c)
            assert row["adjusted interval"] == adjusted_interval(c), (row, c)
            assert row["verdict"] == c["verdict"].replace("_", " "), (row, c)
        assert "p holm: Holm over 6 tests: 3 rankers x 2 measures (nDCG@5, nDCG@10)" in out
