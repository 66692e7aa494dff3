"""docs/spec.md's grammar of a measure name and table of the measures, written from their
declarations (:mod:`evaluation_pipeline.measures.declarations`).

    python -m evaluation_pipeline.measures_docs [PAGE]

writes the grammar and the table between PAGE's markers (PAGE: docs/spec.md under the current
folder). Every name, alias and parameter comes from ``DECLARATIONS``; the grammar is the one
``measures.parse.parse_measure`` accepts, and a test holds it to the parser (each example
parses to itself, each spelling to its canonical name, near misses are refused) and the
committed page to what these functions give, naming this command when they differ.

The functions are pure; only :func:`main` reads and writes the page.
"""

from __future__ import annotations

import sys
from pathlib import Path

from evaluation_pipeline.io.generated_pages import regenerate, spliced
from evaluation_pipeline.measures.declarations import (
    DECLARATIONS,
    NOT_PROVIDED,
    Declaration,
    ParamInfo,
)

COMMAND = "python -m evaluation_pipeline.measures_docs"
PAGE = Path("docs/spec.md")
BEGIN = (f"<!-- The measures, written by `{COMMAND}` from their declarations in "
         "evaluation_pipeline/measures/declarations.py: edit those, not this table. -->")
END = "<!-- End of the measures. -->"

# The grammar's terminals, as the parser's regular expressions spell them (parse._NAME, _PARAM,
# _AT and _value); the tests hold each to the parser.
KEY = "[A-Za-z_][A-Za-z0-9_]*"
WORD = "[A-Za-z0-9._+-]+"
DIGITS = "[0-9]+"
INTEGER = "[+-]?[0-9]+"
DECIMAL = r"[+-]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?[0-9]+[eE][+-]?[0-9]+"

# Names that parse, each its own canonical form (str(parse_measure(name)) == name).
EXAMPLES = ("nDCG@10", "nDCG(dcg='exp-log2')@10", "RR(rel=2)@10", "AP(rel=2)",
            "P(rel=2,judged_only=True)@10", "R@100", "Rprec", "ERR(max_rel=3)@20", "RBP(p=0.5)",
            "RBP(rel=1)")
# Other spellings that parse, each with the canonical name it prints as.
SPELLINGS = (("nDCG(dcg=exp-log2)@10", "nDCG(dcg='exp-log2')@10"),
             ("MRR@10", "RR@10"),
             ("RR(cutoff=10, rel=2)", "RR(rel=2)@10"),
             ("P ( rel = 2 ) @ 10", "P(rel=2)@10"),
             ("AP(rel=1)", "AP"),
             ("RBP(p=0.8)", "RBP"),
             ("RBP(p=.5)", "RBP(p=0.5)"),
             ("nDCG()@5", "nDCG@5"))

