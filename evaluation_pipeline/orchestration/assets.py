"""The evaluation assets: read, validate, call the evaluation, write, attach metadata (the
ingest assets are in ``ingest_assets``). They (``query_scores``, ``evaluation_report``,
``evaluation_history``) carry a code version of the project's version and the spec_id, so
changing the spec marks them stale.

``evaluation_report`` also takes the evaluation's step of the nightly watch: the comparison with
the previous night goes into the report, the evaluation into ``evaluation_history`` (materialized
by the same step), and a regression of the newest night into an alert.
"""

import hashlib
import io
import shlex
from collections.abc import Iterator
from dataclasses import asdict

import dagster as dg
import polars as pl

from evaluation_pipeline import __version__
from evaluation_pipeline.analysis.agreement import agreement
from evaluation_pipeline.io import integrity
from evaluation_pipeline.io.atomic import named_in
from evaluation_pipeline.io.budget import Budget
from evaluation_pipeline.io.datasets import read_queries_rows
from evaluation_pipeline.io.landing import file_sha256
from evaluation_pipeline.io.locations import Location
from evaluation_pipeline.io.storage import (
    AGGREGATES_FILE,
    HTML_FILE,
    REPORT_FILE,
    Place,
    alerts_file,
    history_file,
    history_html_file,
    history_stamp_file,
    judgments_file,
    judgments_folder,
    pool_file,
    pool_folder,
    queries_file,
    report_folder,
    scores_file,
)
from evaluation_pipeline.nightly import verdicts as nightly
from evaluation_pipeline.nightly.alerts import notify
from evaluation_pipeline.nightly.history import numeric_metadata, read_history
from evaluation_pipeline.nightly.watch import record_evaluation, watch_evaluation
from evaluation_pipeline.orchestration.gate_record import headline_candidates
from evaluation_pipeline.orchestration.ingest_assets import utc_now
from evaluation_pipeline.orchestration.partitions import (
    DEFAULT,
    POOL_DIMENSION,
    VERSION_DIMENSION,
    Naming,
    evaluation_partitions_of,
    split_evaluation_key,
)
from evaluation_pipeline.orchestration.resources import (
    EvaluationStorage,
    NightlyWatch,
)
from evaluation_pipeline.orchestration.scoring import (
    ScoringEngine,
    read_published,
    score_evaluation,
    scores_alteration,
    scores_stamp,
)
from evaluation_pipeline.orchestration.selection import published_versions
from evaluation_pipeline.report import (
    ReportConfig,
    headline_markdown,
    write_report,
)
from evaluation_pipeline.report.traces import mover_queries
from evaluation_pipeline.report.trend import render_trend
from evaluation_pipeline.spec import EvaluationSpec
from evaluation_pipeline.stats.family import Family
from schemas.columns import EVALUATION_KEY, label_of
from schemas.errors import EvaluationError

EVALUATION_GROUP = "evaluation"
# The concurrency pool of scoring: its limit (dagster.yaml `concurrency: pools:`, or `dagster
# instance concurrency set`) caps how many pool x version evaluations score at once, across runs.
SCORING_POOL = "ndcg_scoring"
REPORT_ASSET = "evaluation_report"
HISTORY_ASSET = "evaluation_history"


def evaluation_code_version(spec: EvaluationSpec) -> str:
    return f"{__version__}+spec.{spec.spec_id}"


# -- the nightly watch ------------------------------------------------------------------------


def _nights(instance: dg.DagsterInstance, storage: EvaluationStorage,
            naming: Naming) -> tuple[dict[str, str], dict[str, str]]:
    """(pool -> ready time, version -> publication time) of every published pool, and of every
    published version the nightly may take as its headline, of the instance ``naming``
    names."""
    ready = {}
    for pool in instance.get_dynamic_partitions(naming.candidate_pools.name):
        manifest = storage.manifest(*pool_folder(pool))
        if manifest is not None:
            ready[pool] = nightly.ready_at_of(manifest)
    # A version the judge's gate refused is never a night's headline (gate_record).
    published = {version: manifest[nightly.PUBLISHED_AT]
                 for version, manifest in headline_candidates(
                     storage, published_versions(instance, storage, naming)).items()}
    return ready, published


def _previous_scores(context: dg.AssetExecutionContext, storage: EvaluationStorage,
                     scoring: ScoringEngine, previous: str | None, version: str,
                     spec: EvaluationSpec, budget: Budget) -> Location | None:
    """Where the previous night's per-query rows under ``version`` are, proven or scored first
    within ``budget`` (``_proven_scores``)."""
    if previous is None:
        return None
    return _proven_scores(context, storage, scoring, previous, version, spec, budget)


