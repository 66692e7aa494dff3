"""How a field of the evaluation spec is declared, and what comes from its one declaration.

A field of ``EvaluationSpec`` is a dataclass field whose metadata holds a ``SpecField``: the
dataclass gives its name, type and default; the ``SpecField`` its named choices (each with its
words in result sentences) or the parser of an open value, its canonical form, its one-line
meaning and the contract section it follows. Checking a value, the canonical form hashed into
``spec_id``, the conventions sentence, ``ndcg-eval spec``'s lines and the docs' tables are all
read from it, so a field is added in one place. A field with a structured value (a list of
measures, a gain map) brings its parser, its canonical form and how it is shown.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from schemas.errors import EvaluationError

_KEY = "spec_field"
UNSET = "unset"


class SpecError(EvaluationError):
    """A spec field has a value outside its declared choices."""


@dataclasses.dataclass(frozen=True)
class SpecField:
    # One line: `ndcg-eval spec`, report.html, the docs' tables and the field's error messages.
    meaning: str
    # Where the contract defines what the field does, as "section N" or "section N, rule M".
    contract: str
    # The named values, each with its words in the conventions sentence (contract section 4).
    choices: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # What the field takes besides its named choices, in Markdown, for the docs' tables.
    values: str = ""
    # An open value's parser: the value as the spec holds it, or SpecError naming the field. It
    # owns the whole check, named choices included; without it a value must be a choice.
    parse: Callable[[Any], Any] | None = None
    # The held value as the canonical form (and so spec_id) writes it; JSON-ready.
    canonical: Callable[[Any], Any] | None = None
    # The conventions sentence's words for a value that is not a named choice (None: no words).
    words: Callable[[Any], str | None] | None = None
    # The value as `ndcg-eval spec` shows it, when the canonical JSON value would not read well.
    show: Callable[[Any], str] | None = None
    # Unset (None) by default and then left out of the canonical form: adding such a field kept
    # the spec_id of every spec that does not set it.
    optional: bool = False
    # From the dataclass field (``declared``).
    name: str = ""
    type: str = ""
    default: Any = None

    def check(self, value: Any) -> Any:
        """The value as the spec holds it, or SpecError naming the field, its choices and its
        meaning."""
        if self.optional and value is None:
            return None
        if self.parse is not None:
            return self.parse(value)
        if isinstance(value, str) and value in self.choices:
            return value
        raise SpecError(f"spec field {self.name!r}: {value!r} is not one of "
                        f"{', '.join(self.choices)} ({self.meaning})")

    def is_set(self, value: Any) -> bool:
        """Whether the value belongs in the canonical form."""
        return not (self.optional and value is None)

    def to_json(self, value: Any) -> Any:
        return value if self.canonical is None else self.canonical(value)

    def words_for(self, value: Any) -> str | None:
        if isinstance(value, str) and value in self.choices:
            return self.choices[value]
        if value is None or self.words is None:
            return None
        return self.words(value)

    def shown(self, value: Any) -> str:
        if value is None:
            return UNSET
        return self.show(value) if self.show is not None else str(self.to_json(value))

    @property
    def default_json(self) -> Any:
        """The default in the canonical form; None for an optional field, unset by default."""
        return self.to_json(self.default) if self.is_set(self.default) else None


def declare(default: Any, meaning: str, *, contract: str, **rest: Any) -> Any:
    """A spec field of the dataclass: its default, and the rest of its declaration (the
    arguments of ``SpecField``) kept in the field's metadata."""
    return dataclasses.field(
        default=default,
        metadata={_KEY: SpecField(meaning=meaning, contract=contract, **rest)})


def declared(spec_class: type) -> tuple[SpecField, ...]:
    """The declarations of a spec dataclass's fields, in their order, each with its name, type
    and default."""
    undeclared = [field.name for field in dataclasses.fields(spec_class)
                  if _KEY not in field.metadata]
    if undeclared:
        raise TypeError(f"{spec_class.__name__}: field(s) {', '.join(undeclared)} not made "
                        "by spec_fields.declare")
    return tuple(
        dataclasses.replace(field.metadata[_KEY], name=field.name, type=str(field.type),
                            default=field.default)
        for field in dataclasses.fields(spec_class))
