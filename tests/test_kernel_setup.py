"""Process set-up of the compiled kernels: loading them skips numba's BLAS probe, and leaves
scipy importable for whoever needs it after."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_warm_up_skips_the_blas_probe_and_scipy_still_imports():
    out = _run("""
        import sys
        from evaluation_pipeline.core import kernel
        kernel.warm_up()
        print("scipy.linalg" in sys.modules, sys.modules.get("scipy.linalg.cython_blas", 0))
        import scipy.linalg.cython_blas  # visible again
        from sklearn.metrics import ndcg_score
        print(ndcg_score([[1.0, 0.0]], [[0.5, 0.1]]))
    """)
    assert out.splitlines() == ["False 0", "1.0"]


def test_warm_up_after_scipy_is_loaded_changes_nothing():
    out = _run("""
        import scipy.linalg, numpy as np
        from evaluation_pipeline.core import kernel
        from evaluation_pipeline.core.scoring_kernels import ideal_dcg
        kernel.warm_up()
        print(ideal_dcg(np.array([0, 2]), np.array([1.0, 3.0]), np.array([1, 2]))[0, 0])
    """)
    assert out == "3.0"
