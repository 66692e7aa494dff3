"""The checkout, its example data, and the conformance data beside it."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
CONFORMANCE = SHARED / "conformance" / "trec_eval"
EXAMPLES = REPO / "examples" / "data"

# The example landing: two judgment versions and two pools.
LANDING = EXAMPLES / "landing"
V1, V2 = LANDING / "judgments" / "maint-v1.csv", LANDING / "judgments" / "maint-v2.csv"
P28, P29 = LANDING / "pools" / "pool-2026-11-28", LANDING / "pools" / "pool-2026-11-29"