def _proven_scores(context: dg.AssetExecutionContext, storage: EvaluationStorage,
                   scoring: ScoringEngine, pool: str, version: str, spec: EvaluationSpec,
                   budget: Budget) -> Location:
    """Where ``pool`` x ``version``'s per-query rows are, proven to hold the bytes they were
    written with (``scoring.scores_alteration``); scored first when they are not yet (a
    pinned baseline, or a night that arrived late), or again, with a warning that names the
    file, when they fail their proof: a report never reads rows taken on trust."""
    scores = scores_file(pool, version, spec.spec_id)
    if not storage.exists(*scores):
        context.log.info(f"{pool} has no scores under {version} yet; scoring it first")
        score_evaluation(storage, scoring, pool, version, spec, budget,
                         warn=context.log.warning)
    elif (altered := scores_alteration(storage, scores)) is not None:
        context.log.warning(f"{altered}: scoring {pool} x {version} again before it is read")
        score_evaluation(storage, scoring, pool, version, spec, budget,
                         warn=context.log.warning)
    return storage.path(*scores)


def _read_history(storage: EvaluationStorage) -> tuple[pl.DataFrame | None, str | None]:
    """The history and its bytes' SHA-256, proven to be bytes its last writer left
    (``io.integrity.rewrite_alteration``): an altered history would decide tonight's verdicts
    and standings from numbers no evaluation gave, so it stops the report, named."""
    where = storage.path(*history_file())
    history = read_history(where)
    if history is None:
        return None, None
    digest = file_sha256(where)
    stamp = (storage.read_json(*history_stamp_file())
             if storage.exists(*history_stamp_file()) else None)
    altered = integrity.rewrite_alteration(where, stamp, digest)
    if altered is not None:
        raise EvaluationError(
            f"{altered}. Restore it from a backup, or move it and "
            f"{storage.path(*history_stamp_file())} aside: the next evaluation starts a new "
            "history (every evaluation's numbers stay in its report.json)")
    return history, digest


def _write_history(storage: EvaluationStorage, history: pl.DataFrame,
                   current_sha256: str | None) -> str:
    """Write the history, its stamp first (``io.integrity.rewrite_stamp``: the bytes it
    replaces and the new ones, so a kill between the two writes leaves a proven history)."""
    buffer = io.BytesIO()
    # Fixed compression and statistics, as every Parquet file of the storage.
    history.write_parquet(buffer, compression="zstd", statistics=True)
    data = buffer.getvalue()
    storage.write_json(integrity.rewrite_stamp(current_sha256, hashlib.sha256(data).hexdigest()),
                       *history_stamp_file())
    return storage.write(history_file(), lambda handle: handle.write(data))


def report_href(pool: str, version: str, spec_id: str) -> str:
    """The link from history/history.html to an evaluation's report.html."""
    return "/".join(("..", *report_folder(pool, version, spec_id), HTML_FILE))


def _night_inputs(storage: EvaluationStorage, section: dict, version: str, pool: str,
                  spec: EvaluationSpec) -> tuple[pl.DataFrame, ...] | None:
    """The published judgments and both nights' pools, of the queries whose traces the report
    writes (the movers it lists) only: the files are sorted by query, so the rest is skipped."""
    if section["previous_pool"] is None:
        return None
    wanted = mover_queries(section, max(spec.cutoffs))
    if not wanted:
        return None

    def rows(place: Place) -> pl.DataFrame:
        return read_queries_rows(storage.path(*place), wanted)

    return (rows(judgments_file(version)), rows(pool_file(pool)),
            rows(pool_file(section["previous_pool"])))


def _raters_agreement(storage: EvaluationStorage, pool: str, version: str,
                      spec: EvaluationSpec) -> dict | None:
    """A version with raters (its manifest names them): their agreement and the NDCG under
    each, over tonight's pool (``analysis.agreement``); None for a version without raters."""
    manifest = storage.manifest(*judgments_folder(version)) or {}
    if not manifest.get("raters"):
        return None
    return agreement(storage.read_parquet(*judgments_file(version)), spec,
                     storage.read_parquet(*pool_file(pool)))


def _alert(context: dg.AssetExecutionContext, storage: EvaluationStorage, watch: NightlyWatch,
           step, pool: str, spec: EvaluationSpec, report: str) -> dict | None:
    """Alert the evaluation when due (``nightly.alerts.notify``); never fails the run."""
    return notify(storage.path(*alerts_file()), step.section, candidate_pool=pool,
                  spec_id=spec.spec_id, report=report, newest=step.newest,
                  headline=step.headline, settings=watch.alert_settings(), log=context.log,
                  drill_down=f"ndcg-eval history {shlex.quote(storage.base)} --night {pool}")


# -- evaluation ---------------------------------------------------------------------------------


