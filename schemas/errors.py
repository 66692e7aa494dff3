"""Errors a user can cause: one base, and the bad-input error naming file, column, rule and rows."""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_EXAMPLES = 5
MAX_EXAMPLE_CHARS = 80  # a 30 MB cell is shown by its start, never whole

UNKNOWN_HINT = (
    "mark an unknown grade with grade_status 'unknown' and an empty grade; "
    "a null, NaN, blank or negative grade is never read as unknown"
)


@dataclass(frozen=True)
class RuleViolation:
    """One broken rule: the column it concerns, the rule in words, and example failing rows."""

    column: str
    rule: str
    rows: tuple[int, ...] = ()  # 1-based data rows (or file lines, see InputError.row_label)
    examples: tuple[str, ...] = ()
    count: int = 0

    def describe(self, row_label: str) -> str:
        total = self.count or len(self.rows)
        text = f"column {self.column!r}: {self.rule}"
        if total:
            shown = ", ".join(
                f"{row_label} {row}" + (f" ({value})" if value else "")
                for row, value in zip(self.rows, self.examples or ("",) * len(self.rows))
            )
            more = f" and {total - len(self.rows)} more" if total > len(self.rows) else ""
            text += f" [{total} row{'s' if total != 1 else ''}: {shown}{more}]"
        return text


class EvaluationError(ValueError):
    """Base of every error a user can cause (bad input, a bad option, a bad spec, a conflict).

    The CLI turns it into a message and exit status 2, the pipeline into a failed step with the
    same message; anything else is a bug and keeps its traceback.
    """


@dataclass
class InputError(EvaluationError):
    """Bad input, refused before anything is written."""

    source: str
    violations: list[RuleViolation] = field(default_factory=list)
    row_label: str = "row"

    def __post_init__(self) -> None:
        super().__init__(str(self))

    def __str__(self) -> str:
        lines = [f"{self.source}: invalid input"]
        lines += [f"  - {v.describe(self.row_label)}" for v in self.violations]
        return "\n".join(lines)


def violation(column: str, rule: str, rows, values=(), count: int | None = None) -> RuleViolation:
    """Build a violation from failing row numbers and their values, keeping a few examples."""
    rows = list(rows)
    values = [repr(_clip(v)) for v in list(values)[:MAX_EXAMPLES]]
    return RuleViolation(
        column=column,
        rule=rule,
        rows=tuple(int(r) for r in rows[:MAX_EXAMPLES]),
        examples=tuple(values),
        count=len(rows) if count is None else count,
    )


def _clip(value: object) -> object:
    """Shorten a long example value so that a message stays readable whatever the input."""
    if isinstance(value, str) and len(value) > MAX_EXAMPLE_CHARS:
        return value[: MAX_EXAMPLE_CHARS - 3] + "..."
    return value
