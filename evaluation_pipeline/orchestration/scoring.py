"""The scoring resource: which engine scores, ingests and sums the reports, and the scoring of
published inputs through the storage.

The engines take local paths (Spark aside), so for an object store the files pass through a
local scratch folder under the memory budget's spill folder. Every choice of engine is made in
``evaluation_pipeline.engines``; this resource only carries the configuration to it.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import dagster as dg
import polars as pl
import pyarrow as pa

from evaluation_pipeline import engines
from evaluation_pipeline.aggregation.sums import Numbers
from evaluation_pipeline.engines import (
    AUTO,
    DEFAULT_BATCH_ROWS,
    ENGINES,
    EngineResult,
    Resources,
    ScoringInputs,
    ScoringOutput,
)
from evaluation_pipeline.engines.incremental import Increment, score_increment
from evaluation_pipeline.ingest.publish import Published
from evaluation_pipeline.io import integrity
from evaluation_pipeline.io.atomic import named_in
from evaluation_pipeline.io.budget import Budget
from evaluation_pipeline.io.locations import Location, location
from evaluation_pipeline.io.storage import (
    Place,
    judgments_file,
    judgments_folder,
    manifest_file,
    pool_file,
    pool_folder,
    scores_file,
)
from evaluation_pipeline.metric.hashing import HASH_VERSION, KnownHashes
from evaluation_pipeline.nightly import verdicts as nightly
from evaluation_pipeline.orchestration.resources import (
    EvaluationStorage,
    MemoryBudget,
    hash_version,
)
from evaluation_pipeline.report.build import ReportPlan
from evaluation_pipeline.report.config import ReportConfig
from evaluation_pipeline.spec import EvaluationSpec
from schemas.errors import EvaluationError

LOG = logging.getLogger(__name__)


class ScoringEngine(dg.ConfigurableResource):
    """Which executor of the one kernel scores a pool x version (evaluation_pipeline.engines).

    ``auto`` streams Parquet inputs and reads small ones into memory (``engines.choice``);
    ``local`` reads both inputs into memory; ``streaming`` reads the published Parquet files in
    batches of whole queries (memory bounded by ``batch_rows``), local or on object storage;
    ``spark`` runs on a Spark session (any URL Spark reads) at ``spark_master``
    (``spark://host:7077``, ``yarn``, ``k8s://...``); unset, a local session, or under
    spark-submit its ``--master``.
    """

    engine: str = AUTO
    batch_rows: int = DEFAULT_BATCH_ROWS
    spark_master: str | None = None
    # For URL paths, as EvaluationStorage.storage_options (Spark reads with its own settings).
    storage_options: dict[str, Any] = {}
    # A new version's scores of a pool from an earlier version's, rescoring only the queries
    # whose grades changed (engines.incremental: the full scoring's bytes; on Spark,
    # engines.spark.increment: the full Spark scoring's rows); a local storage.
    incremental: bool = True

    def reads_urls(self) -> bool:
        """True when the engine reads and writes the storage's URLs itself (Spark)."""
        return engines.resolve(self.engine).reads_urls

    def engine_resources(self, budget: Budget | None = None) -> Resources:
        """What the engine may use: ``budget``, the batch and the Spark master configured."""
        return Resources(budget=budget, batch_rows=self.batch_rows,
                         spark_master=self.spark_master, progress=False)

    def publish_pool(self, folder: Path, target: Path, **options) -> Published:
        """Ingest a pool folder (``ingest.publish.publish_pool``'s options): on the Spark
        session when the engine is Spark, else on this machine in bounded memory."""
        return self._ingest("publish_pool", folder, target, **options)

    def publish_judgments(self, source: Path, target: Path, **options) -> Published:
        """Ingest a judgment version, as :meth:`publish_pool`."""
        return self._ingest("publish_judgments", source, target, **options)

    def _ingest(self, function: str, source: Path, target: Path, **options) -> Published:
        return engines.resolve(self.engine).publish(function, source, target,
                                                    self.engine_resources(), **options)

    def score(self, judgments_path: str, pool_path: str, spec, out_path: str, budget=None,
              known: KnownHashes | None = None):
        if self.engine not in ENGINES:
            raise dg.Failure(f"engine {self.engine!r} is not one of {', '.join(ENGINES)}")
        if not self.reads_urls():
            judgments_path, pool_path, out_path = (
                location(p, self.storage_options) for p in (judgments_path, pool_path, out_path))
        inputs = ScoringInputs(judgments_path, pool_path, known=known or KnownHashes())
        return engines.score_inputs(inputs, spec, ScoringOutput(out_path),
                                    self.engine_resources(budget), engine=self.engine)

    def score_increment(self, previous_scores: str, previous_judgments: str, judgments: str,
                        pool: str, spec: EvaluationSpec, out_path: str,
                        budget: Budget | None = None, **hashes) -> Increment | None:
        """``judgments`` x ``pool`` from an earlier version's scores of the pool, rescoring
        only the queries whose judgment rows changed, where the engine runs: on the Spark
        session when the engine is Spark, else on this machine within ``budget``; None when
        the earlier rows do not apply (``hashes``: ``engines.incremental.score_increment``'s)."""
        if self.reads_urls():
            from evaluation_pipeline.engines.spark.increment import (
                score_increment_spark,  # the spark extra
            )

            return score_increment_spark(previous_scores, previous_judgments, judgments, pool,
                                         spec, out_path, master=self.spark_master, **hashes)
        if not Path(previous_scores).is_file():
            return None  # a folder of parts, as Spark writes them: scored in full here
        return score_increment(previous_scores, previous_judgments, judgments, pool, spec,
                               out_path, budget=budget, **hashes)

    def report_numbers(self, scores: Location, previous: Location | None,
                       queries: pl.DataFrame | None, config: ReportConfig
                       ) -> tuple[ReportPlan, Numbers]:
        """The plan and numbers of the report of the per-query rows at ``scores`` (and of its
        comparison with the previous night's at ``previous``), summed where the engine sums
        them (``Engine.report_numbers``)."""
        return engines.resolve(self.engine).report_numbers(scores, previous, queries, config,
                                                           self.engine_resources())


def score_published(storage: EvaluationStorage, scoring: ScoringEngine, budget: Budget,
                    judgments: Place, pool: Place, scores: Place,
                    spec: EvaluationSpec, known: KnownHashes | None = None) -> EngineResult:
    """Score the published ``pool`` against ``judgments`` into ``scores``, through
    ``engines.score_inputs`` with the configured engine (``ScoringEngine.reads_urls``: Spark
    reads and writes URLs itself; ``known``: the content hashes not computed again)."""
    if storage.is_local() or scoring.reads_urls():
        return scoring.score(str(storage.path(*judgments)), str(storage.path(*pool)), spec,
                             str(storage.path(*scores)), budget=budget, known=known)
    with (budget.scratch("ndcg-eval-score-") as tmp,
          named_in(Path(tmp), storage.path(*scores[:-1]))):
        local = [Path(tmp) / place[-1] for place in (judgments, pool)]
        for place, copy in zip((judgments, pool), local):
            with storage.path(*place).open("rb") as source, open(copy, "wb") as target:
                shutil.copyfileobj(source, target)
        result = scoring.score(str(local[0]), str(local[1]), spec, str(Path(tmp) / scores[-1]),
                               budget=budget, known=known)
        written = storage.put_file(Path(result.per_query_path), *scores)
    return dataclasses.replace(result, per_query_path=written)


# -- published inputs scored into the storage's scores, proven when read back -----------------

# How a version's scores of a pool were made, in their stamp (``scores_stamp``), on the
# materialization and in the report (report.json's ``scoring``).
FULL, INCREMENTAL = "full", "incremental"


def _published_manifest(storage: EvaluationStorage, folder: Place, what: str) -> dict:
    manifest = storage.manifest(*folder)
    if manifest is None:
        raise dg.Failure(f"{what} is not published yet in {storage.path(*folder)}; "
                         "materialize its ingest partition (or land it) first")
    return manifest


def read_published(storage: EvaluationStorage, place: Place,
                   what: str) -> tuple[pl.DataFrame, dict]:
    """A published file and the manifest beside it; a folder without its manifest is not
    published yet (a step failure that says so)."""
    manifest = _published_manifest(storage, place[:-1], what)
    return storage.read_parquet(*place), manifest


def score_evaluation(storage: EvaluationStorage, scoring: ScoringEngine, pool: str,
                     version: str, spec: EvaluationSpec, budget: Budget | None = None,
                     warn: Callable[[str], None] | None = None) -> EngineResult:
    """Score ``pool`` x ``version`` under ``spec`` into its scores file, as ``ndcg-eval score``
    does, or from an earlier version's (``budget``: the memory budget, else the environment's),
    and stamp it (``scores_stamp``): how it was scored, and its bytes, which whoever reads it
    back proves first (``scores_alteration``). ``warn``: where an earlier scores file that
    failed its proof is named (default: this module's logger).

    An input whose file has the bytes its publish hashed (``storage.as_published``) is not
    hashed again: its published hash is the lineage's. Any other input is hashed as it is read,
    and that hash must be the published one. An input published under an earlier hash version
    is hashed again in that version, from its stored file."""
    warn = warn or LOG.warning
    grades_manifest = _published_manifest(
        storage, judgments_folder(version), f"judgment version {version!r}")
    pool_manifest = _published_manifest(storage, pool_folder(pool), f"candidate pool {pool!r}")
    known = KnownHashes(judgments=_proven(storage, judgments_file(version), grades_manifest),
                        pool=_proven(storage, pool_file(pool), pool_manifest))
    budget = budget or MemoryBudget().budget(storage)
    scores = scores_file(pool, version, spec.spec_id)
    result, scored = _incremental(storage, scoring, pool, version, spec, known, budget, warn)
    if result is None:
        result = score_published(storage, scoring, budget, judgments_file(version),
                                 pool_file(pool), scores, spec, known)
        result.notes.append(f"scored in full: {scored['reason']}")
    for name, computed, manifest, place in (
        ("judgments", result.lineage.judgments_sha256, grades_manifest, judgments_file(version)),
        ("pool", result.lineage.pool_sha256, pool_manifest, pool_file(pool)),
    ):
        published = manifest["sha256"]
        if hash_version(manifest) != HASH_VERSION:
            computed = storage.content_sha256(place, name, hash_version(manifest)).sha256
        if computed != published:
            raise dg.Failure(f"stored {name} content has sha256 {computed}, but "
                             f"{published} was published: the storage was altered")
    _stamp_scores(storage, scores, result, scored)
    return result


def _incremental(storage: EvaluationStorage, scoring: ScoringEngine, pool: str, version: str,
                 spec: EvaluationSpec, known: KnownHashes, budget: Budget,
                 warn: Callable[[str], None]) -> tuple[EngineResult | None, dict]:
    """(``version``'s scores of ``pool`` from the newest earlier version's scores of it that
    apply, with only the queries whose grades changed scored again (``engines.incremental``,
    within ``budget``), how they were scored); (None, why not) when there is none to start
    from, or it does not apply, and the caller scores in full: a storage not on this machine,
    an input not proven to hold its published bytes (``known``, ``_proven``), earlier scores
    not proven to hold the bytes they were written with (``scores_alteration``: named through
    ``warn``). On Spark it runs on the session (``engines.spark``)."""
    if not scoring.incremental:
        return None, _full("incremental scoring is off")
    if not storage.is_local():
        return None, _full("the storage is not on this machine")
    if None in (known.pool, known.judgments):
        return None, _full("an input's bytes are hashed again (not as published)")
    # The storage's published versions, by publication (a local storage: listed directly).
    folder = Path(storage.root()) / judgments_folder("")[0]
    published = {}
    for entry in folder.iterdir() if folder.is_dir() else ():
        manifest = storage.manifest(*judgments_folder(entry.name))
        if manifest is not None:
            published[entry.name] = manifest
    order = sorted(published, key=lambda name: (published[name][nightly.PUBLISHED_AT], name))
    if version not in order:
        return None, _full("the version is not published")
    why = "no earlier version's scores of the pool to start from"
    for earlier in reversed(order[:order.index(version)]):
        manifest = published[earlier]
        scores = scores_file(pool, earlier, spec.spec_id)
        # A file, or the folder of parts Spark writes.
        if not storage.exists(*scores) or _proven(storage, judgments_file(earlier),
                                                  manifest) is None:
            continue
        altered = scores_alteration(storage, scores)
        if altered is not None:
            warn(f"not starting {version}'s scores of {pool} from {earlier}'s: {altered}; "
                 f"{version} is scored in full")
            why = f"{earlier}'s scores failed their proof ({altered})"
            continue
        try:
            increment = scoring.score_increment(
                str(storage.path(*scores)), str(storage.path(*judgments_file(earlier))),
                str(storage.path(*judgments_file(version))), str(storage.path(*pool_file(pool))),
                spec, str(storage.path(*scores_file(pool, version, spec.spec_id))), budget,
                pool_sha256=known.pool, previous_judgments_sha256=manifest["sha256"],
                judgments_sha256_now=known.judgments)
        except (OSError, pa.ArrowException, pl.exceptions.PolarsError) as exc:
            # Proven bytes that cannot be read were written so: never a reason to stop.
            warn(f"could not read {storage.path(*scores)} ({type(exc).__name__}: {exc}); "
                 f"{version} is scored in full")
            why = f"{earlier}'s scores could not be read"
            continue
        if increment is None:
            why = (f"{earlier}'s scores do not apply (another pool content or grade scale, or "
                   "beyond the memory budget)")
            continue
        notes = [f"from {earlier}'s scores: {increment.rescored_queries} queries whose "
                 f"grades changed scored again, {increment.kept_queries} kept"]
        return (EngineResult(increment.lineage, increment.per_query_path, increment.rows,
                             notes=notes, engine=INCREMENTAL),
                {"path": INCREMENTAL, "from_version": earlier,
                 "rescored_queries": increment.rescored_queries,
                 "kept_queries": increment.kept_queries})
    return None, _full(why)


def _full(reason: str) -> dict:
    return {"path": FULL, "reason": reason}


def _proven(storage: EvaluationStorage, place: Place, manifest: dict) -> str | None:
    """The published content hash of the file at ``place``, when the file holds the very bytes
    its publish hashed to it, else None: the SHA-256 of its bytes (some 1.5 GB/s), where its
    content hash costs a scoring a core throughout (2 of 10 s of wall time at 30M rows)."""
    if hash_version(manifest) == HASH_VERSION and storage.as_published(place, manifest):
        return manifest["sha256"]
    return None


def _stamp_scores(storage: EvaluationStorage, scores: Place, result: EngineResult,
                  scored: dict) -> None:
    """The scores' stamp, written after them (``scores_stamp``). A stamp left from earlier
    scores of the place, by a run killed between the two writes, proves nothing of the new
    bytes, so it is only ever a reason to score again."""
    # The engine beside the path, not in it: the report names the path, which every engine
    # takes alike, so that their reports are the same bytes.
    stamp = {"lineage": asdict(result.lineage), "engine": result.engine, "scoring": scored}
    if storage.is_local():
        stamp["stamp"] = integrity.dataset_stamp(storage.path(*scores))
    storage.write_json(stamp, *manifest_file(scores[:-1]))


def scores_stamp(storage: EvaluationStorage, scores: Place) -> dict | None:
    """The stamp written beside the per-query scores at ``scores`` (``manifest.json`` in their
    folder): their lineage, the engine, how they were scored (``scoring``: ``path`` full or
    incremental, and from which version or why not), and on a local storage their bytes (``stamp``,
    ``io.integrity.dataset_stamp``); None without one, or one that is not whole."""
    try:
        return storage.manifest(*scores[:-1])
    except EvaluationError:
        return None


def scores_alteration(storage: EvaluationStorage, scores: Place) -> str | None:
    """Why the per-query scores at ``scores`` are not proven to hold the bytes they were
    written with (their stamp, hashed again), or None when they are. On object storage the
    scores are read as written: the storage keeps no stamp of them (docs/reliability.md)."""
    if not storage.is_local():
        return None
    stamp = scores_stamp(storage, scores)
    return integrity.dataset_alteration(storage.path(*scores), (stamp or {}).get("stamp"))
