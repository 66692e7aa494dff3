"""The memory budget every step works within: how much the whole process may hold, the
folder it may spill to, and the errors of a step that cannot finish within them.

The budget is set once (``--memory-limit`` and ``--spill-dir``, the memory resource's fields,
else ``NDCG_EVAL_MEMORY_LIMIT`` and ``NDCG_EVAL_SPILL_DIR``) and handed to every step that
holds rows or spills them: the ingest's external sort, the engines' choice and their sorts of
unsorted input, the incremental scoring. It lives here, beside the writers whose full disks
it names, so that each of those layers takes it from below.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow as pa

from evaluation_pipeline import settings
from evaluation_pipeline.io import leftovers
from evaluation_pipeline.io.atomic import WriteFailed, is_full_disk, spill_scratch
from schemas.errors import EvaluationError

DEFAULT_MEMORY_LIMIT = 2 * 1000**3  # "2GB"
_MIN_LIMIT = 16 * 1000**2

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3,
          "gb": 1000**3, "t": 1000**4, "tb": 1000**4, "kib": 1024, "mib": 1024**2,
          "gib": 1024**3, "tib": 1024**4}
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-z]*)\s*$", re.IGNORECASE)


class MemoryBudgetError(EvaluationError):
    """A step that cannot finish within the memory budget (or its spill folder)."""

    def __init__(self, step: str, limit: int, detail: str) -> None:
        self.step, self.limit = step, limit
        super().__init__(
            f"{step}: cannot finish within the memory budget of {format_bytes(limit)} "
            f"({detail}). Raise it with --memory-limit or {settings.MEMORY_LIMIT.name} "
            f"(e.g. 4GB), or point {settings.SPILL_DIR.name} at a folder with more free disk.")


class SpillFolderFull(MemoryBudgetError):
    """A sort that spilled until its spill folder's disk (or its cap) was full."""

    def __init__(self, step: str, limit: int, folder: Path, detail: str) -> None:
        self.step, self.limit, self.folder = step, limit, folder
        try:
            free = f"{format_bytes(shutil.disk_usage(folder).free)} free now"
        except OSError:
            free = "its free space unknown"
        EvaluationError.__init__(
            self, f"{step}: the spill folder {str(folder)!r} is full ({free}; {detail}). Point "
            f"--spill-dir or {settings.SPILL_DIR.name} (the memory resource's spill_dir) at a "
            "folder with more free disk, free some there, or raise --memory-limit or "
            f"{settings.MEMORY_LIMIT.name} so that less spills.")


def parse_memory_limit(text: str | int | None) -> int:
    """Bytes of a budget written by a person: ``"2GB"``, ``"512MB"``, ``"1.5G"``, ``"4GiB"``,
    ``"1000000"``. KB, MB, GB, TB (and K, M, G, T) are powers of 1000; KiB, MiB, GiB, TiB of
    1024. ``None`` or ``""``: ``NDCG_EVAL_MEMORY_LIMIT``, else 2 GB."""
    named = "memory limit"
    if text is None or (isinstance(text, str) and not text.strip()):
        if settings.MEMORY_LIMIT.get():
            named = settings.MEMORY_LIMIT.name
        text = settings.MEMORY_LIMIT.get() or DEFAULT_MEMORY_LIMIT
    if isinstance(text, int):
        value = text
    else:
        match = _SIZE.match(text)
        unit = match.group(2).lower() if match else None
        if unit not in _UNITS:
            raise EvaluationError(f"{named} {text!r} is not a size: write e.g. 2GB, "
                                  "512MB, 1.5GB or 4GiB")
        value = int(float(match.group(1)) * _UNITS[unit])
    if value < _MIN_LIMIT:
        raise EvaluationError(f"{named} {text!r} is below {format_bytes(_MIN_LIMIT)}: "
                              "too small for any step")
    return value


