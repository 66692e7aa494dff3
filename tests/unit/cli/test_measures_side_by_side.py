"""`ndcg-eval score`'s rankers-by-measures table: each cell the plain mean of the measure's
numbers for the ranker, the columns in the spec's order, and the populations said."""

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation_pipeline.cli.main import main
from evaluation_pipeline.cli.score_command import measures_side_by_side
from tests.support.paths import EXAMPLES

NAMES = ["nDCG@10", "RR(rel=2)@10", "AP(rel=2)@100", "R@100"]


def _cells(table: str) -> dict[tuple[str, str], str]:
    header, _rule, *rows = table.splitlines()[:-1]
    names = header.split()[1:]
    return {(row.split()[0], name): cell
            for row in rows for name, cell in zip(names, row.split()[1:])}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b-2", "c"]), st.sampled_from(NAMES),
                          st.none() | st.floats(0, 1)), min_size=1, max_size=40))
def test_each_cell_is_the_plain_mean_over_the_numbers(rows):
    frame = pl.DataFrame(rows, schema=["ranker", "measure", "value"], orient="row")
    table = measures_side_by_side(frame.lazy(), NAMES)
    assert table.splitlines()[0].split()[1:] == NAMES  # the spec's order, not sorted
    cells = _cells(table)
    for ranker in {r for r, _, _ in rows}:
        for name in NAMES:
            values = [v for r, m, v in rows if (r, m) == (ranker, name) and v is not None]
            expected = f"{sum(values) / len(values):.4f}" if values else "n/a"
            assert cells[ranker, name] == expected


def test_populations_are_one_sentence_when_equal_and_per_measure_when_not():
    same = pl.DataFrame({"ranker": ["a", "a", "b", "b"], "measure": ["R@100", "nDCG@10"] * 2,
                         "value": [0.5, None, 0.25, None]})
    assert measures_side_by_side(same.lazy(), ["nDCG@10", "R@100"]).splitlines()[-1] == (
        "queries with a number: nDCG@10 0 of 1, R@100 1 of 1")
    equal = same.with_columns(pl.col("value").fill_null(1.0))
    assert measures_side_by_side(equal.lazy(), ["nDCG@10", "R@100"]).splitlines()[-1] == (
        "each mean over the 1 of 1 queries with a number; the others are counted apart by "
        "their status")
    uneven = pl.DataFrame({"ranker": ["a", "a", "b"], "measure": ["R@100"] * 3,
                           "value": [0.5, 0.1, None]})
    assert measures_side_by_side(uneven.lazy(), ["R@100"]).splitlines()[-1] == (
        "queries with a number: R@100 0 to 2")


def test_score_prints_the_table_first_with_the_summarys_ndcg(tmp_path, capsys):
    measures = [a for name in NAMES for a in ("--measure", name)]
    assert main(["score", "--judgments", str(EXAMPLES / "landing/judgments/maint-v2.csv"),
                 "--run", str(EXAMPLES / "landing/pools/pool-2026-11-28"),
                 "--profile", "trec_eval", *measures, "--out", str(tmp_path / "out")]) == 0
    printed = capsys.readouterr().out.splitlines()
    first = next(i for i, line in enumerate(printed) if line.startswith("ranker"))
    assert printed[first].split() == ["ranker", *NAMES]
    rows = pl.read_parquet(tmp_path / "out" / "per_query.parquet")
    means = dict(rows.filter(pl.col("measure") == "nDCG@10").group_by("ranker")
                 .agg(pl.col("value").mean()).iter_rows())
    table = _cells("\n".join(printed[first:first + 6]))
    assert {r: table[r, "nDCG@10"] for r in means} == {r: f"{m:.4f}" for r, m in means.items()}
    # The summary's own nDCG@10 table follows, with the same means.
    status = next(i for i, line in enumerate(printed) if line.split()[:3] == ["ranker", "K",
                                                                                "NDCG"])
    assert status > first
    for line in printed[status + 1:status + 4]:
        ranker, _k, ndcg = line.split()[:3]
        assert ndcg == table[ranker, "nDCG@10"]
