"""The ``ndcg-eval`` process (also ``python -m evaluation_pipeline``).

Set up before the first import of numpy, numba and polars, which this module must precede:

- OpenBLAS threads: nothing here calls BLAS, but its idle threads spin after numpy's first
  call into it, and took CPU from the scoring threads on a 2-core machine.
- The cyclic garbage collector is paused while the CLI's modules load (collections during the
  imports took 0.12 s of 1.07 s here); the loaded modules are then frozen, never scanned
  again, and collection resumes.
"""

import gc
import os


def run() -> None:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    gc.disable()
    from evaluation_pipeline.cli import main as cli

    gc.freeze()
    gc.enable()
    cli.run()


if __name__ == "__main__":
    run()
