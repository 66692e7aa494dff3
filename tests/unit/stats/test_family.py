"""The declared multiple-comparison family: which tests one Holm adjustment spans, held to
statsmodels' Holm over each family built by hand, and the spec field that declares it."""

import numpy as np
import pytest

from evaluation_pipeline.spec import EvaluationSpec, SpecError
from evaluation_pipeline.stats.family import Family
from tests.support.holm_oracle import holm_oracle

RNG = np.random.default_rng(48)
RANKERS = ("bm25", "dense", "hybrid")
MEASURES = (("nDCG@5", 5), ("nDCG@10", 10), ("RR(rel=2)@10", 10), ("AP(rel=2)@100", 100),
            ("Rprec", None))


def family_tests(p_values) -> list[dict]:
    return [{"ranker": ranker, "measure": measure, "cutoff": cutoff, "p_value": float(p)}
            for (ranker, (measure, cutoff)), p in zip(
                ((r, m) for m in MEASURES for r in RANKERS), p_values, strict=True)]


def by_hand(tests: list[dict], groups: list[set[str]]) -> list[float]:
    """statsmodels' Holm within each group of measures."""
    out = [None] * len(tests)
    for group in groups:
        members = [i for i, t in enumerate(tests) if t["measure"] in group]
        adjusted = holm_oracle([tests[i]["p_value"] for i in members])[1]
        for i, p in zip(members, adjusted, strict=True):
            out[i] = float(p)
    return out


@pytest.mark.parametrize("rule, headline, groups", [
    # The default: the spec's nDCG@K together, each other measure apart.
    ("headline", None, [{"nDCG@5", "nDCG@10"}, {"RR(rel=2)@10"}, {"AP(rel=2)@100"}, {"Rprec"}]),
    ("headline", ("nDCG@10", "RR(rel=2)@10"),
     [{"nDCG@10", "RR(rel=2)@10"}, {"nDCG@5"}, {"AP(rel=2)@100"}, {"Rprec"}]),
    ("measure", None, [{m} for m, _ in MEASURES]),
    ("all", None, [{m for m, _ in MEASURES}]),
])
def test_each_rule_adjusts_within_its_families_as_statsmodels_holm(rule, headline, groups):
    for _ in range(20):
        tests = family_tests(RNG.uniform(0, 0.2, len(RANKERS) * len(MEASURES)))
        adjusted = Family(rule, headline).adjust(tests, unit="ranker",
                                                 unit_of=lambda t: t["ranker"])
        assert [a.p for a in adjusted] == pytest.approx(by_hand(tests, groups), abs=1e-15)


def test_the_family_is_named_with_its_size_and_span():
    tests = family_tests(np.linspace(0.001, 0.1, len(RANKERS) * len(MEASURES)))
    adjusted = Family().adjust(tests, unit="ranker", unit_of=lambda t: t["ranker"])
    named = dict(zip(((t["ranker"], t["measure"]) for t in tests),
                     (a.family for a in adjusted), strict=True))
    assert named["dense", "nDCG@10"] == (
        "Holm over 6 tests: 3 rankers x 2 measures (nDCG@5, nDCG@10)")
    assert named["bm25", "Rprec"] == "Holm over 3 tests: 3 rankers x 1 measure (Rprec)"
    pairs = Family("all").adjust(tests[:2], unit="ranker pair", unit_of=lambda t: t["ranker"])
    assert pairs[0].family == "Holm over 2 tests: 2 ranker pairs x 1 measure (nDCG@5)"


def test_a_test_without_a_p_is_in_no_family():
    tests = family_tests(np.full(len(RANKERS) * len(MEASURES), 0.01))
    tests[0]["p_value"] = None
    adjusted = Family().adjust(tests, unit="ranker", unit_of=lambda t: t["ranker"])
    assert adjusted[0] == (None, None, None)
    # The other nDCG@K tests form a family of five, not six.
    assert adjusted[1][:2] == (pytest.approx(0.05),
                               "Holm over 5 tests: 3 rankers x 2 measures (nDCG@5, nDCG@10)")


def test_the_spec_declares_the_family_and_the_default_keeps_the_spec_id():
    default = EvaluationSpec()
    assert default.family is None and Family.of(default) == Family("headline", (
        "nDCG@5", "nDCG@10"))
    assert EvaluationSpec(family="headline").spec_id == default.spec_id
    measure = EvaluationSpec(family="measure")
    assert measure.spec_id != default.spec_id
    assert "each measure one Holm family" in measure.describe()
    assert Family.of(measure).rule == "measure"
    with pytest.raises(SpecError, match="'family'.*headline, measure, all"):
        EvaluationSpec(family="ranker")


def test_the_contracts_worked_case():
    # docs/CONTRACT.md section 4: three rankers, two cutoffs, under headline and measure.
    p = {("bm25", "nDCG@5"): 0.0005, ("dense", "nDCG@5"): 0.0240, ("hybrid", "nDCG@5"): 0.0310,
         ("bm25", "nDCG@10"): 0.2100, ("dense", "nDCG@10"): 0.0090,
         ("hybrid", "nDCG@10"): 0.0410}
    tests = [{"ranker": r, "measure": m, "cutoff": int(m[5:]), "p_value": v}
             for (r, m), v in p.items()]
    headline = [a.p for a in Family().adjust(tests, unit="ranker", unit_of=lambda t: t["ranker"])]
    assert headline == pytest.approx([0.003, 0.096, 0.096, 0.21, 0.045, 0.096], abs=1e-15)
    measure = [a.p for a in Family("measure").adjust(tests, unit="ranker",
                                                      unit_of=lambda t: t["ranker"])]
    assert measure == pytest.approx([0.0015, 0.048, 0.048, 0.21, 0.027, 0.082], abs=1e-15)


def test_reconcile_walks_no_family():
    # The family says which tests are adjusted together; it moves no number, so reconcile's
    # walk and sensitivity leave it out (as the headline).
    from evaluation_pipeline.analysis.reconcile import FIELDS

    assert "family" not in FIELDS and "headline" not in FIELDS and "ties" in FIELDS
