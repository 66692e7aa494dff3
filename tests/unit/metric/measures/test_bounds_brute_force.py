"""Each measure's bounds are the least and greatest value over every grading of the holes
(docs/CONTRACT.md, section 3, rule 7), checked against every grading of random small queries:
each grading is scored as a query without holes, and the extremes compared to 1e-12."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from evaluation_pipeline.spec import spec_from_mapping
from tests.unit.metric.measures.support import score_dicts

EVERY = ["nDCG@3", "nDCG(dcg=log2,judged_only=True)@2", "DCG@3", "RR", "RR(rel=2)@2", "AP",
         "AP(rel=2)@3", "P@2", "P(rel=2)@3", "R@2", "R(rel=2)@4", "Success@2", "Judged@3",
         "Rprec", "Rprec(rel=2)", "Bpref", "Bpref(rel=2)", "ERR(max_rel=3)@3",
         "RBP(p=0.6,max_rel=3)", "RBP(p=0.5,rel=2)@3"]
UNDER_AVERAGE = [n for n in EVERY if not n.startswith(("AP", "Bpref", "ERR"))]

SPECS = {
    "trec_eval": ({"profile": "trec_eval", "max_grade": 2}, EVERY),
    "average-candidates-exclude": ({"ties": "average", "unknown": "zero", "unjudged": "exclude",
                                    "no_positive": "exclude", "max_grade": 2}, UNDER_AVERAGE),
    "doc_id-all_judged-one": ({"ties": "doc_id", "ideal": "all_judged", "no_positive": "one",
                               "gain": "linear", "max_grade": 3}, EVERY),
    "average-all_judged-zero": ({"ties": "average", "ideal": "all_judged", "no_positive": "zero",
                                 "max_grade": 2}, UNDER_AVERAGE),
}


def random_query(rng, top):
    """(qrels, run) of one query: up to 6 candidates on 3 score levels (ties), each graded,
    unknown or unjudged, and graded and unknown rows outside the run."""
    m = int(rng.integers(1, 7))
    run = {f"d{i}": float(rng.integers(0, 3)) for i in range(m)}
    qrels = {}
    for d in run:
        kind = rng.integers(0, 3)
        if kind == 0:
            qrels[d] = int(rng.integers(0, top + 1))
        elif kind == 1:
            qrels[d] = None
    for i in range(int(rng.integers(0, 3))):
        qrels[f"x{i}"] = int(rng.integers(0, top + 1))
    if rng.random() < 0.3:
        qrels["u0"] = None
    if not qrels:
        qrels["x9"] = 0
    return qrels, run


@pytest.mark.parametrize("name", list(SPECS))
def test_bounds_are_the_extremes_over_every_grading(name):
    mapping, names = SPECS[name]
    spec = spec_from_mapping(mapping)
    top = mapping["max_grade"]
    rng = np.random.default_rng(sum(map(ord, name)))
    qrels_all, run_all, gradings = {}, {}, {}
    for n in range(60):
        qrels, run = random_query(rng, top)
        q = f"q{n:03d}"
        qrels_all[q], run_all[q] = qrels, run
        # The holes: unknown rows (in the list or, under all_judged, outside it) and unjudged
        # candidates; outside the list an unknown row only joins the ideal under all_judged.
        holes = [d for d in run if qrels.get(d) is None]
        holes += [d for d, g in qrels.items() if g is None and d not in run
                  and spec.ideal == "all_judged"]
        gradings[q] = []
        for i, grades in enumerate(itertools.product(range(top + 1), repeat=len(holes))):
            graded = {d: g for d, g in qrels.items() if g is not None}
            graded |= dict(zip(holes, grades))
            g_name = f"{q}-g{i:04d}"
            qrels_all[g_name], run_all[g_name] = graded, run
            gradings[q].append(g_name)
    scored = score_dicts(qrels_all, run_all, names, spec)
    checked, widths = 0, set()
    for q, graded_names in gradings.items():
        for measure, (_, _, least, greatest) in scored[q].items():
            values = [scored[g][measure][0] for g in graded_names]
            values = [v for v in values if not np.isnan(v)]
            if not values:
                assert np.isnan(least) and np.isnan(greatest), (q, measure)
                continue
            assert least == pytest.approx(min(values), abs=1e-12), (q, measure, qrels_all[q],
                                                                    run_all[q])
            assert greatest == pytest.approx(max(values), abs=1e-12), (q, measure,
                                                                       qrels_all[q], run_all[q])
            checked += 1
            if least < greatest:
                widths.add(measure)
    assert checked > 30 * len(names)
    # Every measure but Judged (1 under every grading) has queries whose holes move it.
    assert widths == {str(m) for m in scored["q000"]} - {"Judged@3"}
