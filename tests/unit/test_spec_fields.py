"""Each spec field is declared once, and what comes from the declarations keeps its bytes: the
spec_ids, the canonical form, the conventions sentence, the checks and their messages,
``ndcg-eval spec``'s lines and docs/spec.md's table of the fields."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
import yaml

from evaluation_pipeline import spec_docs
from evaluation_pipeline.cli.spec_command import describe
from evaluation_pipeline.spec import (
    FIELD_DOCS,
    FIELDS,
    PROFILES,
    EvaluationSpec,
    SpecError,
    fields_table,
    load_spec,
    spec_from_mapping,
)
from evaluation_pipeline.spec_fields import declare, declared

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "spec.md"

# Every field once, in the declarations' order.
NAMES = ("cutoffs", "gain", "discount", "ideal", "ties", "unknown", "unjudged", "no_positive",
         "missing_from_run", "raters", "max_grade", "scores", "measures", "headline", "family",
         "resamples")

# spec_ids computed by the spec module before its fields were declared once (each field then
# spelled out in the dataclass, FIELD_DOCS, the choices and to_dict): a result names its spec
# by these, so no change to how fields are declared may move one.
SPEC_IDS = {
    "default": "cf68d57384f1ab70",
    "trec_eval": "86d0bdf3f0f63737",
    "sklearn": "8a4059999b996ea2",
    "lightgbm": "d8a49dad17712583",
    "xgboost": "d8a49dad17712583",
    "xgboost_minus": "e5a6f426b093a063",
}
BUNDLED_SPEC_ID = "cf68d57384f1ab70"  # evaluation_pipeline/evaluation_spec.yaml
# Specs that set what no profile sets, with their canonical JSON and spec_id from then.
SET_FIELDS = [
    (EvaluationSpec(gain={0: 0, 1: 1, "2": 3.5, 3: 7.25}),
     '{"cutoffs":[5,10],"discount":"log2","gain":{"0":0.0,"1":1.0,"2":3.5,"3":7.25},'
     '"ideal":"candidates","missing_from_run":"exclude","no_positive":"exclude",'
     '"ties":"average","unjudged":"exclude","unknown":"incomplete"}',
     "6e235719dce2686a"),
    (EvaluationSpec(raters="prefer: h1, h2,llm"),
     '{"cutoffs":[5,10],"discount":"log2","gain":"exponential","ideal":"candidates",'
     '"missing_from_run":"exclude","no_positive":"exclude","raters":"prefer:h1,h2,llm",'
     '"ties":"average","unjudged":"exclude","unknown":"incomplete"}',
     "f681dc5470f839c4"),
    (EvaluationSpec(max_grade=3, cutoffs=[20, 1, 20]),
     '{"cutoffs":[1,20],"discount":"log2","gain":"exponential","ideal":"candidates",'
     '"max_grade":3,"missing_from_run":"exclude","no_positive":"exclude","ties":"average",'
     '"unjudged":"exclude","unknown":"incomplete"}',
     "f18d3b1b8228636f"),
    (PROFILES["trec_eval"].replace(raters="mean:half_up", max_grade=0, gain=[(1, 2), (0, 0)]),
     '{"cutoffs":[5,10],"discount":"log2","gain":{"0":0.0,"1":2.0},"ideal":"all_judged",'
     '"max_grade":0,"missing_from_run":"exclude","no_positive":"zero","raters":"mean:half_up",'
     '"ties":"trec_eval","unjudged":"zero","unknown":"zero"}',
     "843463f6074c6e5b"),
]


def committed_table() -> str:
    text = PAGE.read_text(encoding="utf-8")
    return text.split(spec_docs.BEGIN)[1].split(spec_docs.END)[0].strip() + "\n"


def generated_table() -> str:
    contract = (REPO / "docs" / "CONTRACT.md").read_text(encoding="utf-8")
    return spec_docs.fields_reference(spec_docs.section_anchors(contract))


def table_fields(table: str) -> list[str]:
    return re.findall(r"^\| `(\w+)` \|", table, re.MULTILINE)


def test_each_field_is_declared_once_and_everything_lists_the_same_fields():
    assert [field.name for field in FIELDS] == list(NAMES)
    assert [field.name for field in dataclasses.fields(EvaluationSpec)] == list(NAMES)
    assert list(FIELD_DOCS) == list(NAMES)
    assert table_fields(committed_table()) == list(NAMES)
    assert table_fields(fields_table()) == list(NAMES)
    listed = [line.split()[0] for line in describe(EvaluationSpec()).splitlines()[1:]]
    assert listed == list(NAMES)


def test_the_committed_table_of_the_fields_is_the_generated_one():
    assert committed_table() == generated_table(), (
        f"docs/spec.md's table of the spec's fields differs from the declarations: run "
        f"`{spec_docs.COMMAND}` from the checkout and commit docs/spec.md")


def test_the_table_writer_fills_the_markers_and_leaves_the_rest(tmp_path):
    (tmp_path / "CONTRACT.md").write_text("# C\n\n## 2. Declared conventions (the spec)\n\n"
                                          "## 3. Per-query result\n\n"
                                          "## 4. Aggregates\n\n"
                                          "## 8. Nights (the nightly watch)\n")
    page = tmp_path / "spec.md"
    page.write_text(f"# Page\n\nbefore\n\n{spec_docs.BEGIN}\nold rows\n{spec_docs.END}\nafter\n")
    assert spec_docs.main([str(page)]) == 0
    text = page.read_text()
    assert text.startswith(f"# Page\n\nbefore\n\n{spec_docs.BEGIN}\n\n| field |")
    assert text.endswith(f"|\n\n{spec_docs.END}\nafter\n")
    assert "old rows" not in text
    assert "[section 3, rule 6](CONTRACT.md#3-per-query-result)" in text
    assert spec_docs.main([str(page)]) == 0 and page.read_text() == text


def test_the_table_writer_refuses_a_page_without_its_markers(tmp_path, capsys):
    (tmp_path / "CONTRACT.md").write_text(
        "## 2. Two\n\n## 3. Three\n\n## 4. Four\n\n## 8. Eight\n")
    page = tmp_path / "spec.md"
    page.write_text(f"{spec_docs.END}\n{spec_docs.BEGIN}\n")
    assert spec_docs.main([str(page)]) == 2
    assert "needs the lines" in capsys.readouterr().err
    page.write_text(f"{spec_docs.BEGIN}\n{spec_docs.END}\n")
    (tmp_path / "CONTRACT.md").write_text("## 2. Two\n\n## 4. Four\n\n## 8. Eight\n")
    assert spec_docs.main([str(page)]) == 2
    assert "the contract has no section 3" in capsys.readouterr().err


@pytest.mark.parametrize("name", SPEC_IDS)
def test_every_profile_keeps_its_spec_id(name):
    assert PROFILES[name].spec_id == SPEC_IDS[name]


def test_the_default_and_the_bundled_spec_keep_their_spec_id():
    assert EvaluationSpec().spec_id == SPEC_IDS["default"]
    bundled = load_spec(REPO / "evaluation_pipeline" / "evaluation_spec.yaml")
    assert bundled.spec_id == BUNDLED_SPEC_ID


@pytest.mark.parametrize(("spec", "canonical", "spec_id"), SET_FIELDS)
def test_a_spec_that_sets_more_keeps_its_canonical_form_and_spec_id(spec, canonical, spec_id):
    assert (spec.canonical_json(), spec.spec_id) == (canonical, spec_id)


@pytest.mark.parametrize("spec", [*PROFILES.values(), *(spec for spec, _, _ in SET_FIELDS)])
def test_the_canonical_form_reads_back_as_the_same_spec(spec):
    again = spec_from_mapping(spec.to_dict(), source="canonical form")
    assert again == spec and again.spec_id == spec.spec_id


@pytest.mark.parametrize("changes", [
    {"measures": ["nDCG@10", "RR(rel=2)@10", "AP(rel=2)@100", "R@100"], "ties": "trec_eval"},
    {"discount": 10}, {"discount": "1/rank"}, {"discount": 2.5, "scores": "float32"},
])
def test_the_newer_fields_read_back_from_the_canonical_form(changes):
    spec = EvaluationSpec().replace(**changes)
    again = spec_from_mapping(json.loads(spec.canonical_json()), source="canonical form")
    assert again == spec and again.spec_id == spec.spec_id != EvaluationSpec().spec_id


def test_the_conventions_sentence_keeps_its_words():
    assert PROFILES["trec_eval"].describe() == (
        "gain g, log2 discount, ideal over all judged documents, ties by doc_id descending "
        "(trec_eval), unknown grades gain 0, unjudged gain 0, queries without a positive grade "
        "scored 0, queries missing from the run counted apart")
    assert SET_FIELDS[3][0].describe() == (
        "gain map 0->0, 1->2, log2 discount, ideal over all judged documents, ties by doc_id "
        "descending (trec_eval), unknown grades gain 0, unjudged gain 0, queries without a "
        "positive grade scored 0, queries missing from the run counted apart, raters combined "
        "by mean:half_up")
    assert EvaluationSpec().describe() == (
        "gain 2^g-1, log2 discount, ideal over graded candidates, ties averaged, unknown grades "
        "leave a query open, unjudged excluded, queries without a positive grade counted apart, "
        "queries missing from the run counted apart")


@pytest.mark.parametrize("field", [field for field in FIELDS if field.choices],
                         ids=lambda field: field.name)
def test_every_choice_has_its_words_and_passes_its_check(field):
    for choice, words in field.choices.items():
        assert words and EvaluationSpec(**{field.name: choice}).describe().count(words) == 1


@pytest.mark.parametrize("field", [field for field in FIELDS if field.parse is None],
                         ids=lambda field: field.name)
def test_a_value_outside_the_choices_is_refused_naming_field_choices_and_meaning(field):
    with pytest.raises(SpecError) as info:
        spec_from_mapping({field.name: "nonesuch"}, source="my-spec.yaml")
    assert str(info.value) == (f"my-spec.yaml: spec field {field.name!r}: 'nonesuch' is not one "
                               f"of {', '.join(field.choices)} ({field.meaning})")


@pytest.mark.parametrize(("changes", "message"), [
    ({"gain": "cubic"}, "spec field 'gain': 'cubic' is not one of exponential, linear or a "
                        "{grade: gain} mapping"),
    ({"gain": {}}, "spec field 'gain': an explicit gain map needs at least one grade"),
    ({"gain": {1: "x"}}, "spec field 'gain': gain for grade 1 is not a number"),
    ({"gain": 5}, "spec field 'gain': cannot read 5 as a grade->gain map"),
    ({"cutoffs": "5"}, "spec field 'cutoffs': '5' is not an integer >= 1"),
    ({"cutoffs": [10**7]}, "spec field 'cutoffs': 10,000,000 is above the largest cutoff, "
                           "1,000,000: scoring allocates per place up to K"),
    ({"raters": 3}, "spec field 'raters': 3 is not one of mean:half_up, mean:half_down, "
                    "mean:floor, mean:ceil, median, median:higher, majority:lower, "
                    "majority:higher, max, min, rater:<id>, prefer:<id>,<id>,..."),
    ({"raters": "mean"}, "spec field 'raters': 'mean' is not one of mean:half_up, "
                         "mean:half_down, mean:floor, mean:ceil, median, median:higher, "
                         "majority:lower, majority:higher, max, min, rater:<id>, "
                         "prefer:<id>,<id>,...; a grade is an integer, so declare the rounding "
                         f"({FIELD_DOCS['raters']})"),
    ({"raters": "rater:a,b"}, "spec field 'raters': 'rater:a,b' must name one rater"),
    ({"max_grade": "3"}, f"spec field 'max_grade': '3' is not an integer >= 0 "
                         f"({FIELD_DOCS['max_grade']})"),
    ({"max_grade": 2000}, "spec field 'max_grade': 2000 is above 1023, the largest grade a "
                          "gain can be computed for"),
    ({"unjudged": None}, "spec field 'unjudged': None is not one of incomplete, exclude, zero "
                         f"({FIELD_DOCS['unjudged']})"),
])
def test_an_open_value_is_refused_by_its_parser_with_the_message_it_always_gave(changes,
                                                                                 message):
    with pytest.raises(SpecError) as info:
        EvaluationSpec(**changes)
    assert str(info.value) == message


def test_spec_lines_show_every_field_unset_ones_too():
    lines = describe(PROFILES["sklearn"]).splitlines()
    assert lines[0] == f"spec_id {SPEC_IDS['sklearn']}"
    assert lines[2] == ("  gain              linear                   " + FIELD_DOCS["gain"])
    assert lines[10] == ("  raters            unset                    " + FIELD_DOCS["raters"])
    assert lines[11].split()[:2] == ["max_grade", "unset"]


def test_spec_lines_show_a_gain_map_as_a_spec_file_writes_it():
    spec = EvaluationSpec(gain={0: 0, 1: 1, 2: 3.5, 3: 0.1 + 0.2}, raters="max", max_grade=3)
    shown = {line.split()[0]: line.split(None, 1)[1] for line in describe(spec).splitlines()[1:]}
    assert shown["gain"].startswith("{0: 0, 1: 1, 2: 3.5, 3: 0.30000000000000004} ")
    gain = yaml.safe_load(shown["gain"].split("}")[0] + "}")
    assert EvaluationSpec(gain=gain) == EvaluationSpec(gain=spec.gain)
    assert shown["raters"].split()[0] == "max" and shown["max_grade"].split()[0] == "3"


def test_a_field_with_a_structured_value_fits_the_declaration_as_it_is():
    """A field of its own kind (a tuple of parsed items here, in the manner of a list of
    measures) declares its parser, canonical form, words and shown text, and the spec's
    machinery carries it without a case of its own."""

    def parse_items(value):
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)) or not items or not all(
                isinstance(item, str) and item.strip() for item in items):
            raise SpecError(f"spec field 'items': {value!r} is not a list of names")
        return tuple(item.strip() for item in items)

    @dataclasses.dataclass(frozen=True)
    class Spec:
        size: int = declare(1, "a size", contract="section 2", parse=int)
        items: tuple[str, ...] | None = declare(
            None, "some items", contract="section 2", parse=parse_items, canonical=list,
            words=lambda items: "items " + ", ".join(items), show=", ".join, optional=True)

    fields = declared(Spec)
    items = fields[1]
    assert [field.name for field in fields] == ["size", "items"]
    assert (items.type, items.default, items.default_json) == (
        "tuple[str, ...] | None", None, None)
    assert items.check("nDCG@10, RR(rel=2)@10") == ("nDCG@10", "RR(rel=2)@10")
    assert items.to_json(("a", "b")) == ["a", "b"] and items.is_set(("a",))
    assert not items.is_set(None) and items.check(None) is None
    assert items.words_for(("a", "b")) == "items a, b" and items.words_for(None) is None
    assert items.shown(("a", "b")) == "a, b" and items.shown(None) == "unset"
    with pytest.raises(SpecError, match="'items': 3 is not a list of names"):
        items.check(3)


def test_a_dataclass_field_without_its_declaration_is_named():
    @dataclasses.dataclass(frozen=True)
    class Spec:
        size: int = 1

    with pytest.raises(TypeError, match="Spec: field\\(s\\) size not made by"):
        declared(Spec)
