"""The reports the Dagster instance knows of, read from storage for ``make run``'s summary.

Which evaluations exist is the instance's knowledge (its dynamic partitions) and where their
reports are is the pipeline's storage layout; the text is ``report.summary``'s.
"""

from collections.abc import Iterator

from evaluation_pipeline.io.storage import HTML_FILE, REPORT_FILE
from evaluation_pipeline.orchestration.assets import report_folder
from evaluation_pipeline.orchestration.partitions import (
    candidate_pool_partitions,
    judgment_version_partitions,
)
from evaluation_pipeline.orchestration.resources import EvaluationStorage
from evaluation_pipeline.report.summary import StoredReport, describe_stored_reports
from evaluation_pipeline.spec import EvaluationSpec


def stored_reports(storage: EvaluationStorage, spec: EvaluationSpec, instance
                   ) -> Iterator[StoredReport]:
    """The report of every judgment version x pool of the instance under ``spec``, if written."""
    for version in instance.get_dynamic_partitions(judgment_version_partitions.name):
        for pool in instance.get_dynamic_partitions(candidate_pool_partitions.name):
            folder = report_folder(pool, version, spec.spec_id)
            if storage.exists(*folder, REPORT_FILE):
                yield StoredReport(pool, version, storage.read_json(*folder, REPORT_FILE),
                                   str(storage.path(*folder, HTML_FILE)))


def describe_reports(storage: EvaluationStorage, spec: EvaluationSpec, instance) -> str:
    return describe_stored_reports(spec, stored_reports(storage, spec, instance))
