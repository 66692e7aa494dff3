"""`make run`: score the bundled example data (every judgment version x candidate pool)."""

from __future__ import annotations

import sys
from pathlib import Path

from evaluation_pipeline.cli import main as cli_main

REPO = Path(__file__).resolve().parents[1]
LANDING = REPO / "examples" / "data" / "landing"
OUT = REPO / "out"


def main() -> int:
    for judgments in sorted((LANDING / "judgments").glob("*.csv")):
        for pool in sorted(p for p in (LANDING / "pools").iterdir() if (p / "_READY").exists()):
            out = OUT / f"{pool.name}__{judgments.stem}"
            print(f"\n== pool {pool.name} x judgments {judgments.stem}")
            code = cli_main(["score", "--judgments", str(judgments), "--run", str(pool),
                             "--queries", str(REPO / "examples" / "data" / "queries.csv"),
                             "--out", str(out)])
            if code:
                return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
