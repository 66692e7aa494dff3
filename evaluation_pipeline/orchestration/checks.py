"""Asset checks. Blocking checks on the inputs keep scoring from running on a bad input; warning
checks on the scores flag thin judgments; a check on the report flags a ranker that regressed
against the previous night (ERROR for the night's headline evaluation, WARN for a backfill or an
older version), and a check on the history flags a regression of the headline trend that still
stands on the newest night.

Every check carries the partitions of its asset, so a check run reads one partition only.
"""

from collections.abc import Iterable

import dagster as dg
import polars as pl

from evaluation_pipeline.aggregation.comparison import candidate_set_differences
from evaluation_pipeline.analysis import quality
from evaluation_pipeline.ingest.verify import candidate_set_disagreements
from evaluation_pipeline.io.storage import (
    HTML_FILE,
    Place,
    alerts_file,
    history_file,
    history_html_file,
    judgments_file,
    pool_file,
    report_file,
    report_folder,
    scores_file,
)
from evaluation_pipeline.nightly import verdicts as nightly
from evaluation_pipeline.nightly.alerts import evaluation_key as alert_key
from evaluation_pipeline.nightly.alerts import regression_record
from evaluation_pipeline.nightly.history import (
    UNDELIVERED,
    delivery_status,
    describe_delivery,
    read_alerts,
    read_history,
    undelivered,
)
from evaluation_pipeline.orchestration.nightly_status import (
    describe_standing,
    headline_nights,
    is_headline,
    night_headline,
    standing_regressions,
)
from evaluation_pipeline.orchestration.partitions import (
    DEFAULT,
    Naming,
    evaluation_key,
    evaluation_partitions_of,
    split_evaluation_key,
)
from evaluation_pipeline.orchestration.resources import EvaluationStorage, hash_version
from evaluation_pipeline.orchestration.scoring import scores_alteration
from evaluation_pipeline.orchestration.selection import published_versions
from evaluation_pipeline.spec import EvaluationSpec
from schemas import InputError

# The run tag of an evaluation that regressed against the previous night: "regressed" when it is
# its night's headline (the one that alerts), "regressed, not headline" otherwise. A runs list
# filtered on ndcg_eval/nightly=regressed shows the nights that regressed.
NIGHTLY_TAG = "ndcg_eval/nightly"
HEADLINE_REGRESSED = "regressed"
OTHER_REGRESSED = "regressed, not headline"

# What the checks on the scores read of them (a Spark-written result: of each part's columns).
COVERAGE_COLUMNS = ["ranker", "cutoff", "judged_at_k"]
INCOMPLETE_COLUMNS = ["ranker", "cutoff", "status"]
# Read where the scores have it: the checks read the spec's nDCG@K rows (a file written before
# other measures has only those, and no measure column).
MEASURE_COLUMN = ("measure",)


def _published_check(storage: EvaluationStorage, place: Place, hash_of: str,
                     what: str) -> dg.AssetCheckResult:
    """The published file passes its schema and still has the published content hash
    (``hash_of``: "pool" or "judgments")."""
    manifest = storage.manifest(*place[:-1])  # beside the file
    if manifest is None:
        return dg.AssetCheckResult(passed=False, description=f"{what} is not published")
    if storage.as_published(place, manifest):
        # The bytes publishing validated and hashed, unchanged: their SHA-256 (1.5 GB/s) is
        # the proof, where reading every row again took 5 s of a 30M-row pool.
        return dg.AssetCheckResult(passed=True, metadata={
            "sha256": manifest["sha256"], "verified": "file bytes as published",
            **{key: manifest[key] for key in ("rows",) if key in manifest}})
    try:  # in the hash version the manifest holds
        verified = storage.content_sha256(place, hash_of, hash_version(manifest))
        sha, rows = verified.sha256, verified.rows
    except InputError as exc:
        return dg.AssetCheckResult(passed=False, description=str(exc)[:2000])
    return dg.AssetCheckResult(
        passed=sha == manifest["sha256"],
        description=None if sha == manifest["sha256"] else
        f"stored content has sha256 {sha}, published as {manifest['sha256']}",
        metadata={"sha256": sha, "rows": rows, "verified": "content read again"},
    )


