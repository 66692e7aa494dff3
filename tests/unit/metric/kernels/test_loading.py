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
        from evaluation_pipeline.metric.kernels import loading as kernel
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
        from evaluation_pipeline.metric.kernels import loading as kernel
        from evaluation_pipeline.metric.kernels.dcg import ideal_dcg
        kernel.warm_up()
        print(ideal_dcg(np.array([0, 2]), np.array([1.0, 3.0]), np.array([1, 2]),
                        np.empty(0))[0, 0])
    """)
    assert out == "3.0"


def test_spec_never_imports_numba_and_report_loads_only_the_resampling(tmp_path):
    # The kernels are imported where they are called: spec stays clear of the compiler's 0.3 s
    # import; report compiles its resampling pass (and the string buffers its query keys are
    # hashed from), never the scoring or the hash's line kernels.
    from evaluation_pipeline.cli.main import main
    from tests.support.paths import P28, V2

    out = tmp_path / "scored"
    assert main(["score", "--judgments", str(V2), "--run", str(P28), "--out", str(out)]) == 0
    loaded = _run(f"""
        import contextlib, io, sys
        from evaluation_pipeline.cli.main import main
        with contextlib.redirect_stdout(io.StringIO()):
            spec = main(["spec"])
            after_spec = any(name.split(".")[0] == "numba" for name in sys.modules)
            report = main(["report", {str(out)!r}, "--out", {str(tmp_path / "report")!r},
                           "--bootstrap", "200"])
        kernels = sorted(name for name in sys.modules
                         if name.endswith(("scoring_kernels", "line_kernels")))
        print(spec, after_spec, report, kernels)
    """)
    assert loaded == "0 False 0 []"
