"""What every engine is: the ``Engine`` protocol and the parameter objects it takes.

A scoring is its inputs (``ScoringInputs``: judgments and run, each a location or a table in
memory, their formats, the names the flags give and the hashes proven already), the spec, the
output (``ScoringOutput``: a location, or the rows kept in memory) and the resources the engine
may use (``Resources``: the memory budget, the streaming batch, the Spark session). An engine
scores, publishes (ingests) and sums a report's numbers; the registry (``engines.registry``)
names the engines and resolves ``auto``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import polars as pl

from evaluation_pipeline.evaluation import Lineage
from evaluation_pipeline.io.budget import Budget
from evaluation_pipeline.io.locations import Location, location
from evaluation_pipeline.io.table_inputs import Input, is_table
from evaluation_pipeline.metric.hashing import KnownHashes
from evaluation_pipeline.spec import EvaluationSpec
from schemas.errors import InputError, violation

if TYPE_CHECKING:
    from evaluation_pipeline.aggregation.sums import Numbers
    from evaluation_pipeline.report.build import ReportPlan
    from evaluation_pipeline.report.config import ReportConfig


@dataclass(frozen=True)
class ScoringInputs:
    """The judgments and the run of one scoring. Each is a local path or a URL on object
    storage (``io.locations``; a string URL as written, for Spark), or a table in memory
    (``io.table_inputs.Table``). ``judgments_format``, ``run_format``: as --format (None: by
    extension). ``judgment_version``, ``pool``, ``ranker``: the names of inputs that carry no
    such column. ``known``: the inputs' content hashes when proven already (a published file
    whose bytes are the ones hashed at publish), taken for the lineage instead of hashing the
    inputs again."""

    judgments: Input
    run: Input
    judgments_format: str | None = None
    run_format: str | None = None
    judgment_version: str | None = None
    pool: str | None = None
    ranker: str | None = None
    known: KnownHashes = field(default_factory=KnownHashes)

    @property
    def in_memory(self) -> bool:
        """True when an input is a table in memory, which only some engines read in place."""
        return is_table(self.judgments) or is_table(self.run)

    def located(self) -> ScoringInputs:
        """The inputs with every path or URL made a location (its storage options from
        ``NDCG_EVAL_STORAGE_OPTIONS``), each refused when nothing is there."""
        judgments, run = (given if is_table(given) else location(given)
                          for given in (self.judgments, self.run))
        for given, where in ((self.judgments, judgments), (self.run, run)):
            if not is_table(where) and not where.exists():
                raise InputError(str(given), [violation("(file)", "no such file or folder",
                                                        [])])
        return replace(self, judgments=judgments, run=run)


@dataclass(frozen=True)
class ScoringOutput:
    """Where the per-query rows go: ``path``, a location or a URL (Spark writes any it
    reaches); None keeps them in memory (``EngineResult.per_query``), for an engine that
    holds them whole (``Engine.keeps_rows``)."""

    path: Location | str | None = None

    @property
    def in_memory(self) -> bool:
        return self.path is None


@dataclass(frozen=True)
class Resources:
    """What an engine may use: ``budget``, the memory budget (its limit, also the ``auto``
    choice's, and the spill folder of a sort; None: ``Budget.of()``); ``batch_rows``, the
    streaming engine's batch (None: ``DEFAULT_BATCH_ROWS``); ``spark_session`` or
    ``spark_master``, the Spark session to use or where to start one (None: the active one,
    else a local one, or spark-submit's --master); ``progress``, said on stderr."""

    budget: Budget | None = None
    batch_rows: int | None = None
    spark_session: Any = None
    spark_master: str | None = None
    progress: bool = True

    def memory(self) -> Budget:
        return self.budget or Budget.of()


@dataclass
class EngineResult:
    lineage: Lineage
    per_query_path: str | None  # where the rows were written; None: kept in ``per_query``
    rows: int  # per-query rows scored
    notes: list[str] = field(default_factory=list)  # fallbacks the engine took
    engine: str = "local"  # the engine that scored (``auto`` resolved)
    # The in-memory engine's validated inputs, which a report's traces read again.
    judgments: pl.DataFrame | None = None
    candidates: pl.DataFrame | None = None
    per_query: pl.DataFrame | None = None  # the rows, when the output is in memory


@runtime_checkable
class Engine(Protocol):
    """An executor of the one NDCG kernel: every engine writes the same per-query rows with
    lineage and sums the same report numbers."""

    name: str
    # True when the engine reads and writes object-storage URLs itself (Spark, through its
    # Hadoop file systems); the others score local copies of files on object storage.
    reads_urls: bool
    # True when the engine reads tables in memory in place and can keep its rows there.
    keeps_rows: bool

    def score(self, inputs: ScoringInputs, spec: EvaluationSpec, output: ScoringOutput,
              resources: Resources) -> EngineResult:
        """Score ``inputs`` under ``spec`` into ``output``."""
        ...

    def publish(self, function: str, source: Location, target: Location,
                resources: Resources, **options) -> Any:
        """Ingest with ``ingest.publish``'s ``function`` (``publish_pool`` or
        ``publish_judgments``, with its options) where the engine runs."""
        ...

    def report_numbers(self, scores: Location | str, previous: Location | str | None,
                       queries: pl.DataFrame | None, config: ReportConfig,
                       resources: Resources) -> tuple[ReportPlan, Numbers]:
        """The plan and numbers (``report.build``) of the report of the per-query rows at
        ``scores`` and of their comparison with the previous night's at ``previous``."""
        ...

    def write_text_at(self, where: Location | str, text: str, resources: Resources) -> None:
        """``text`` as the file ``where``, beside rows the engine wrote there (the summary of a
        result Spark wrote on object storage), through the storage the engine writes with."""
        ...