def build_evaluation_assets(spec: EvaluationSpec,
                            naming: Naming = DEFAULT) -> list[dg.AssetsDefinition]:
    """``query_scores`` and ``evaluation_report`` (with ``evaluation_history``) under ``spec``
    (its spec_id is in the code version, so a changed spec marks every partition stale), of the
    instance ``naming`` names."""
    code_version = evaluation_code_version(spec)
    evaluation_partitions = evaluation_partitions_of(naming)
    group = naming.group(EVALUATION_GROUP)
    report_key, history_key = naming.key(REPORT_ASSET), naming.key(HISTORY_ASSET)
    # Follow new upstream partitions, but never past a failed blocking check of an input.
    automation = (
        dg.AutomationCondition.eager() & dg.AutomationCondition.all_deps_blocking_checks_passed()
    )

    @dg.asset(
        key_prefix=list(naming.prefix) or None,
        partitions_def=evaluation_partitions,
        group_name=group,
        required_resource_keys=naming.resource_keys("storage", "scoring", "memory"),
        kinds={"polars", "parquet"},
        code_version=code_version,
        automation_condition=automation,
        deps=[
            dg.AssetDep(naming.key("judgments"),
                        partition_mapping=dg.MultiToSingleDimensionPartitionMapping(
                            partition_dimension_name=VERSION_DIMENSION)),
            dg.AssetDep(naming.key("candidate_pools"),
                        partition_mapping=dg.MultiToSingleDimensionPartitionMapping(
                            partition_dimension_name=POOL_DIMENSION)),
        ],
        metadata={"spec": dg.MetadataValue.json(spec.to_dict()), "spec_id": spec.spec_id},
        description="Per-query NDCG for every ranker of a pool against a judgment version.",
        pool=SCORING_POOL,
    )
    def query_scores(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
        storage, scoring, memory = naming.resources(context, "storage", "scoring", "memory")
        pool, version = split_evaluation_key(context.partition_key)
        result = score_evaluation(storage, scoring, pool, version, spec,
                                  memory.budget(storage), warn=context.log.warning)
        lineage, path = result.lineage, result.per_query_path
        context.log.info(f"scored {pool} x {version} with the {result.engine} engine")
        for note in result.notes:
            context.log.info(note)
        # Only what the metadata counts: the rows stay on disk, as the engine left them.
        per_query = storage.read_parquet(*scores_file(pool, version, spec.spec_id),
                                           columns=["status"])
        statuses = per_query.group_by("status").len().sort("status")
        return dg.MaterializeResult(
            metadata={
                "dagster/row_count": per_query.height,
                "status_counts": dg.MetadataValue.json(
                    dict(zip(statuses["status"].to_list(), statuses["len"].to_list()))),
                "lineage": dg.MetadataValue.json(asdict(lineage)),
                "spec_id": spec.spec_id,
                "engine": result.engine,
                "scoring": dg.MetadataValue.json(
                    scores_stamp(storage, scores_file(pool, version, spec.spec_id))["scoring"]),
                "per_query": dg.MetadataValue.path(path),
            },
            data_version=dg.DataVersion(
                f"{lineage.judgments_sha256[:16]}-{lineage.pool_sha256[:16]}-{spec.spec_id}"),
        )

    # One step writes both: the report's nightly section and the history row it adds are
    # decided together, under the history's lock.
    @dg.multi_asset(
        name=naming.name(REPORT_ASSET),
        partitions_def=evaluation_partitions,
        required_resource_keys=naming.resource_keys("storage", "scoring", "watch", "memory"),
        specs=[
            dg.AssetSpec(
                report_key,
                group_name=group,
                kinds={"polars", "html"},
                code_version=code_version,
                automation_condition=automation,
                deps=[query_scores, naming.key("queries")],
                metadata={"spec_id": spec.spec_id},
                description="Aggregates, intervals, ranker comparison, the comparison with the "
                "previous night and the report, with lineage; when the newest night regressed, "
                "an alert.",
            ),
            dg.AssetSpec(
                history_key,
                group_name=group,
                kinds={"polars", "parquet", "html"},
                code_version=code_version,
                automation_condition=automation,
                deps=[report_key],
                description="Every evaluation's aggregates night after night "
                f"({'/'.join(history_file())}, a rerun replaces its rows) and the trend page "
                f"({'/'.join(history_html_file())}).",
            ),
        ],
    )
    def evaluation_report(context: dg.AssetExecutionContext) -> Iterator[dg.MaterializeResult]:
        storage, scoring, watch, memory = naming.resources(context, "storage", "scoring",
                                                           "watch", "memory")
        pool, version = split_evaluation_key(context.partition_key)
        scores = scores_file(pool, version, spec.spec_id)
        if not storage.exists(*scores):
            raise dg.Failure(f"no scores at {storage.path(*scores)}: materialize query_scores "
                             f"for {pool} x {version} first")
        _proven_scores(context, storage, scoring, pool, version, spec, memory.budget(storage))
        lineage = storage.read_lineage(*scores)
        scored = (scores_stamp(storage, scores) or {}).get("scoring")
        weights, queries_manifest = read_published(
            storage, queries_file(), "the queries table")
        # The ranker pairs are held to the watch's level, as the night's changes are.
        config = ReportConfig(alpha=watch.alpha, power=watch.power).under(spec)
        settings = watch.settings(config)
        ready, published = _nights(context.instance, storage, naming)
        previous = nightly.previous_night(pool, ready, settings.baseline_pool)
        previous_scores = _previous_scores(context, storage, scoring, previous, version, spec,
                                           memory.budget(storage))
        # Both nights' numbers in one pass, where the engine sums (a cluster's executors, or
        # this machine from the columns the report reads); the whole rows are copied into the
        # report from the file.
        planned, numbers = scoring.report_numbers(storage.path(*scores), previous_scores,
                                                  weights, config)
        raters = _raters_agreement(storage, pool, version, spec)  # before the history's lock
        compared = planned.night_comparison(numbers, alpha=settings.alpha,
                                            min_effect=settings.min_effect,
                                            ci_level=settings.ci_level,
                                            family=Family.of(spec), power=settings.power)
        # The history is read, extended and written by one evaluation at a time.
        with storage.locked(*history_file()):
            history, history_sha256 = _read_history(storage)
            now = utc_now()
            step = watch_evaluation(
                compared, candidate_pool=pool, judgment_version=version,
                spec_id=spec.spec_id, ready_at=ready, published_at=published, history=history,
                now=now, settings=settings)
            report_place = storage.path(*report_folder(pool, version, spec.spec_id))
            with storage.staging() as staged, named_in(staged, report_place):
                report = write_report(staged, None, spec, lineage, weights, config,
                                      nightly=step.section,
                                      queries_sha256=queries_manifest["sha256"],
                                      per_query_source=storage.path(*scores),
                                      numbers=(planned, numbers),
                                      night_inputs=_night_inputs(storage, step.section,
                                                                 version, pool, spec),
                                      agreement=raters, scoring=scored)
                aggregates = pl.read_parquet(staged / AGGREGATES_FILE)
                written = storage.put_tree(staged, *report_folder(pool, version, spec.spec_id))
            history = record_evaluation(history, aggregates, step, evaluated_at=now,
                                        headline_measures=spec.headline_measures)
            page = render_trend(history, report_href)
            history_path = _write_history(storage, history, history_sha256)
            trend = storage.write_text(page, *history_html_file())
        alert = _alert(context, storage, watch, step, pool, spec, written[HTML_FILE])
        regressed = nightly.regressions(step.section)
        yield dg.MaterializeResult(
            asset_key=report_key,
            metadata={
                # What the partition's page says first: regressed or not, and for whom.
                "verdict": (
                    ("REGRESSED: " if step.headline else "regressed (not the night's headline "
                     "evaluation): ")
                    + ", ".join(f"{c['ranker']} {label_of(c)}" for c in regressed)
                    if regressed else "no regression against the previous night"
                    if step.section["previous_pool"] else "first night"),
                "headline": dg.MetadataValue.md(headline_markdown(report)),
                "result": dg.MetadataValue.md("\n\n".join(report["headline"])),
                "lineage": dg.MetadataValue.json(asdict(lineage)),
                "queries_sha256": queries_manifest["sha256"],
                "scoring": dg.MetadataValue.json(scored or {}),
                "report": dg.MetadataValue.path(written[REPORT_FILE]),
                "report_html": dg.MetadataValue.path(written[HTML_FILE]),
                "previous_pool": step.section["previous_pool"] or "",
                "headline_evaluation": step.headline,
                "regressions": len(regressed),
                "nightly": dg.MetadataValue.md(nightly.describe_regressions(step.section)),
                "alerted": alert is not None,
                # The plotted numbers are on the history's headline materializations only:
                # here, the versions of a night would alternate on one axis.
            },
        )
        yield dg.MaterializeResult(
            asset_key=history_key,
            metadata={
                "dagster/row_count": history.height,
                "evaluations": history.select(EVALUATION_KEY).unique().height,
                "history": dg.MetadataValue.path(history_path),
                "history_html": dg.MetadataValue.path(trend),
                "night": pool,
                "headline_evaluation": step.headline,
                # One number per ranker and headline measure, on the night's headline
                # evaluation only: Dagster plots them, one series each, one point per night.
                **(numeric_metadata(aggregates, spec.headline_measures)
                   if step.headline else {}),
            },
        )

    return [query_scores, evaluation_report]
