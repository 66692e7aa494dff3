"""`make run`: ingest the bundled example data and evaluate every judgment version x pool.

The runs go through the pipeline's own sensors and jobs against a persistent Dagster instance
in ``.dagster_home/`` (so ``dagster dev -w workspace.yaml`` shows them afterwards), and results
land in ``.storage/``. A second run finds nothing new and prints the same reports.
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

    from evaluation_pipeline.definitions import defs, pipeline_spec
    from evaluation_pipeline.orchestration.local_runner import LocalRunner
    from evaluation_pipeline.orchestration.selection import describe_reports

    with dg.DagsterInstance.get() as instance:
        outcomes = LocalRunner(defs, instance).run_until_quiet()
        for outcome in outcomes:
            state = "ok" if outcome.success else "FAILED"
            print(f"run {outcome.job:<22} {outcome.partition or '-':<36} {state}")
            if outcome.error:
                print(f"    {outcome.error}")
        if not outcomes:
            print("nothing new in the landing folder; the reports below are current")
        print(f"\nDagster instance: {home}; browse it with\n"
              f"  DAGSTER_HOME={home} dagster dev -w workspace.yaml -h 127.0.0.1 -p 3000")
        print(describe_reports(defs.resources["storage"], pipeline_spec(), instance))
    return 0 if all(o.success for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
