"""docs/spec.md's grammar of a measure name and table of the measures: the committed section is
the one the declarations give, every measure is in it once, and the grammar is exactly what the
parser accepts (its examples parse to themselves, names that fit it parse or break only a rule
the page states, names that do not fit it are refused)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation_pipeline import measures_docs as docs
from evaluation_pipeline.measures import parse
from evaluation_pipeline.measures.declarations import DECLARATIONS
from evaluation_pipeline.measures.parse import MeasureError, parse_measure

REPO = Path(__file__).resolve().parents[4]
PAGE = REPO / "docs" / "spec.md"

NAMES = [d.name for d in DECLARATIONS] + [a for d in DECLARATIONS for a in d.aliases]
KEYS = sorted({key for d in DECLARATIONS for key in d.params})

# The grammar's block as one regular expression over a whole name: what fits the grammar,
# before the rules about keys and values. Whitespace is Python's (str.strip and \s agree).
_VALUE = rf"(?:'[^',]*'|\"[^\",]*\"|{docs.WORD})"
_PARAM = rf"\s*{docs.KEY}\s*=\s*{_VALUE}\s*"
_NAME = "|".join(re.escape(name) for name in sorted(NAMES, key=len, reverse=True))
FITS = re.compile(rf"\s*(?:{_NAME})\s*(?:\(\s*(?:{_PARAM}(?:,{_PARAM})*)?\s*\))?"
                  rf"\s*(?:@\s*{docs.DIGITS})?\s*")
# The parser's words for a name that does not fit the grammar (the rest break a rule: a key
# the measure lacks, a key given twice, a value of the wrong type or out of range).
SYNTAX = ("does not parse", "expected NAME", "unknown measure")


def committed_section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    return text.split(docs.BEGIN)[1].split(docs.END)[0].strip() + "\n"


def grammar_block() -> str:
    return docs.grammar().split("```text\n")[1].split("```")[0]


def test_the_committed_grammar_and_table_are_the_generated_ones():
    assert committed_section() == docs.section().strip() + "\n", (
        f"docs/spec.md's grammar or table of the measures differs from the declarations: run "
        f"`{docs.COMMAND}` from the checkout and commit docs/spec.md")


def test_every_declared_measure_has_one_row_in_the_committed_table():
    rows = re.findall(r"^\| `(\w+)`", committed_section(), re.MULTILINE)
    assert rows == [d.name for d in DECLARATIONS]
    for declaration in DECLARATIONS:
        row = next(line for line in docs.measures_table().splitlines()
                   if line.startswith(f"| `{declaration.name}`"))
        assert all(f"`{key}` (" in row for key in declaration.params), declaration.name
        assert all(f"`{alias}`" in row for alias in declaration.aliases), declaration.name


def test_the_grammar_names_every_measure_and_alias_once():
    quoted = re.findall(r'"(\w+)"', grammar_block().split("NAME     =")[1].split(";")[0])
    assert quoted == NAMES


def test_the_prose_names_the_measures_refused_under_average_ties():
    refused = [d.name for d in DECLARATIONS if not d.average_ties]
    prose = PAGE.read_text(encoding="utf-8").split("## Measures")[1].split(docs.BEGIN)[0]
    assert f"{', '.join(refused[:-1])} and {refused[-1]} are not defined under" in prose


@pytest.mark.parametrize("name", docs.EXAMPLES)
def test_every_example_parses_to_itself(name):
    assert name in docs.grammar()
    assert FITS.fullmatch(name)
    assert str(parse_measure(name)) == name


@pytest.mark.parametrize(("written", "canonical"), docs.SPELLINGS)
def test_every_other_spelling_parses_to_its_canonical_name(written, canonical):
    assert f"`{written}` is `{canonical}`" in docs.grammar()
    assert FITS.fullmatch(written)
    assert parse_measure(written) == parse_measure(canonical)
    assert str(parse_measure(written)) == canonical


@pytest.mark.parametrize(("name", "words"), [
    ("ndcg@10", "unknown measure"),  # names are case-sensitive
    ("nDCG@", "does not parse"),
    ("nDCG@+10", "does not parse"),  # a CUTOFF has no sign
    ("nDCG@10.0", "does not parse"),
    ("nDCG@1@10", "does not parse"),
    ("nDCG 10", "does not parse"),
    ("n DCG@10", "unknown measure 'n'"),
    ("RR(rel=2,)", "does not parse"),
    ("RR(,rel=2)", "does not parse"),
    ("RR(rel=2 3)", "does not parse"),
    ("RR(rel)", "does not parse"),
    ("RR(rel=)", "does not parse"),
    ("RR[rel=2]", "does not parse"),
    ("nDCG(dcg='exp,log2')@10", "does not parse"),  # a quoted text holds no comma
    ("nDCG(dcg=exp log2)@10", "does not parse"),
    ("nDCG(dcg='exp-log2)@10", "does not parse"),
    ("nDCG(dcg=exp-log2)(judged_only=True)@10", "does not parse"),
    ("RR@10(rel=2)", "does not parse"),
    ("RR(rel='2')", "rel='2' is not allowed"),  # a quoted value is text
    ("RR(rel=True)", "rel=True is not allowed"),  # True is not an integer
    ("RR(rel=2.0)", "rel=2.0 is not allowed"),
    ("RBP(p=1)", "below 1.0"),
    ("RBP(p=true)", "p='true' is not allowed"),  # only True and False are booleans
    ("Rprec@10", "no parameter 'cutoff'"),
    ("DCG", "needs a cutoff"),
    ("nDCG(cutoff=5)@10", "given twice"),
    ("RR@0", "cutoff=0"),
])
def test_a_near_miss_is_refused(name, words):
    with pytest.raises(MeasureError, match=re.escape(words)):
        parse_measure(name)
    # Refused for its syntax exactly when it does not fit the grammar's block.
    assert (FITS.fullmatch(name) is None) == any(w in words for w in SYNTAX)


def test_the_terminals_are_the_parsers_own():
    assert docs.KEY in parse._NAME.pattern and docs.KEY in parse._PARAM.pattern
    assert docs.WORD in parse._PARAM.pattern
    assert docs.DIGITS in parse._AT.pattern
    reading = inspect.getsource(parse._value)
    assert docs.INTEGER in reading and docs.DECIMAL in reading


def _read(word: str) -> object:
    """A WORD as the grammar's rules read it."""
    if word in ("True", "False"):
        return word == "True"
    if re.fullmatch(docs.INTEGER, word):
        return int(word)
    if re.fullmatch(docs.DECIMAL, word):
        return float(word)
    return word