def format_bytes(size: int) -> str:
    for unit, scale in (("GB", 1000**3), ("MB", 1000**2)):
        if size >= scale:
            return f"{size / scale:.3g}{unit}"
    return f"{size}B"


@dataclass(frozen=True)
class Budget:
    """The memory a step may use (bytes, for the whole process), the folder it may spill to,
    and at most how many bytes it may spill (``None``: the folder's free disk)."""

    memory_limit: int
    spill_dir: Path
    max_spill: int | None = None

    @classmethod
    def of(cls, memory_limit: int | str | None = None, spill_dir: str | Path | None = None,
           max_spill: int | None = None) -> Budget:
        """From options as given (``--memory-limit``, a resource field), each falling back to
        ``NDCG_EVAL_MEMORY_LIMIT`` (else 2 GB) and ``NDCG_EVAL_SPILL_DIR`` (else the system's
        temporary folder)."""
        folder = Path(spill_dir or settings.SPILL_DIR.get() or tempfile.gettempdir())
        return cls(parse_memory_limit(memory_limit), folder, max_spill)

    def check_spill_dir(self) -> None:
        """Refuse a spill folder that is a file, or that cannot be created or written, before
        any step runs (it is created only when a step spills)."""
        existing = self.spill_dir
        while not existing.exists() and existing.parent != existing:
            existing = existing.parent
        if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
            raise EvaluationError(
                f"spill folder {str(self.spill_dir)!r} cannot be written: "
                f"{str(existing)!r} is not a writable folder "
                f"(--spill-dir, {settings.SPILL_DIR.name})")

    @contextmanager
    def scratch(self, prefix: str) -> Iterator[str]:
        """A temporary folder under the spill folder (created if missing), removed on exit;
        held while in use, so that the next run removes it if this one is killed
        (io.leftovers)."""
        with (leftovers.scratch_folder(prefix, self.spill_dir) as folder,
              spill_scratch(folder, self._full)):
            yield str(folder)

    def _full(self, error: OSError, place: str) -> SpillFolderFull:
        """A file bound for ``place`` that the spill folder's full disk stopped: the spill
        folder's error (``io.atomic.named_in``), not a write of ``place``'s."""
        return SpillFolderFull(f"staging {place}", self.memory_limit,
                               configured_folder(self.spill_dir), _reason(error))

    @contextmanager
    def spill_writes(self, step: str, keep: Path | None = None) -> Iterator[None]:
        """The block's files written under the spill folder fail for its full disk as
        :class:`SpillFolderFull` naming it, not as a write of the file they are for (polars'
        bare ``ComputeError``, or the published file's name). ``keep``: a file whose failure
        stays a ``WriteFailed`` of its own, for its caller to name."""
        try:
            yield
        except (OSError, pl.exceptions.PolarsError, pa.ArrowException) as exc:
            spilled = (not isinstance(exc, WriteFailed)
                       or (_inside(Path(exc.filename), self.spill_dir)
                           and Path(exc.filename) != keep))
            if not (spilled and is_full_disk(exc)):
                raise
            raise SpillFolderFull(step, self.memory_limit, configured_folder(self.spill_dir),
                                  _reason(exc)) from None


def configured_folder(folder: Path) -> Path:
    """``folder``, or the spill folder it is a scratch folder of (a sort's budget spills in
    the ingest's scratch folder)."""
    while folder.name.startswith(leftovers.SCRATCH_PREFIXES) and folder.parent != folder:
        folder = folder.parent
    return folder


def _reason(error: BaseException) -> str:
    """Why a write failed, without the scratch file's name a ``WriteFailed`` carries."""
    return (error.strerror if isinstance(error, OSError) and error.strerror
            else first_line(error))


def _inside(path: Path, folder: Path) -> bool:
    return os.path.realpath(path).startswith(os.path.realpath(folder) + os.sep)


def first_line(error: BaseException) -> str:
    """An error's first line, cut at 300 characters (DuckDB's messages run on)."""
    return str(error).strip().splitlines()[0][:300]
