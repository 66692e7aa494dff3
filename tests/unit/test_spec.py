"""The evaluation spec: defaults, validation, canonical form, profiles and spec files."""

from __future__ import annotations

import pytest

from evaluation_pipeline.spec import EvaluationSpec, SpecError, load_spec, profile


def test_defaults_are_the_contracts():
    spec = EvaluationSpec()
    assert spec.to_dict() == {
        "cutoffs": [5, 10], "gain": "exponential", "discount": "log2", "ideal": "candidates",
        "ties": "average", "unknown": "incomplete", "unjudged": "exclude",
        "no_positive": "exclude", "missing_from_run": "exclude",
    }


def test_spec_id_is_a_hash_of_the_canonical_form():
    assert EvaluationSpec().spec_id == EvaluationSpec(cutoffs=(10, 5, 5)).spec_id
    assert EvaluationSpec().spec_id != EvaluationSpec(gain="linear").spec_id
    assert len(EvaluationSpec().spec_id) == 16


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"cutoffs": [0]}, "not an integer >= 1"),
        ({"cutoffs": []}, "at least one cutoff"),
        ({"cutoffs": [2.5]}, "not an integer >= 1"),
        ({"ties": "random"}, "'ties': 'random' is not one of average, doc_id, trec_eval"),
        ({"unknown": "skip"}, "'unknown'"),
        ({"gain": "cubic"}, "'gain': 'cubic'"),
        ({"gain": {0: 0, 1: -1}}, "finite and >= 0"),
        ({"gain": {0: 0, 1: float("inf")}}, "finite and >= 0"),
        ({"gain": {0: 0, 1: float("nan")}}, "finite and >= 0"),
        ({"gain": {-1: 0}}, "not an integer >= 0"),
    ],
)
def test_bad_values_raise_clear_errors(changes, words):
    with pytest.raises(SpecError, match=None) as info:
        EvaluationSpec(**changes)
    assert words in str(info.value)


def test_profiles():
    trec = profile("trec_eval")
    assert (trec.gain, trec.ideal, trec.ties, trec.unknown, trec.unjudged, trec.no_positive) == (
        "linear", "all_judged", "trec_eval", "zero", "zero", "zero")
    sk = profile("sklearn")
    assert (sk.ideal, sk.ties) == ("candidates", "average")
    with pytest.raises(SpecError, match="unknown profile 'nope'"):
        profile("nope")


def test_partial_yaml_file_overrides_defaults(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text("cutoffs: [3, 10]\ngain: {0: 0, 1: 1, 2: 3.5}\nunjudged: zero\n")
    spec = load_spec(path)
    assert spec.cutoffs == (3, 10)
    assert spec.gain == ((0, 0.0), (1, 1.0), (2, 3.5))
    assert spec.unjudged == "zero"
    assert spec.ties == "average"  # untouched default


def test_toml_file_with_profile_base(tmp_path):
    path = tmp_path / "spec.toml"
    path.write_text('profile = "trec_eval"\nmissing_from_run = "zero"\n')
    spec = load_spec(path)
    assert spec == profile("trec_eval").replace(missing_from_run="zero")


def test_unknown_field_in_file_is_refused(tmp_path):
    path = tmp_path / "spec.yaml"
    path.write_text("cutofs: [3]\n")
    with pytest.raises(SpecError, match="unknown spec field"):
        load_spec(path)


def test_gain_map_must_cover_every_grade():
    from evaluation_pipeline.metric.ndcg import score
    from tests.support.frames import one_query

    candidates, judgments = one_query([0, 1, 2])
    with pytest.raises(ValueError, match="no gain for grade"):
        score(candidates, judgments, EvaluationSpec(gain={0: 0, 1: 1}))


def test_a_spec_file_that_is_not_utf8_is_named_with_its_byte(tmp_path, capsys):
    from evaluation_pipeline.cli.main import main

    bad = tmp_path / "spec.yaml"
    bad.write_bytes(b"gain: exponential\n# \xff\xfe\n")
    with pytest.raises(SpecError, match=r"spec.yaml: a spec file is UTF-8 text; byte 20 is not"):
        load_spec(bad)
    assert main(["spec", "--spec", str(bad)]) == 2
    assert "byte 20 is not (0xff)" in capsys.readouterr().err