@given(st.from_regex(rf"\A{docs.WORD}\Z", fullmatch=True) | st.sampled_from(
    ["True", "False", "true", "0", "-3", "+4", "1.", ".5", "-.5e-3", "1e5", "1E+5", "e5", "1e",
     ".", "+", "-", "1.2.3", "0x10", "nan", "inf", "exp-log2"]))
@settings(max_examples=300, deadline=None)
def test_a_word_reads_as_the_grammar_says(word):
    read, expected = parse._value(word), _read(word)
    assert type(read) is type(expected) and read == expected


def _outcome(name: str) -> str:
    try:
        parse_measure(name)
    except MeasureError as exc:
        return "syntax" if any(words in str(exc) for words in SYNTAX) else "rule"
    return "parsed"


def _check(name: str) -> None:
    outcome, fits = _outcome(name), FITS.fullmatch(name) is not None
    if outcome == "parsed":
        assert fits, f"{name!r} parses but does not fit the grammar"
        canonical = str(parse_measure(name))
        assert FITS.fullmatch(canonical) and parse_measure(canonical) == parse_measure(name)
    elif fits:
        assert outcome == "rule", f"{name!r} fits the grammar but does not parse"


_SPACE = st.sampled_from(["", "", "", " ", "  ", "\t", "\n"])
_WORDS = st.sampled_from(["1", "2", "10", "0", "-1", "+2", "0.5", ".5", "1e-3", "True",
                          "False", "log2", "exp-log2", "exp", "x"])
