"""Measure names in ir_measures' syntax, parsed into one canonical :class:`Measure`.

The grammar (whitespace around tokens is ignored)::

    measure  := NAME [ "(" param { "," param } ")" ] [ "@" CUTOFF ]
    param    := KEY "=" value
    value    := INTEGER | DECIMAL | "True" | "False" | "'" text "'" | '"' text '"' | WORD
    NAME     := a declared measure or alias (declarations.DECLARATIONS): nDCG, DCG, RR, AP, P,
                R, Success, Judged, Rprec, Bpref, ERR, RBP; NDCG, MRR, MAP, Precision, Recall,
                RPrec, BPref
    CUTOFF   := an integer >= 1; ``@k`` and ``cutoff=k`` are one parameter
    WORD     := [A-Za-z0-9._-]+, read as text (``dcg=exp-log2``, unquoted, as users type it)

A measure prints as ir_measures prints it: the name, then the parameters that differ from their
defaults in the order the measure declares them (``key=repr(value)``), then ``@cutoff``:
``nDCG(dcg='exp-log2')@10``, ``RR(rel=2)@10``, ``RBP(p=0.5)``; ``RBP(p=0.8)`` is ``RBP``. Two
names of one measure parse to equal objects.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from evaluation_pipeline.measures.declarations import (
    ALIASES,
    BY_NAME,
    NOT_PROVIDED,
    Declaration,
)
from schemas.errors import EvaluationError


class MeasureError(EvaluationError):
    """A measure name that does not parse, or names a parameter its measure lacks."""


@dataclass(frozen=True)
class Measure:
    """A declared measure with its parameters: ``params`` holds those that differ from their
    defaults, in declaration order; ``str()`` is the canonical name."""

    name: str
    params: tuple[tuple[str, object], ...] = ()

    @property
    def declaration(self) -> Declaration:
        return BY_NAME[self.name]

    def __getitem__(self, key: str) -> object:
        """The parameter's value, its default when not given (``NOT_PROVIDED`` when none)."""
        return dict(self.params).get(key, self.declaration.params[key].default)

    @property
    def cutoff(self) -> int | None:
        value = self["cutoff"] if "cutoff" in self.declaration.params else NOT_PROVIDED
        return None if value is NOT_PROVIDED else value

    def __str__(self) -> str:
        shown = ",".join(f"{k}={v!r}" for k, v in self.params if k != "cutoff")
        text = f"{self.name}({shown})" if shown else self.name
        return f"{text}@{self.cutoff}" if self.cutoff is not None else text


def average_ties_refusal(measure: Measure) -> str | None:
    """Why ``measure`` cannot be scored under ``ties: average`` (its declaration refuses it),
    or None when it can: the one wording of the refusal, for the spec's check and the plan's."""
    declaration = measure.declaration
    if declaration.average_ties:
        return None
    return (f"{measure} is not defined under ties: average ({declaration.ties}); set ties to "
            "trec_eval, doc_id or rank")


_NAME = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*")
_AT = re.compile(r"@\s*([0-9]+)\s*$")
_PARAM = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*("
                    r"'[^']*'|\"[^\"]*\"|[A-Za-z0-9._+-]+)\s*$")
_FORM = ("NAME, NAME@CUTOFF, NAME(key=value,...) or NAME(key=value,...)@CUTOFF, "
         "e.g. nDCG@10, RR(rel=2)@10, AP(rel=2), RBP(p=0.8)")


def parse_measure(text: str) -> Measure:
    """The measure ``text`` names (ir_measures' syntax; module docstring's grammar)."""
    if not isinstance(text, str) or not text.strip():
        raise MeasureError(f"measure {text!r}: expected {_FORM}")
    body, at = text.strip(), None
    found = _AT.search(body)
    if found:
        body, at = body[:found.start()].rstrip(), int(found.group(1))
    head = _NAME.match(body)
    if not head:
        raise MeasureError(f"measure {text!r} does not parse: expected {_FORM}")
    name, rest = head.group(1), body[head.end():]
    declaration = _declaration(name, text)
    given: dict[str, object] = {}
    if rest:
        if not (rest.startswith("(") and rest.endswith(")")):
            raise MeasureError(f"measure {text!r} does not parse after {name!r}: expected "
                               f"{_FORM}")
        inner = rest[1:-1].strip()
        for part in inner.split(",") if inner else ():
            match = _PARAM.match(part)
            if not match:
                raise MeasureError(f"measure {text!r}: parameter {part.strip()!r} does not "
                                   "parse: expected key=value")
            key, value = match.group(1), _value(match.group(2))
            if key in given:
                raise MeasureError(f"measure {text!r}: parameter {key!r} is given twice")
            given[key] = value
    if at is not None:
        if "cutoff" in given:
            raise MeasureError(f"measure {text!r}: the cutoff is given twice (@ and cutoff=)")
        given["cutoff"] = at
    return _measure(declaration, given, text)


def _declaration(name: str, text: str) -> Declaration:
    name = ALIASES.get(name, name)
    if name in BY_NAME:
        return BY_NAME[name]
    known = sorted([*BY_NAME, *ALIASES])
    near = difflib.get_close_matches(name, known, n=3, cutoff=0.4) or difflib.get_close_matches(
        name.lower(), [k.lower() for k in known], n=1, cutoff=0.4)
    hint = f"; did you mean {' or '.join(near)}?" if near else ""
    raise MeasureError(f"measure {text!r}: unknown measure {name!r}, expected one of "
                       f"{', '.join(BY_NAME)}{hint}")


def _value(token: str) -> object:
    if token[0] in "'\"":
        return token[1:-1]
    if token in ("True", "False"):
        return token == "True"
    if re.fullmatch(r"[+-]?[0-9]+", token):
        return int(token)
    if re.fullmatch(r"[+-]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?[0-9]+[eE][+-]?[0-9]+",
                    token):
        return float(token)
    return token


def _measure(declaration: Declaration, given: dict[str, object], text: str) -> Measure:
    for key in given:
        if key not in declaration.params:
            near = difflib.get_close_matches(key, list(declaration.params), n=1, cutoff=0.5)
            hint = f"; did you mean {near[0]}?" if near else ""
            allowed = ", ".join(declaration.params) or "none"
            raise MeasureError(f"measure {text!r}: {declaration.name} has no parameter {key!r} "
                               f"(its parameters: {allowed}){hint}")
    params = []
    for key, info in declaration.params.items():
        if key not in given:
            if info.required:
                raise MeasureError(f"measure {text!r}: {declaration.name} needs a {key}: "
                                   f"write {declaration.name}@K (K an integer >= 1)")
            continue
        value = given[key]
        problem = info.check(value)
        if problem:
            raise MeasureError(f"measure {text!r}: {key}={value!r} is not allowed: "
                               f"{declaration.name}'s {key} is {problem} ({info.desc})")
        if info.dtype is float:
            value = float(value)
        if value != info.default or key == "cutoff":
            params.append((key, value))
    return Measure(declaration.name, tuple(params))
