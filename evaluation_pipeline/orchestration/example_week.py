"""`make run`'s example week: the nightly example inputs land one at a time, and after each the
pipeline runs until it is quiet, as the sensors would see a week go by.

The week is written once by ``examples/generate_example_data.py --nightly`` into
``examples/data/nightly/`` and lands in ``<storage>/example-landing/`` (a bucket's in the
instance folder): a landing of its own, so the bundled two-pool landing stays as it is. A
second run lands nothing new and runs nothing.

The week is evaluated under the measures the TREC Deep Learning track reports
(``examples/trec_dl_spec.yaml``: nDCG@10, RR(rel=2)@10, AP(rel=2)@100, R@100, with nDCG@10 the
headline), unless $NDCG_EVAL_SPEC names another spec: the example shows every measure through the
watch, and the one headline that alerts.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from evaluation_pipeline import settings
from evaluation_pipeline.io.storage import DEFAULT_NIGHTLY, EXAMPLE_LANDING_FOLDER, REPO
from evaluation_pipeline.orchestration.local_runner import LocalRunner, RunOutcome
from evaluation_pipeline.orchestration.resources import EvaluationStorage
from evaluation_pipeline.orchestration.selection import storage_key
from schemas.errors import EvaluationError

GENERATOR = REPO / "examples" / "generate_example_data.py"
# The queries table the generator writes beside the week's inputs.
QUERIES_NAME = "queries.csv"
# The spec the week is evaluated under when none is named ($NDCG_EVAL_SPEC).
WEEK_SPEC = REPO / "examples" / "trec_dl_spec.yaml"


def generator() -> ModuleType:
    """The example generator, loaded from its file (examples/ is not a package)."""
    spec = importlib.util.spec_from_file_location("generate_example_data", GENERATOR)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def week_spec() -> str:
    """The spec file the week is evaluated under: $NDCG_EVAL_SPEC, else ``WEEK_SPEC``."""
    return settings.SPEC.get() or str(WEEK_SPEC)


def week_folders(storage: EvaluationStorage, instance_home: Path,
                 nightly_dir: Path = DEFAULT_NIGHTLY) -> tuple[Path, Path]:
    """(the week's landing folder, its queries table), writing the week first if it is not yet.

    The landing is a local folder the sensors watch: under a local storage, in it; under a
    bucket, in the instance folder, one per bucket (each storage sees the week arrive night by
    night, as its own run keys say)."""
    if storage.is_local():
        landing = Path(storage.path(EXAMPLE_LANDING_FOLDER))
    else:
        landing = instance_home / EXAMPLE_LANDING_FOLDER / storage_key(storage)
    gen = generator()
    if not (nightly_dir / gen.ARRIVALS_FILE).is_file():
        if nightly_dir.name != gen.NIGHTLY_DIR:
            raise EvaluationError(f"the generator writes the week into a folder named "
                                  f"{gen.NIGHTLY_DIR!r}, not {nightly_dir}")
        gen.generate_nightly(nightly_dir.parent)
    return landing, nightly_dir / QUERIES_NAME


def run_week(runner: LocalRunner, landing: Path, nightly_dir: Path = DEFAULT_NIGHTLY,
             say: Callable[[str], None] = print) -> list[RunOutcome]:
    """Land the week's next input and run the pipeline until quiet, until the week has landed.

    Whatever landed before (an earlier run) is run first: after a complete week, nothing."""
    gen = generator()
    landing.mkdir(parents=True, exist_ok=True)
    outcomes = runner.run_until_quiet()
    while runner.check_stop() is None and (
            arrival := gen.land_next(nightly_dir, landing)) is not None:
        say(f"landed {arrival}")
        outcomes += runner.run_until_quiet()
    return outcomes
