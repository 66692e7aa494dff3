"""A spec named as the commands and the Python API take one: a profile's name, else a spec
file's path."""

from __future__ import annotations

from pathlib import Path

from evaluation_pipeline.spec import PROFILES, EvaluationSpec, SpecError, load_spec


def spec_named(text: str) -> EvaluationSpec:
    """A profile by name, otherwise a spec file."""
    if text in PROFILES:
        return PROFILES[text]
    if not Path(text).is_file():
        raise SpecError(f"{text!r} is neither a profile ({', '.join(PROFILES)}) nor a spec file")
    return load_spec(text)
