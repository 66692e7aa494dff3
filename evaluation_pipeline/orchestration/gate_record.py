"""The gate's verdicts in the pipeline's storage, and what the nightly reads of them: a version
whose verdict says refused is published, scored and reported like any other, but is never the
night's headline version; the last promoted one stays it (docs/judging.md, In Dagster).

    judging/<version>/gate.json         the verdict (judging.gate.Verdict.to_dict())
    judging/<version>/ratings.parquet   every rating, people's and the judge's, with provenance

The ``judgments_llm`` asset writes both before it lands the version, so the version is never
published without its verdict. A version landed by hand has no verdict, and is taken as it
always was.
"""

from __future__ import annotations

from evaluation_pipeline.orchestration.resources import EvaluationStorage
from schemas.errors import EvaluationError

JUDGING_FOLDER = "judging"
VERDICT_FILE = "gate.json"
RATINGS_FILE = "ratings.parquet"


def verdict_place(version: str) -> tuple[str, ...]:
    return (JUDGING_FOLDER, version, VERDICT_FILE)


def ratings_place(version: str) -> tuple[str, ...]:
    return (JUDGING_FOLDER, version, RATINGS_FILE)


def recorded_verdict(storage: EvaluationStorage, version: str) -> dict | None:
    """The gate's verdict recorded for ``version``, or None when it was never gated."""
    place = verdict_place(version)
    if not storage.exists(*place):
        return None
    try:
        return storage.read_json(*place)
    except (EvaluationError, ValueError):
        # An unreadable verdict proves no promotion: the version is treated as refused.
        return {"promoted": False, "reason": f"{storage.path(*place)} cannot be read"}


def refused(storage: EvaluationStorage, version: str) -> bool:
    verdict = recorded_verdict(storage, version)
    return verdict is not None and not verdict.get("promoted", False)


def headline_candidates(storage: EvaluationStorage, versions: dict[str, dict]
                        ) -> dict[str, dict]:
    """``versions`` (name -> manifest, in their order) without those the gate refused: the
    versions the nightly may take as its headline."""
    return {version: manifest for version, manifest in versions.items()
            if not refused(storage, version)}
