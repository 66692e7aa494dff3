"""The judge's prompt: the packaged UMBRELA template, its placeholders and hash, and a reply's
grade read, never guessed."""

from __future__ import annotations

import pytest

from evaluation_pipeline.judging.prompt import (
    TemplateError,
    default_template,
    load_template,
    parse_grade,
)


def test_the_default_template_is_umbrelas_0_to_3_prompt():
    template = default_template()
    assert template.name == "umbrela-v1" and template.grades == (0, 3)
    assert "integer scale of 0 to 3" in template.text and "##final score" in template.text
    prompt = template.render("pump seal leak", "Seal manual", "Replace the {seal}.")
    assert "Query: pump seal leak\nPassage: Seal manual\n\nReplace the {seal}." in prompt
    assert len(template.sha256) == 64


def test_a_template_of_ones_own_has_its_own_hash(tmp_path):
    path = tmp_path / "mine-v2.txt"
    path.write_text("Grade {{0-3}}: {query} / {title} / {text}\n", encoding="utf-8")
    template = load_template(path)
    assert template.name == "mine-v2" and template.sha256 != default_template().sha256
    assert template.render("q", "t", "x") == "Grade {0-3}: q / t / x\n"


@pytest.mark.parametrize(("text", "words"), [
    ("{query} {pasage}", "unknown placeholder {pasage}"),
    ("{passage} only", "has no {query}"),
    ("{query} only", "has no {passage or text}"),
])
def test_a_template_with_wrong_placeholders_is_refused(tmp_path, text, words):
    path = tmp_path / "bad.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TemplateError, match=words.replace("{", r"\{").replace("}", r"\}")):
        load_template(path)


@pytest.mark.parametrize(("reply", "grade"), [
    ("##final score: 2", 2),
    ("M: 3\nT: 2\n##Final Score: 3", 3),
    ("final_score = 1", 1),
    ("  0 ", 0),
    ("<think>final score: 1</think>\n##final score: 2", 2),
])
def test_a_grade_is_read_from_the_reply(reply, grade):
    assert parse_grade(reply) == (grade, None)


@pytest.mark.parametrize(("reply", "reason"), [
    ("", "empty reply"),
    (None, "empty reply"),
    ("It is fairly relevant.", "no grade in the reply"),
    ("##final score: 4", "grade 4 is outside the scale 0 to 3"),
    ("##final score: -1", "grade -1 is outside the scale 0 to 3"),
])
def test_a_reply_without_a_grade_is_unknown_with_its_reason(reply, reason):
    grade, why = parse_grade(reply)
    assert grade is None and why.startswith(reason)
