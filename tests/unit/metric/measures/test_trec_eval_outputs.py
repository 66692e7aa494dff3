"""The measures reproduce trec_eval's own test outputs per query (4 decimals, as it prints
them) on its test data: P, recall, map, map_cut, recip_rank, Rprec, bpref, success and
ndcg_cut, at the default relevance level and at -l 2 (``rel=2``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation_pipeline.spec import profile
from tests.unit.metric.measures.support import score_dicts

CUTS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)


def read_qrels(path: Path) -> dict:
    qrels: dict = {}
    for line in path.read_text().splitlines():
        q, _, d, rel = line.split()
        qrels.setdefault(q, {})[d] = int(rel) if int(rel) >= 0 else None  # -1: unknown
    return qrels


def read_run(path: Path) -> dict:
    run: dict = {}
    for line in path.read_text().splitlines():
        q, _, d, _, score = line.split()[:5]  # trailing fields are ignored
        run.setdefault(q, {})[d] = float(score)
    return run


def read_out(path: Path) -> dict:
    out: dict = {}
    for line in path.read_text().splitlines():
        name, q, value = line.split()
        if q != "all":
            out[(name, q)] = value
    return out


def names(rel: int, cuts=CUTS, success=(1, 5, 10)) -> dict[str, str]:
    """{trec_eval measure: this project's name}."""
    r = f"(rel={rel})" if rel != 1 else ""
    table = {"map": f"AP{r}", "recip_rank": f"RR{r}", "Rprec": f"Rprec{r}",
             "bpref": f"Bpref{r}"}
    for k in cuts:
        table |= {f"P_{k}": f"P{r}@{k}", f"recall_{k}": f"R{r}@{k}",
                  f"map_cut_{k}": f"AP{r}@{k}", f"ndcg_cut_{k}": f"nDCG@{k}"}
    for k in success:
        table[f"success_{k}"] = f"Success{r}@{k}"
    return table


@pytest.mark.parametrize(("qrels", "results", "out_file", "rel"), [
    ("qrels.test", "results.test", "out.test.aq", 1),
    ("qrels.rel_level", "results.test", "out.test.aql", 2),
    ("qrels.test", "results.trunc", "out.test.aqc", 1),
], ids=["aq", "aql-rel-2", "aqc-truncated"])
def test_every_measure_matches_trec_eval_per_query(conformance_dir, qrels, results, out_file,
                                                   rel):
    expected = read_out(conformance_dir / out_file)
    run = read_run(conformance_dir / results)
    table = names(rel)
    scored = score_dicts(read_qrels(conformance_dir / qrels), run, list(table.values()),
                         profile("trec_eval"))
    checked = 0
    for (name, q), value in expected.items():
        if name not in table or q not in scored:
            continue
        ours = scored[q][str(_canonical(table[name]))][0]
        assert f"{ours:.4f}" == value, (name, q, ours)
        checked += 1
    assert checked == len(table) * len(run)


def test_measure_parameters_match_trec_eval(conformance_dir):
    """out.test.meas_params: trec_eval -m P.3,5,7 -m recall.20,2000 -m success.2,5,20
    -m ndcg_cut.10,20,23 on the test data."""
    expected = read_out(conformance_dir / "out.test.meas_params")
    table = names(1, cuts=(), success=(2, 5, 20))
    table |= {"P_3": "P@3", "P_5": "P@5", "P_7": "P@7", "recall_20": "R@20",
              "recall_2000": "R@2000", "ndcg_cut_10": "nDCG@10", "ndcg_cut_20": "nDCG@20",
              "ndcg_cut_23": "nDCG@23"}
    table = {k: v for k, v in table.items() if any(name == k for name, _ in expected)}
    scored = score_dicts(read_qrels(conformance_dir / "qrels.test"),
                         read_run(conformance_dir / "results.test"), list(table.values()),
                         profile("trec_eval"))
    checked = 0
    for (name, q), value in expected.items():
        if name in table:
            assert f"{scored[q][str(_canonical(table[name]))][0]:.4f}" == value, (name, q)
            checked += 1
    assert checked == 3 * len(table)


def _canonical(name: str):
    from evaluation_pipeline.measures.parse import parse_measure

    return parse_measure(name)