def build_ingest_checks(naming: Naming = DEFAULT) -> list[dg.AssetChecksDefinition]:
    """The blocking checks of the published inputs of the instance ``naming`` names."""

    @dg.asset_check(asset=naming.key("judgments"), blocking=True,
                    partitions_def=naming.judgment_versions,
                    required_resource_keys=naming.resource_keys("storage"),
                    description="The published judgment version is valid and unaltered.")
    def judgments_valid(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        (storage,) = naming.resources(context, "storage")
        version = context.partition_key
        return _published_check(storage, judgments_file(version), "judgments",
                                f"judgment version {version!r}")


    @dg.asset_check(asset=naming.key("candidate_pools"), blocking=True,
                    partitions_def=naming.candidate_pools,
                    required_resource_keys=naming.resource_keys("storage"),
                    description="The published candidate pool is valid and unaltered.")
    def candidate_pool_valid(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        (storage,) = naming.resources(context, "storage")
        pool = context.partition_key
        return _published_check(storage, pool_file(pool), "pool",
                                f"candidate pool {pool!r}")


    @dg.asset_check(asset=naming.key("candidate_pools"), blocking=True,
                    partitions_def=naming.candidate_pools,
                    required_resource_keys=naming.resource_keys("storage", "policy"),
                    description="Every ranker of the pool ranks the same candidate set per "
                    "query (an error when QualityPolicy.require_shared_candidates, else a "
                    "warning).")
    def candidate_pool_shared_candidates(context: dg.AssetCheckExecutionContext
                                         ) -> dg.AssetCheckResult:
        storage, policy = naming.resources(context, "storage", "policy")
        pool = context.partition_key
        manifest = storage.manifest(*pool_file(pool)[:-1]) or {}
        if "different_candidate_set_examples" in manifest:
            # Counted when the pool was published, from the bytes candidate_pool_valid proves
            # unaltered: counting again was 5 s of a 100M-row pool's ingest.
            count = manifest["queries_with_different_candidate_sets"]
            examples = manifest["different_candidate_set_examples"]
        elif storage.is_local():  # out of core
            count, examples = candidate_set_disagreements(storage.path(*pool_file(pool)))
        else:
            differing = candidate_set_differences(storage.read_parquet(*pool_file(pool)))
            count, examples = differing.height, differing["query_id"].head(10).to_list()
        return dg.AssetCheckResult(
            passed=count == 0,
            severity=dg.AssetCheckSeverity.ERROR if policy.require_shared_candidates
            else dg.AssetCheckSeverity.WARN,
            description=None if count == 0 else
            f"{count} queries where the rankers rank different candidate sets: "
            "comparing them is not a pure reranker comparison",
            metadata={
                "queries_with_different_candidate_sets": count,
                "examples": dg.MetadataValue.json(examples),
            },
        )

    return [judgments_valid, candidate_pool_valid, candidate_pool_shared_candidates]


def _earlier_scored_version(instance: dg.DagsterInstance, storage: EvaluationStorage,
                            pool: str, version: str, spec_id: str,
                            naming: Naming) -> str | None:
    """The last version registered before ``version`` that has scores for ``pool``, proven to
    hold the bytes they were written with (scores altered since are not compared with)."""
    versions = instance.get_dynamic_partitions(naming.judgment_versions.name)
    earlier = versions[:versions.index(version)] if version in versions else []
    for candidate in reversed(earlier):
        scores = scores_file(pool, candidate, spec_id)
        if storage.exists(*scores) and scores_alteration(storage, scores) is None:
            return candidate
    return None


def _by_ranker_table(frame: pl.DataFrame, column: str) -> dg.MetadataValue:
    return dg.MetadataValue.json(
        [{"ranker": r, "cutoff": k, column: v} for r, k, v in frame.iter_rows()])


def build_evaluation_checks(spec: EvaluationSpec, naming: Naming = DEFAULT
                            ) -> Iterable[dg.AssetChecksDefinition]:
    """Warning checks on ``query_scores`` under ``spec`` (they read its stored scores), the
    nightly regression check on ``evaluation_report`` (it reads the stored report and the
    history) and the headline trend check on ``evaluation_history``, of the instance ``naming``
    names."""
    evaluation_partitions = evaluation_partitions_of(naming)

    @dg.asset_check(asset=naming.key("query_scores"), partitions_def=evaluation_partitions,
                    required_resource_keys=naming.resource_keys("storage", "policy"),
                    description="Mean judged@K per ranker and cutoff is at least "
                    "QualityPolicy.min_judged_at_k.")
    def judged_at_k_coverage(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        storage, policy = naming.resources(context, "storage", "policy")
        pool, version = split_evaluation_key(context.partition_key)
        per_query = storage.scan_parquet(*scores_file(pool, version, spec.spec_id),
                                         columns=COVERAGE_COLUMNS, optional=MEASURE_COLUMN)
        coverage = quality.judged_at_k_by_ranker(per_query)
        low = coverage.filter(pl.col("mean_judged_at_k") < policy.min_judged_at_k)
        return dg.AssetCheckResult(
            passed=low.height == 0,
            severity=dg.AssetCheckSeverity.WARN,
            description=None if low.height == 0 else
            f"judged@K below {policy.min_judged_at_k} for "
            + ", ".join(f"{r}@{k} ({v:.3f})" for r, k, v in low.iter_rows()),
            metadata={"min_judged_at_k": policy.min_judged_at_k,
                      "mean_judged_at_k": _by_ranker_table(coverage, "mean_judged_at_k")},
        )

    @dg.asset_check(asset=naming.key("query_scores"), partitions_def=evaluation_partitions,
                    required_resource_keys=naming.resource_keys("storage", "policy"),
                    description="The share of incomplete queries does not rise against the "
                    "previous judgment version of the same pool by more than "
                    "QualityPolicy.max_incomplete_share_increase.")
    def incomplete_share_trend(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        storage, policy = naming.resources(context, "storage", "policy")
        pool, version = split_evaluation_key(context.partition_key)
        current = quality.incomplete_share(storage.scan_parquet(
            *scores_file(pool, version, spec.spec_id), columns=INCOMPLETE_COLUMNS,
            optional=MEASURE_COLUMN))
        earlier = _earlier_scored_version(context.instance, storage, pool, version,
                                          spec.spec_id, naming)
        if earlier is None:
            return dg.AssetCheckResult(
                passed=True, severity=dg.AssetCheckSeverity.WARN,
                description="no earlier judgment version scored for this pool to compare with",
                metadata={"incomplete_share": _by_ranker_table(current, "incomplete_share")})
        before = quality.incomplete_share(storage.scan_parquet(
            *scores_file(pool, earlier, spec.spec_id), columns=INCOMPLETE_COLUMNS,
            optional=MEASURE_COLUMN))
        joined = current.join(before, on=["ranker", "cutoff"], suffix="_before")
        risen = joined.filter(pl.col("incomplete_share") - pl.col("incomplete_share_before")
                              > policy.max_incomplete_share_increase)
        return dg.AssetCheckResult(
            passed=risen.height == 0,
            severity=dg.AssetCheckSeverity.WARN,
            description=None if risen.height == 0 else
            f"incomplete share rose against {earlier}: "
            + ", ".join(f"{r}@{k} {b:.3f} -> {c:.3f}" for r, k, c, b in risen.iter_rows()),
            metadata={"compared_with": earlier,
                      "incomplete_share": _by_ranker_table(current, "incomplete_share")},
        )

    def stored_history(storage: EvaluationStorage):
        return read_history(storage.path(*history_file()))

    def report_html(storage: EvaluationStorage, pool: str, version: str) -> dg.MetadataValue:
        return dg.MetadataValue.path(
            str(storage.path(*report_folder(pool, version, spec.spec_id), HTML_FILE)))

    def alert_metadata(storage: EvaluationStorage, pool: str, version: str) -> dict:
        """How this evaluation's alert stands (if it raised one), and every alert of the storage
        not delivered: a failed delivery is retried by later runs, which this check's result
        does not follow, so each run's check says what stands then."""
        alerts = read_alerts(storage.path(*alerts_file()))
        key = alert_key(pool, version, spec.spec_id)
        own = [delivery_status(alert) for alert in alerts if alert["key"] == key]
        metadata = {"undelivered_alerts": dg.MetadataValue.json(undelivered(alerts))}
        if own:
            metadata["alert_delivery"] = dg.MetadataValue.json(own[0])
        return metadata

    def alert_clause(metadata: dict) -> str:
        own = metadata.get("alert_delivery")
        if own is None or own.value["state"] not in UNDELIVERED:
            return ""
        return f"; its alert {own.value['alert_id']} is {describe_delivery(own.value)}"

    @dg.asset_check(asset=naming.key("evaluation_report"),
                    partitions_def=evaluation_partitions,
                    required_resource_keys=naming.resource_keys("storage"),
                    description="No ranker regressed against the previous night (or the pinned "
                    "baseline pool): a verdict is regressed when the Holm-adjusted p is below "
                    "NightlyWatch.alpha (its adjusted interval excludes 0) and the headline "
                    "measure dropped by at least NightlyWatch.min_effect. "
                    "ERROR for the night's headline evaluation (the one that alerts), WARN for "
                    "a backfill or an older judgment version.")
    def nightly_regression(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        (storage,) = naming.resources(context, "storage")
        pool, version = split_evaluation_key(context.partition_key)
        # Reports written before the watch existed have no nightly section: nothing regressed.
        # One written before its fields were renamed is read under today's names.
        section = nightly.current_names(
            storage.read_json(*report_file(pool, version, spec.spec_id)).get("nightly"))
        regressed = nightly.regressions(section)
        history = stored_history(storage)
        published = {name: manifest[nightly.PUBLISHED_AT] for name, manifest
                     in published_versions(context.instance, storage, naming).items()}
        headline_version = night_headline(history, pool, spec.spec_id, published)
        headline = is_headline(history, pool, version, spec.spec_id)
        # Not in the history (a report from before it): judged as a headline, as before.
        headline = headline if headline is not None else headline_version in (None, version)
        description = nightly.describe_regressions(section)
        if headline:
            description = f"the night's headline evaluation: {description}"
        else:
            description = (f"not the night's headline evaluation (that is {pool} x "
                           f"{headline_version}; this is a backfill or an older version): "
                           f"{description}")
        if regressed:
            context.instance.add_run_tags(context.op_execution_context.run_id, {
                NIGHTLY_TAG: HEADLINE_REGRESSED if headline else OTHER_REGRESSED})
        metadata = {
            "headline": headline,
            "headline_evaluation": str(evaluation_key(pool, headline_version))
            if headline_version else "",
            "report_html": report_html(storage, pool, version),
            "previous_pool": (section or {}).get("previous_pool") or "",
            "regressions": dg.MetadataValue.json(
                [regression_record(c) for c in regressed]),
            # Every headline comparison's verdict with what it rests on: an inconclusive one
            # says how large a change the night could have told (its detectable effect).
            "verdicts": dg.MetadataValue.json(
                [{"verdict": c["verdict"], **regression_record(c)}
                 for c in (section or {}).get("comparisons", ()) if c.get("headline", True)]),
        }
        if not headline and headline_version:
            metadata["headline_report_html"] = report_html(storage, pool, headline_version)
        metadata |= alert_metadata(storage, pool, version)
        return dg.AssetCheckResult(
            passed=not regressed,
            severity=dg.AssetCheckSeverity.ERROR if headline else dg.AssetCheckSeverity.WARN,
            description=description + alert_clause(metadata),
            metadata=metadata,
        )

    # One status for the whole trend (the check has no partitions): whichever evaluation wrote
    # the history last, the check's latest execution says how the newest night stands.
    @dg.asset_check(asset=naming.key("evaluation_history"),
                    required_resource_keys=naming.resource_keys("storage"),
                    description="No regression of the headline trend stands on the newest "
                    "night: per ranker and cutoff, the latest headline night that regressed or "
                    "improved did not regress (a regression stands until a later headline "
                    "night improves it; no change and inconclusive nights leave it standing).")
    def headline_trend(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        (storage,) = naming.resources(context, "storage")
        history = stored_history(storage)
        nights = headline_nights(history, spec.spec_id) if history is not None else []
        if not nights:
            return dg.AssetCheckResult(passed=True, description="no headline evaluation yet")
        newest_pool, newest_version = nights[-1]
        standing = standing_regressions(history, spec.spec_id)
        newest = f"newest night {newest_pool} (headline {newest_version})"
        metadata = {
            "newest_night": newest_pool,
            "newest_headline_evaluation": str(evaluation_key(newest_pool, newest_version)),
            "nights": len(nights),
            "standing_regressions": dg.MetadataValue.json(standing),
            "history_html": dg.MetadataValue.path(str(storage.path(*history_html_file()))),
        }
        if standing:
            first = max(standing, key=lambda r: r["nights_since"])  # the oldest that stands
            metadata["regressed_evaluation"] = str(evaluation_key(first["candidate_pool"],
                                                                  first["judgment_version"]))
            metadata["report_html"] = report_html(storage, first["candidate_pool"],
                                                  first["judgment_version"])
        return dg.AssetCheckResult(
            passed=not standing,
            severity=dg.AssetCheckSeverity.ERROR,
            description=f"{newest}: no regression of the headline trend stands" if not standing
            else f"{newest}: {len(standing)} regression(s) of the headline trend stand: "
            + "; ".join(describe_standing(r) for r in standing),
            metadata=metadata,
        )

    return [judged_at_k_coverage, incomplete_share_trend, nightly_regression, headline_trend]


# The project's own code location's (no prefix).
ingest_checks = build_ingest_checks(DEFAULT)