_QUOTED = st.sampled_from(["'log2'", '"exp-log2"', "''", "' log2'", "'2'", "'a(b)=c@1'",
                           "'x\"y'"])
# Pieces that do not fit where they stand.
_BROKEN = st.sampled_from(["'a,b'", "'log2", "log2'", "exp log2", "", "1 0", "@", "=", "(",
                           ")", "1k", "n DCG", "+1", "1.0", "-"])


@st.composite
def built(draw, fit: bool = True) -> str:
    """A name built along the grammar's block, whitespace between its tokens; unless ``fit``,
    some pieces may be ones that do not fit there."""
    def piece(pieces):
        return draw(_BROKEN) if not fit and draw(st.integers(0, 4)) == 0 else draw(pieces)
    parts = [draw(_SPACE), piece(st.sampled_from(NAMES)), draw(_SPACE)]
    if draw(st.booleans()):
        params = [draw(_SPACE) + piece(st.sampled_from(KEYS + ["k", "_x1"])) + draw(_SPACE)
                  + "=" + draw(_SPACE) + piece(_WORDS | _QUOTED) + draw(_SPACE)
                  for _ in range(draw(st.integers(0, 3)))]
        parts += ["(", draw(_SPACE), ",".join(params), draw(_SPACE), ")", draw(_SPACE)]
    if draw(st.booleans()):
        parts += ["@", draw(_SPACE), piece(st.sampled_from(["1", "5", "10", "010", "0"]))]
    return "".join(parts + [draw(_SPACE)])


_TOKENS = st.sampled_from(
    NAMES + KEYS + ["ndcg", "Foo", "1P", "(", ")", "((", "@", "=", ",", " ", "\t", "\n", "'",
                    '"', "1", "10", "0", "-1", "+1", "0.5", ".5", "1e3", "True", "log2",
                    "exp-log2", "'log2'", "'a,b'", "[", "]", "@10", ":", ";"])


@given(built())
@settings(max_examples=600, deadline=None)
def test_a_name_that_fits_the_grammar_parses_or_breaks_a_stated_rule(name):
    assert FITS.fullmatch(name)
    _check(name)


@given(built(fit=False))
@settings(max_examples=1500, deadline=None)
def test_a_name_built_like_the_grammar_parses_only_when_it_fits_it(name):
    _check(name)


@given(st.lists(_TOKENS, min_size=1, max_size=10).map("".join))
@settings(max_examples=1500, deadline=None)
def test_a_name_parses_only_when_it_fits_the_grammar(name):
    _check(name)


def test_the_page_writer_fills_the_markers_and_leaves_the_rest(tmp_path):
    page = tmp_path / "spec.md"
    page.write_text(f"# Page\n\nbefore\n\n{docs.BEGIN}\nold rows\n{docs.END}\nafter\n")
    assert docs.main([str(page)]) == 0
    text = page.read_text()
    assert text.startswith(f"# Page\n\nbefore\n\n{docs.BEGIN}\n\n```text\nmeasure  = NAME")
    assert text.endswith(f" |\n\n{docs.END}\nafter\n")
    assert "old rows" not in text
    assert docs.main([str(page)]) == 0 and page.read_text() == text


def test_the_page_writer_refuses_a_page_without_its_markers(tmp_path, capsys):
    page = tmp_path / "spec.md"
    page.write_text(f"{docs.END}\n{docs.BEGIN}\n")
    assert docs.main([str(page)]) == 2
    assert "needs the lines" in capsys.readouterr().err
    assert docs.main([str(tmp_path / "absent.md")]) == 2
    assert docs.main(["a", "b"]) == 2 and "usage:" in capsys.readouterr().err
