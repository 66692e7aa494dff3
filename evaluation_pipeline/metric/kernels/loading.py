"""The compiled kernels (numba) over blocks of whole queries, and the loading of them.

A *block* is the candidates of one (ranker, query), contiguous rows ``starts[b]:starts[b+1]``.
String columns are read in place from their Arrow buffers (``offsets``, ``data``) and compared
byte-wise, which is the canonical order of docs/CONTRACT.md, section 1. Each block is small
(tens to thousands of rows), so per block a merge sort and a linear merge with the query's
judgments are cheap, and the whole pass is one compiled loop instead of a multi-column string
sort over the run (five times slower here) plus a string join. The kernels:

- ``metric.kernels.strings``: byte-wise comparison, each block's doc_id order, Arrow string views
  copied into one buffer;
- ``metric.kernels.dcg``: DCG, the ideal DCG, judged@K and counts per block;
- ``metric.kernels.lines``: the canonical lines of the content hash;
- ``metric.kernels.intrinsics``: the single-load byte moves they share;
  ``metric.kernels.codes``: their codes.

Everything is compiled with ``cache=True`` (the first process compiles, later ones load) and
``nogil=True`` (the content hash runs on a second thread while the kernel scores). numba's cache
is checked against the file of the function it compiled only, not the files of the helpers it
calls: after editing a kernel module, delete ``metric/kernels/__pycache__/*.nb[ic]`` so that the
kernels of the other modules recompile too.

Importing numba takes 0.3 s of one core, holding the interpreter: modules that call a kernel
import its module inside the function that calls it, so that commands that never score
(``spec``, ``report``) never pay it, and a command that starts by reading files pays it best once
the first read is under way (see ``engines.local``).
"""

from __future__ import annotations

import sys

import numpy as np


def load() -> None:
    """Import numba and the kernel modules. Safe from any thread: a second caller waits for the
    first one's import."""
    from evaluation_pipeline.metric.kernels import dcg as scoring_kernels  # noqa: F401
    from evaluation_pipeline.metric.kernels import lines as line_kernels  # noqa: F401
    from evaluation_pipeline.metric.kernels import strings as string_kernels  # noqa: F401


def warm_up() -> None:
    """Start the compiler and load a cached kernel (about half a second, once per process, paid
    by whichever kernel runs first): call on a spare thread while files are read, so that the
    first real call does not pay it."""
    load()
    _load_array_functions()
    from evaluation_pipeline.metric.kernels.dcg import ideal_dcg

    ideal_dcg(*read_only((np.array([0, 1], dtype=np.int64), np.ones(1),
                          np.array([1], dtype=np.int64), np.empty(0))))


def read_only(value):
    """``value`` (an array, or a tuple of a kernel's input arrays, nested) with each array a
    read-only C-contiguous view: no copy for an array that already is contiguous. numba
    compiles a kernel once for each mix of read-only and writable arrays it is called with,
    and polars hands out read-only arrays where numpy's are writable, so the same call could
    need a new compilation: score_blocks had eleven, some 3 s each on a new machine. Only
    inputs: the kernels do not write into them."""
    if isinstance(value, np.ndarray):
        view = np.ascontiguousarray(value).view()
        view.flags.writeable = False
        return view
    if isinstance(value, tuple):
        items = [read_only(item) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    return value


_BLAS_PROBE = "scipy.linalg.cython_blas"


def _load_array_functions() -> None:
    """numba's array functions, loaded without its BLAS probe. Loading them, numba imports
    scipy.linalg (when scipy is installed) to see whether BLAS is there: 0.3 to 0.5 s of CPU
    here, taken from the threads reading the inputs. No kernel calls BLAS, so the probe's module
    is hidden (its import fails: "no BLAS") while they load, and is visible again after. Once a
    process has imported scipy.linalg, nothing is hidden."""
    if "numba.np.arraymath" in sys.modules or _BLAS_PROBE in sys.modules:
        return
    sys.modules[_BLAS_PROBE] = None
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        if sys.modules.get(_BLAS_PROBE, 0) is None:
            del sys.modules[_BLAS_PROBE]
