"""A sort killed mid-spill, for the leftover tests: the nested scratch folders ingest and the
external sort make in a spill folder, with a spill file in them."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path


def spilling_writer(spill: Path) -> subprocess.Popen:
    """A process inside a sort's nested scratch folders (as ingest then the external sort make
    them), with a spill file written, waiting to be killed."""
    code = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from evaluation_pipeline.io.budget import Budget
        budget = Budget.of("300MB", {str(spill)!r})
        with budget.scratch("ndcg-eval-ingest-") as outer:
            inner = Budget.of("300MB", outer)
            with inner.scratch("ndcg-eval-spill-") as folder:
                (Path(folder) / "duckdb_temp_storage-0.tmp").write_bytes(b"x" * 4096)
                print("ready", flush=True)
                time.sleep(60)
    """)
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "ready"
    return process


def killed_in(spill: Path) -> Path:
    process = spilling_writer(spill)
    process.send_signal(signal.SIGKILL)
    process.wait()
    (left,) = [p for p in spill.iterdir() if p.name.startswith("ndcg-eval-ingest-")]
    return left
