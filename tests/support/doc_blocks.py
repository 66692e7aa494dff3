"""The shell blocks of the documentation: where they are, in which order they run, and how a
block's shown output is compared with what it printed.

Every ```sh and ```bash block of README.md and docs/*.md runs verbatim, in DOC_ORDER (README.md
first), in one bash session from a copy of the checkout after `make run`. Each block starts in
the checkout's folder; variables it exports stay set for the blocks after it. A block whose
first line starts with NOT_RUN is skipped. A ```text block directly after a block is the output
it documents: a line that is exactly ELISION stands for any number of lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

# The order the blocks run in: each page may use what the pages before it wrote.
DOC_ORDER = (
    "README.md",
    "docs/cli.md",
    "docs/judging.md",
    "docs/python.md",
    "docs/spec.md",
    "docs/reconcile.md",
    "docs/pipeline.md",
    "docs/reliability.md",
    "docs/object-storage.md",
    "docs/spark.md",
    "docs/deployment.md",
    "docs/dagster.md",
    "docs/configuration.md",
    "docs/CONTRACT.md",
)
SHELLS = ("sh", "bash")
NOT_RUN = "# not run:"
ELISION = "..."
OUTPUT = "text"

_FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w+-]*)\s*$")


@dataclass(frozen=True)
class Block:
    path: str  # relative to the checkout
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    output: str | None = None  # the ```text block directly after it, if any

    @property
    def runs(self) -> bool:
        return self.lang in SHELLS and not self.first_line.startswith(NOT_RUN)

    @property
    def first_line(self) -> str:
        lines = self.text.splitlines()
        return lines[0].strip() if lines else ""

    def where(self) -> str:
        return f"{self.path}:{self.line}"


def fenced_blocks(path: str, root: Path = REPO) -> list[Block]:
    """Every fenced block of a Markdown file, each with the text block that directly follows."""
    lines = (root / path).read_text(encoding="utf-8").splitlines()
    raw: list[tuple[int, int, str, str]] = []  # (start, end, lang, text)
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent = len(opening["indent"])
        body = []
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            body.append(lines[end][indent:] if lines[end][:indent].strip() == "" else lines[end])
            end += 1
        raw.append((index, end, opening["lang"], "\n".join(body) + "\n"))
        index = end + 1
    blocks = []
    for number, (start, end, lang, text) in enumerate(raw):
        output = None
        if number + 1 < len(raw):
            next_start, _, next_lang, next_text = raw[number + 1]
            between = lines[end + 1:next_start]
            if next_lang == OUTPUT and all(not line.strip() for line in between):
                output = next_text
        blocks.append(Block(path, start + 1, lang, text, output))
    return blocks


def shell_blocks(path: str, root: Path = REPO) -> list[Block]:
    return [block for block in fenced_blocks(path, root) if block.lang in SHELLS]


def documented_pages(root: Path = REPO) -> list[str]:
    """README.md and every page under docs/, as paths relative to the checkout."""
    return ["README.md"] + sorted(
        str(page.relative_to(root)) for page in (root / "docs").glob("*.md"))


def _normalized(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def output_matches(shown: str, printed: str) -> bool:
    """True when ``printed`` is ``shown``, trailing whitespace aside, with each ELISION line of
    ``shown`` standing for any number of printed lines."""
    pattern = "".join(
        r"(?:[^\n]*\n)*?" if line == ELISION else re.escape(line) + r"\n"
        for line in _normalized(shown))
    text = "".join(line + "\n" for line in _normalized(printed))
    return re.fullmatch(pattern, text) is not None
