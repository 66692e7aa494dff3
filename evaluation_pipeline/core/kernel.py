"""Compiled loops over blocks of whole queries: the inner steps of scoring and hashing.

A *block* is the candidates of one (ranker, query), contiguous rows ``starts[b]:starts[b+1]``.
String columns are read in place from their Arrow buffers (``offsets``, ``data``) and compared
byte-wise, which is the canonical order of contract section 1. Each block is small (tens to
thousands of rows), so per block a merge sort and a linear merge with the query's judgments are
cheap, and the whole pass is one compiled loop instead of a multi-column string sort over the
run (five times slower here) plus a string join.

Everything is compiled with ``cache=True`` (the first process compiles, later ones load) and
``nogil=True`` (the content hash runs on a second thread while the kernel scores).

The loops live in ``core.loops`` and are loaded on first use (``kernel.score_blocks`` and the
like, or :func:`load`): importing numba takes 0.3 s of one core, holding the interpreter, and a
command that starts by reading files pays it best once the first read is under way (see
``engines.local``). Commands that never score (``spec``, ``report``) never pay it.
"""

from __future__ import annotations

from types import ModuleType

# Grade classes of a candidate, as the loops see them.
GRADED, UNKNOWN, UNJUDGED = 0, 1, 2
# Tie rules (spec.ties) as the loops see them.
TIES_AVERAGE, TIES_DOC_ASC, TIES_DOC_DESC = 0, 1, 2


def load() -> ModuleType:
    """The compiled loops (``core.loops``), imported on the first call. Safe from any thread:
    a second caller waits for the first one's import."""
    from evaluation_pipeline.core import loops

    return loops


def warm_up() -> None:
    """Import numba and load a cached loop (about half a second, once per process, paid by
    whichever compiled function runs first): call on a spare thread while files are read, so
    that the first real call does not pay it."""
    load().warm_up()


def __getattr__(name: str):
    # kernel.score_blocks and the rest: the loops module's, loaded on first use.
    if name.startswith("__"):
        raise AttributeError(name)
    return getattr(load(), name)
