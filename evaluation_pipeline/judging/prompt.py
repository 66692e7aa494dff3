"""The judge's prompt: a versioned template file, its SHA-256, the prompt of one pair, and the
grade a reply gives (contract section 1, Judge ratings).

A template is plain text sent as the one user message of a chat completion. Its placeholders
are ``{query}``, ``{passage}`` (the document's title, a blank line and its text; the text alone
when it has no title), ``{title}`` and ``{text}``: what the cache key covers; ``{{`` and
``}}`` write a brace. ``{query}`` and one of ``{passage}`` or ``{text}`` are required, and any
other ``{name}`` is refused, so that a typo never sends a prompt without its document.

The default template (``templates/umbrela-v1.txt``) follows UMBRELA's zero-shot "bing" prompt
(castorini/umbrela, ``src/umbrela/prompts/qrel_zeroshot_bing.txt``; Upadhyay et al., 2024,
arXiv:2406.06519): grades 0 to 3, the reply ending in ``##final score: N``.

A reply's grade is read, never guessed: the last ``final score: N`` in it (any ``#`` and
spaces before it, a ``<think>`` block dropped first), or a reply that is nothing but a whole
number. A reply with neither, or with a number outside the template's scale, has no grade: the
rating is ``unknown``, with the reason.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from schemas.errors import EvaluationError

DEFAULT_TEMPLATE = "umbrela-v1"
TEMPLATES = "templates"  # beside this module (package data)
TEMPLATE_SUFFIX = ".txt"
# The grades of the default template (UMBRELA's scale).
GRADES = (0, 3)
PLACEHOLDERS = ("query", "passage", "title", "text")
REQUIRED = ("query",)
DOCUMENT_PLACEHOLDERS = ("passage", "text")  # one of them at least

_FIELD = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
_THINKING = re.compile(r"<think>.*?</think>", re.S | re.I)
_FINAL = re.compile(r"#*\s*final[\s_]*score\s*[:=]?\s*\**\s*(-?\d+)", re.I)
_BARE = re.compile(r"^\W*(-?\d+)\W*$")


class TemplateError(EvaluationError):
    """A template file that cannot be read, or whose placeholders are wrong."""


@dataclass(frozen=True)
class Template:
    name: str  # the file's stem: umbrela-v1
    text: str
    grades: tuple[int, int] = GRADES  # the scale a reply's grade must lie in, both ends in

    @property
    def sha256(self) -> str:
        """The SHA-256 of the template's UTF-8 bytes: what the cache key and every rating
        name it by (two templates that differ by a byte differ here)."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def render(self, query: str, title: str | None, text: str) -> str:
        values = {"query": query, "passage": passage(title, text), "title": title or "",
                  "text": text}

        def fill(match: re.Match) -> str:
            whole = match.group(0)
            if whole in ("{{", "}}"):
                return whole[0]
            return values[match.group(1)]

        return _FIELD.sub(fill, self.text)


def passage(title: str | None, text: str) -> str:
    """What the judge reads of a document: its title, a blank line and its text."""
    return f"{title.strip()}\n\n{text}" if title and title.strip() else text


def default_template() -> Template:
    text = resources.files(__package__).joinpath(
        TEMPLATES, DEFAULT_TEMPLATE + TEMPLATE_SUFFIX).read_text(encoding="utf-8")
    return checked(Template(DEFAULT_TEMPLATE, text), "the default template")


def load_template(path: Path | None) -> Template:
    """The template of ``path`` (the default one for None), its placeholders checked."""
    if path is None:
        return default_template()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TemplateError(f"--template {path}: cannot read it ({exc})") from None
    return checked(Template(Path(path).stem, text), f"--template {path}")


def checked(template: Template, where: str) -> Template:
    found = [m.group(1) for m in _FIELD.finditer(template.text) if m.group(1) is not None]
    unknown = sorted({name for name in found if name not in PLACEHOLDERS})
    if unknown:
        raise TemplateError(
            f"{where}: unknown placeholder{'s' * (len(unknown) > 1)} "
            f"{', '.join('{' + n + '}' for n in unknown)}; the placeholders are "
            f"{', '.join('{' + n + '}' for n in PLACEHOLDERS)} (write {{{{ and }}}} for a brace)")
    missing = [name for name in REQUIRED if name not in found]
    if not any(name in found for name in DOCUMENT_PLACEHOLDERS):
        missing.append(" or ".join(DOCUMENT_PLACEHOLDERS))
    if missing:
        raise TemplateError(f"{where}: the template has no {{{', '.join(missing)}}}: the judge "
                            "would not see what it grades")
    return template


def parse_grade(reply: str | None, grades: tuple[int, int] = GRADES
                ) -> tuple[int | None, str | None]:
    """(the grade, None), or (None, why there is none): the reply's last ``final score: N``,
    or a reply that is a whole number alone; never a guess."""
    if reply is None or not reply.strip():
        return None, "empty reply"
    text = _THINKING.sub("", reply).strip()
    found = _FINAL.findall(text)
    number = found[-1] if found else None
    if number is None:
        bare = _BARE.match(text)
        number = bare.group(1) if bare else None
    if number is None:
        return None, "no grade in the reply (expected '##final score: N')"
    grade = int(number)
    low, high = grades
    if not low <= grade <= high:
        return None, f"grade {grade} is outside the scale {low} to {high}"
    return grade, None
