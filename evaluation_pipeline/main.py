"""`make run`: a week of nightly example pools lands night by night; each landing is ingested
and evaluated, and the run ends with the trend of the week and the alert it raised.

The runs go through the pipeline's own sensors and jobs against a persistent Dagster instance
in ``.dagster_home/`` (so ``dagster dev -w workspace.yaml`` shows them afterwards), and results
land in ``.storage/`` (the week's landing folder too). A second run finds nothing new and
prints the same trend.
"""

import os
import sys
from pathlib import Path

from evaluation_pipeline.io.storage import REPO

DAGSTER_HOME = REPO / ".dagster_home"
MAX_CONCURRENT_RUNS = 2

INSTANCE_YAML = f"""\
# The local Dagster instance of the evaluation pipeline (written by evaluation_pipeline.main).
# At most {MAX_CONCURRENT_RUNS} runs at a time, and at most {MAX_CONCURRENT_RUNS} evaluations scoring at once
# across them (the scoring asset's concurrency pool): evaluations queue instead of competing
# for memory.
concurrency:
  runs:
    max_concurrent_runs: {MAX_CONCURRENT_RUNS}
  pools:
    default_limit: {MAX_CONCURRENT_RUNS}
"""


def prepare_instance_home(home: Path) -> Path:
    """Create the instance folder and its dagster.yaml (kept when already the same)."""
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists() or config.read_text(encoding="utf-8") != INSTANCE_YAML:
        config.write_text(INSTANCE_YAML, encoding="utf-8")
    return home


def main() -> int:
    home = prepare_instance_home(Path(os.environ.setdefault("DAGSTER_HOME", str(DAGSTER_HOME))))
    # Imported after DAGSTER_HOME is set: the instance is read from it.
    import warnings

    import dagster as dg

    # Partitioned checks and multi-to-single partition mappings are marked preview/beta.
    warnings.filterwarnings("ignore", category=dg.PreviewWarning)
    warnings.filterwarnings("ignore", category=dg.BetaWarning)

    from evaluation_pipeline import cli
    from evaluation_pipeline.definitions import build_definitions
    from evaluation_pipeline.orchestration.example_week import run_week, week_folders
    from evaluation_pipeline.orchestration.local_runner import LocalRunner

    storage = build_definitions().resources["storage"]
    landing, queries = week_folders(storage)
    defs = build_definitions(landing_folder=str(landing), queries_path=str(queries))
    with dg.DagsterInstance.get() as instance:
        outcomes = run_week(LocalRunner(defs, instance), landing)
        for outcome in outcomes:
            state = "ok" if outcome.success else "FAILED"
            print(f"run {outcome.job:<22} {outcome.partition or '-':<36} {state}")
            if outcome.error:
                print(f"    {outcome.error}")
        if not outcomes:
            print("nothing new in the landing folder; the trend below is current")
        print(f"\nDagster instance: {home}; browse it with\n"
              f"  DAGSTER_HOME={home} dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000")
        print(f"\nThe week night by night (ndcg-eval history {storage.root()}):")
        cli.main(["history", str(storage.root())])
    return 0 if all(o.success for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