_TYPE = {int: "integer", float: "number", bool: "`True` or `False`", str: "text"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _names(declaration: Declaration) -> str:
    name = f"`{declaration.name}`"
    if declaration.aliases:
        also = ", ".join(f"`{alias}`" for alias in declaration.aliases)
        name += f" (also {also})"
    return name


def _values(key: str, info: ParamInfo) -> str:
    """The values a parameter takes: its type, then its choices or its range."""
    if info.choices:
        return "one of " + ", ".join(f"`{choice}`" for choice in info.choices)
    if info.minimum is not None and info.below is not None:
        return f"{_TYPE[info.dtype]}, `{info.minimum} <= {key} < {info.below}`"
    if info.minimum is not None:
        return f"{_TYPE[info.dtype]} `>= {info.minimum}`"
    if info.below is not None:
        return f"{_TYPE[info.dtype]} `< {info.below}`"
    return _TYPE[info.dtype]


def _parameter(key: str, info: ParamInfo) -> str:
    """One parameter: its key, values, default (or whether it must be given) and meaning."""
    if info.required:
        given = "required"
    elif info.default is NOT_PROVIDED:
        given = "optional"
    else:
        given = f"default `{info.default!r}`"
    written = ", written `@k` or `cutoff=k`" if key == "cutoff" else ""
    return f"`{key}` ({_values(key, info)}, {given}{written}): {info.desc}"


def measures_table() -> str:
    """The Markdown table of the measures: one row per declaration, in their order."""
    rows = ["| measure | definition | parameters | unjudged and unknown documents | ties "
            "| no relevant document | bounds over the holes | trec_eval | ir_measures |",
            "|---|---|---|---|---|---|---|---|---|"]
    for declaration in DECLARATIONS:
        parameters = "<br>".join(_parameter(key, info)
                                 for key, info in declaration.params.items())
        cells = [_names(declaration), declaration.definition, parameters or "none",
                 declaration.unjudged, declaration.ties, declaration.no_positive,
                 declaration.bounds, declaration.trec_eval or "none", declaration.ir_measures]
        rows.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(rows) + "\n"


def _listed(names: list[str]) -> str:
    """The names quoted and joined: `a`, `b` and `c`."""
    quoted = [f"`{name}`" for name in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _alternatives(label: str, words: list[str], width: int = 96) -> list[str]:
    """``label = "a" | "b" | ... ;``, wrapped before ``width`` characters."""
    tokens = [f'"{word}"' for word in words]
    tokens[-1] += " ;"
    lines, line = [], f"{label:<8} = {tokens[0]}"
    for token in tokens[1:]:
        if len(line) + len(token) + 3 > width:
            lines.append(line)
            line = f"{'':<8}   | {token}"
        else:
            line += f" | {token}"
    return lines + [line]


def grammar() -> str:
    """The grammar of a measure name (Markdown): an EBNF block, what a name that fits it must
    also satisfy, how the name prints, and examples that parse."""
    names = [d.name for d in DECLARATIONS]
    aliases = [alias for d in DECLARATIONS for alias in d.aliases]
    required = [d.name for d in DECLARATIONS if "cutoff" in d.params
                and d.params["cutoff"].required]
    uncut = [d.name for d in DECLARATIONS if "cutoff" not in d.params]
    block = [
        'measure  = NAME , [ "(" , [ param , { "," , param } ] , ")" ] , [ "@" , CUTOFF ] ;',
        'param    = KEY , "=" , value ;',
        "value    = \"'\" , { character - ( \"'\" | \",\" ) } , \"'\"",
        "         | '\"' , { character - ( '\"' | \",\" ) } , '\"'",
        "         | WORD ;",
        *_alternatives("NAME", names + aliases),
        f"KEY      = /{KEY}/ ;",
        f"WORD     = /{WORD}/ ;",
        f"CUTOFF   = /{DIGITS}/ ;",
    ]
    rules = [
        "Whitespace may stand before and after every token (`P ( rel = 2 ) @ 10` is "
        "`P(rel=2)@10`), not inside a NAME, KEY, WORD or CUTOFF; inside quotes it is part of "
        "the text. A quoted text holds no comma. `()` is allowed and names no parameter.",
        "NAME is case-sensitive; " + ", ".join(
            f"`{alias}` is `{d.name}`" for d in DECLARATIONS for alias in d.aliases) + ".",
        "KEY is one of the measure's parameters (the table's parameters column), each given "
        f"once. `@k` is the parameter `cutoff`, which {_listed(uncut)} lack and "
        f"{_listed(required)} require; writing both `@k` and `cutoff=` is refused.",
        f"A WORD reads as `True` or `False`, else as an integer when it matches `{INTEGER}`, "
        f"else as a number when it matches `{DECIMAL}`, else as text (`dcg=exp-log2`); a "
        "quoted value is always text (`rel='2'` is refused).",
        "The value must be of the parameter's type (an integer serves as a number; `True` and "
        "`False` are not integers) and among its choices or within its range; CUTOFF is an "
        "integer `>= 1`.",
        "A name prints (its canonical form, the `measure` column of the results) as "
        "ir_measures prints it: NAME, then the parameters other than the cutoff that differ "
        "from their defaults, in the order the table lists them, as `key=repr(value)` "
        "joined by commas in parentheses, then `@k`. A parameter given at its default is left "
        "out: two spellings of one measure are one measure.",
    ]
    examples = ", ".join(f"`{name}`" for name in EXAMPLES)
    spellings = ", ".join(f"`{written}` is `{canonical}`" for written, canonical in SPELLINGS)
    return "\n".join([
        "```text", *block, "```", "",
        *(f"- {rule}" for rule in rules), "",
        f"Names in their canonical form: {examples}. Other spellings: {spellings}.", "",
    ])


def section() -> str:
    """What the page holds between its markers: the grammar, then the table."""
    return f"{grammar()}\n{measures_table()}"


def written(page_text: str, page: str = str(PAGE)) -> str:
    """The page's text with the generated grammar and table between its markers."""
    return spliced(page_text, BEGIN, END, section(), page)


def main(argv: list[str] | None = None) -> int:
    return regenerate(argv, command=COMMAND, default=PAGE, be="are",
                      what="the grammar and the table of the measures",
                      written=lambda text, page: written(text, str(page)))


if __name__ == "__main__":
    sys.exit(main())
