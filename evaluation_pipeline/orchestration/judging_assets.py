"""``judgments_llm``: an LLM judge grades a worklist's holes into a new judgment version, the
gate measures it against people, and the version lands for the pipeline to publish and
re-score (docs/judging.md, In Dagster).

On demand only: in the ``judging`` group, in no job, schedule or sensor, and without an
automation condition, so that no run spends money unasked. Its config names the worklist,
the queries table, the judge, the budget, the version it fills (``base_version``, published:
people's grades) and the pool the gate's Kendall's tau is measured over. It reads the documents
table the ``documents`` asset published (a ``documents`` config names another), and records the
SHA-256 of the rows it read (``analysis.quality.documents_sha256``, the published manifest's) in
its metadata and the gate's record: the version's lineage names the texts it was judged on,
though the published table is replaced when it changes. The API key
is read from NDCG_EVAL_JUDGE_API_KEY when the step runs (``settings.JUDGE_API_KEY``); it is in
no config, metadata or file.

A step:

1. judges the worklist's first ``budget`` pairs and ``calibration`` documents people graded in
   the base version (the gate's overlap: a hole is by definition a document no person graded),
   through the cache (``judging.run``): a rerun pays for no answer twice;
2. puts people's ratings (the base version's, ``rater_kind`` human) and the judge's (``llm``)
   into one version with raters, and gates it (``judging.gate``, the spec's cutoffs and rule,
   the thresholds NDCG_EVAL_GATE_MIN_KAPPA, _MIN_TAU and _MIN_OVERLAP);
3. records the verdict and the ratings in the storage (``gate_record``), then lands the version
   in the landing folder, promoted or not: the landing sensor publishes it, and the evaluation
   sensor scores it against the pools of its backfill window, incrementally from the base
   version's scores (only the queries whose grades changed are scored again). Under a spec
   with a ``raters`` rule the version lands with its raters; without one, as one grade per
   document under the gate's rule (people's grade where they gave one, else the judge's).

The ``judge_gate`` check that follows says whether the version was promoted, and why not
(severity ERROR); a refused version is published and reported, but the nightly keeps the last
promoted version as its headline (``gate_record.headline_candidates``).
"""


import argparse
import io
import sys
from pathlib import Path

import dagster as dg
import polars as pl
from pydantic import Field

from evaluation_pipeline import settings
from evaluation_pipeline.analysis.quality import documents_sha256
from evaluation_pipeline.io.atomic import atomic_write
from evaluation_pipeline.io.readers import read_queries
from evaluation_pipeline.io.storage import (
    DOCUMENTS_FOLDER,
    LANDED_JUDGMENTS_FOLDER,
    documents_file,
    judgments_file,
    judgments_folder,
    pool_file,
)
from evaluation_pipeline.judging.cache import AnswerCache
from evaluation_pipeline.judging.calibration import (
    DEFAULT_CALIBRATION,
    calibration_pairs,
    people_ratings,
)
from evaluation_pipeline.judging.client import JudgeClient, JudgeFailed, Retries, shown
from evaluation_pipeline.judging.document_reader import read_documents
from evaluation_pipeline.judging.gate import Thresholds, Verdict, gate
from evaluation_pipeline.judging.output import default_rater, judgment_frame
from evaluation_pipeline.judging.pairs import read_pairs, with_texts
from evaluation_pipeline.judging.progress import Progress
from evaluation_pipeline.judging.prompt import load_template
from evaluation_pipeline.judging.run import judge_pairs
from evaluation_pipeline.judging.run_options import check_options
from evaluation_pipeline.metric.raters import combine_ratings
from evaluation_pipeline.orchestration.gate_record import (
    ratings_place,
    recorded_verdict,
    verdict_place,
)
from evaluation_pipeline.orchestration.partitions import DEFAULT, Naming
from evaluation_pipeline.orchestration.resources import EvaluationStorage, LandingZone
from evaluation_pipeline.orchestration.worklist_asset import WORKLIST_GROUP
from evaluation_pipeline.spec import EvaluationSpec
from schemas import validate
from schemas.columns import GRADED, JUDGMENT_KEY, RATER, RATER_KIND

JUDGE_ASSET = "judgments_llm"
GATE_CHECK = "judge_gate"
CACHE_FOLDER = ".judge-cache"  # under a local storage, unless the config names another


class JudgeConfig(dg.Config):
    """One judge run: what to judge, by whom, within what budget, into which version."""

    version: str = Field(description="the new judgment version's name (a safe file name)")
    base_version: str = Field(
        description="the published version the worklist was made from: people's grades")
    pool: str = Field(description="the published pool the gate measures Kendall's tau over")
    worklist: str = Field(description="the worklist (ndcg-eval holes, judging_worklist) or a "
                             "file of query_id, doc_id pairs, judged in its order")
    documents: str | None = Field(
        default=None, description="the documents table (doc_id, title, text) (default: the "
        "published one, the documents asset's)")
    queries: str | None = Field(
        default=None, description="the queries table with query_text (default: the landing's)")
    judge_url: str = Field(description="the OpenAI-compatible endpoint or its /v1 base")
    model: str = Field(description="the model the endpoint serves")
    budget: int | None = Field(default=None, description="judge the worklist's first N pairs")
    budget_tokens: int | None = Field(
        default=None, description="send no further pair once the answers took T tokens")
    calibration: int = Field(
        default=DEFAULT_CALIBRATION, description="about this many documents people graded in "
        "the base version (every one of whole queries) that the judge grades too: the gate's "
        "overlap")
    concurrency: int = 4
    deadline: float = 3600.0
    timeout: float = 60.0
    retries: int = 5
    temperature: float = 0.0
    max_tokens: int | None = None
    template: str | None = Field(default=None, description="a prompt template file")
    price_per_1k_tokens: float | None = None
    rater: str | None = Field(default=None, description="the judge's id (default "
                                 "MODEL@ and the template's hash)")
    cache: str | None = Field(
        default=None, description=f"the answers' cache folder (default: {CACHE_FOLDER} under "
        "a local storage)")


def _options(config: JudgeConfig, out: Path, queries: str) -> argparse.Namespace:
    """The config as ``ndcg-eval judge``'s options, so that it is checked by the same rules."""
    return argparse.Namespace(
        budget=config.budget, budget_tokens=config.budget_tokens,
        concurrency=config.concurrency, retries=config.retries, max_tokens=config.max_tokens,
        deadline=config.deadline, timeout=config.timeout, temperature=config.temperature,
        price_per_1k_tokens=config.price_per_1k_tokens, judge_url=config.judge_url,
        model=config.model, rater=config.rater, out=out, worklist=Path(config.worklist),
        pairs=None, queries=Path(queries),
        documents=None if config.documents is None else Path(config.documents),
        template=None if config.template is None else Path(config.template))


def published_documents(storage: EvaluationStorage, landing: LandingZone, naming: Naming
                        ) -> tuple[pl.DataFrame, str, str]:
    """The documents table the ``documents`` asset published, checked by its model again:
    (its rows, its place, their SHA-256). Refused when none is published, or when the rows are
    not the ones its manifest names (being replaced, or changed after publish), so that the
    hash recorded is always a published one."""
    manifest = storage.manifest(*DOCUMENTS_FOLDER)
    if manifest is None:
        named = landing.documents_file()
        how = (f"set {settings.DOCUMENTS.name} (the component's documents attribute) to the "
               "table for the documents_changed sensor to publish" if named is None else
               f"{settings.DOCUMENTS.name} names {named}: materialize documents (job "
               f"{naming.name('ingest_documents')}) to publish it")
        raise dg.Failure(f"no documents table is published: {how}, or name a table in this "
                         "run's documents config")
    where = str(storage.path(*documents_file()))
    frame = validate("Documents", storage.read_parquet(*documents_file()), where)
    sha = documents_sha256(frame)
    if sha != manifest["sha256"]:
        raise dg.Failure(f"{where}: its rows hash to sha256 {sha}, not the {manifest['sha256']} "
                         "its manifest names: it is being replaced, or it changed after it was "
                         "published. Materialize documents again, then this asset")
    return frame, where, sha


def landed_frame(ratings: pl.DataFrame, spec: EvaluationSpec, verdict: Verdict,
                 base: pl.DataFrame) -> pl.DataFrame:
    """What lands: the ratings themselves under a spec with a rule, else one grade per document
    under the gate's rule (a version with raters is not scored without one). One grade per
    document keeps the base version's other columns on the ratings people's grade decided, so
    that its queries the judge did not change hash as they did, and are not scored again."""
    if spec.raters is not None:
        return ratings
    combined = combine_ratings(ratings, spec.replace(raters=verdict.rule))
    extra = [c for c in base.columns if c not in combined.columns and c not in (RATER,
                                                                                RATER_KIND)]
    if not extra:
        return combined
    decided = [*JUDGMENT_KEY, "grade", "grade_status"]
    return combined.join(base.select(*decided, *extra), on=decided, how="left",
                         nulls_equal=True).select(
        *(c for c in base.columns if c not in (RATER, RATER_KIND)))


def _land(landing: LandingZone, version: str, frame: pl.DataFrame) -> Path:
    target = landing.root() / LANDED_JUDGMENTS_FOLDER / f"{version}.csv"
    target.parent.mkdir(parents=True, exist_ok=True)
    validate("Judgments", frame, str(target))
    return atomic_write(target, lambda tmp: frame.write_csv(tmp))


def _verdict_metadata(verdict: dict) -> dict:
    kappas = [p["kappa_quadratic"] for p in verdict["pairs"]
              if p["decides"] and p["kappa_quadratic"] is not None]
    taus = [t["tau"] for t in verdict["taus"] if t["tau"] is not None]
    thresholds = verdict["thresholds"]
    return {
        "promoted": verdict["promoted"],
        "reason": verdict["reason"],
        "min_kappa_quadratic": min(kappas) if kappas else None,
        "min_kendall_tau": min(taus) if taus else None,
        "kappa_by_pair": dg.MetadataValue.json(verdict["pairs"]),
        "kendall_tau_by_cutoff": dg.MetadataValue.json(verdict["taus"]),
        "thresholds": dg.MetadataValue.json(thresholds),
    }


def build_judging_assets(spec: EvaluationSpec, naming: Naming = DEFAULT
                         ) -> tuple[dg.AssetsDefinition, dg.AssetChecksDefinition]:
    """``judgments_llm`` and its ``judge_gate`` check, of the instance ``naming`` names."""
    landing_key, storage_key = naming.name("landing"), naming.name("storage")
    asset_key = naming.key(JUDGE_ASSET)

    @dg.asset(
        key=asset_key,
        group_name=naming.group(WORKLIST_GROUP),
        required_resource_keys={landing_key, storage_key},
        kinds={"polars", "csv"},
        # The documents it reads by default: the UI shows which table a version was judged on.
        deps=[naming.key("judging_worklist"), naming.key("documents")],
        metadata={"spec_id": spec.spec_id},
        description="On demand: an LLM judge grades a worklist's holes (and documents people "
        "graded, for the gate) into a new judgment version; the gate measures it against "
        "people, and the version lands for the landing sensor to publish and the evaluation "
        "sensor to re-score incrementally. Costs money: never run by a job or schedule.",
    )
    def judgments_llm(context: dg.AssetExecutionContext, config: JudgeConfig
                      ) -> dg.MaterializeResult:
        landing: LandingZone = getattr(context.resources, landing_key)
        storage: EvaluationStorage = getattr(context.resources, storage_key)
        queries_path = config.queries or landing.queries_path
        out = landing.root() / LANDED_JUDGMENTS_FOLDER / f"{config.version}.csv"
        check_options(_options(config, out, queries_path))
        for where, taken in (("landed", any((landing.root() / LANDED_JUDGMENTS_FOLDER).glob(
                f"{config.version}.*"))), ("published", storage.manifest(
                *judgments_folder(config.version)) is not None)):
            if taken:
                raise dg.Failure(f"judgment version {config.version!r} is already {where}: "
                                 "name the new version otherwise (a version is immutable)")
        if storage.manifest(*judgments_folder(config.base_version)) is None:
            raise dg.Failure(f"base version {config.base_version!r} is not published")
        base = storage.read_parquet(*judgments_file(config.base_version))
        people = people_ratings(base, config.base_version)
        candidates = storage.read_parquet(*pool_file(config.pool))
        template = load_template(None if config.template is None else Path(config.template))
        queries = read_queries(queries_path)
        if config.documents is not None:  # the run's own table, as ndcg-eval judge reads it
            documents, documents_source = read_documents(config.documents), config.documents
            documents_hash = documents_sha256(documents)
        else:
            documents, documents_source, documents_hash = published_documents(
                storage, landing, naming)
        context.log.info(f"documents: {documents.height} rows of {documents_source}, sha256 "
                         f"{documents_hash}")
        holes = read_pairs(config.worklist)
        if config.budget is not None:
            holes = holes.head(config.budget)
        calibration = calibration_pairs(people, holes, queries, documents, config.calibration)
        pairs = with_texts(pl.concat([holes, calibration.select(holes.columns)]), queries,
                           documents, config.worklist, str(queries_path), documents_source)
        rater = config.rater or default_rater(config.model, template)
        cache_dir = Path(config.cache) if config.cache else (
            Path(storage.root()) / CACHE_FOLDER if storage.is_local() else None)
        if cache_dir is None:
            raise dg.Failure("the storage is not on this machine: name a local cache folder "
                             "(config cache) for the judge's answers")
        context.log.info(f"judging {holes.height} holes and {calibration.height} documents "
                         f"people graded with {config.model} at {shown(config.judge_url)}; "
                         f"rater {rater}")
        client = JudgeClient(config.judge_url, config.model,
                             api_key=settings.JUDGE_API_KEY.get(),
                             temperature=config.temperature, max_tokens=config.max_tokens,
                             timeout=config.timeout,
                             retries=Retries(attempts=config.retries + 1))
        cache = AnswerCache(cache_dir)
        progress = Progress(pairs.height, config.price_per_1k_tokens, stream=sys.stderr)
        try:
            outcome = judge_pairs(pairs, template, client, cache,
                                  concurrency=config.concurrency, deadline=config.deadline,
                                  budget_tokens=config.budget_tokens, progress=progress)
        except JudgeFailed as exc:
            raise dg.Failure(f"the judge failed: {exc}. Nothing landed; the answers so far "
                             f"are in {cache_dir}, and a rerun asks only the others") from None
        finally:
            client.close()
            cache.close()
        judged = judgment_frame(outcome.judged, version=config.version, rater=rater,
                                model=config.model, template=template,
                                temperature=config.temperature)
        ratings = pl.concat([people, judged], how="diagonal_relaxed").with_columns(
            pl.lit(config.version).alias("judgment_version")).sort(*JUDGMENT_KEY, RATER)
        ratings = validate("Judgments", ratings, f"judgment version {config.version}")
        verdict = gate(ratings, spec, candidates, Thresholds.declared(),
                       f"judgment version {config.version}")
        # The verdict and the ratings first: a version never lands without its verdict, so
        # the nightly never takes a refused version as its headline, even for a moment.
        buffer = io.BytesIO()
        ratings.write_parquet(buffer, compression="zstd", statistics=True)
        storage.write(ratings_place(config.version), lambda h: h.write(buffer.getvalue()))
        # The verdict names the documents the version was judged on: its lineage.
        storage.write_json(verdict.to_dict() | {"documents_sha256": documents_hash,
                                                "documents": documents_source},
                           *verdict_place(config.version))
        landed = _land(landing, config.version, landed_frame(ratings, spec, verdict, base))
        context.log.info(f"{config.version}: {verdict.reason}; landed at {landed}")
        tokens = int(judged["judge_tokens"].sum() or 0)
        price = config.price_per_1k_tokens
        return dg.MaterializeResult(metadata={
            "judgment_version": config.version,
            "base_version": config.base_version,
            "candidate_pool": config.pool,
            "rater": rater,
            "model": config.model,
            "template_sha256": template.sha256,
            "documents_sha256": documents_hash,
            "documents": dg.MetadataValue.path(documents_source),
            "pairs_judged": judged.height,
            "holes_judged": holes.height,
            "calibration_judged": calibration.height,
            "unknown": int((judged["grade_status"] != GRADED).sum()),
            "not_judged": outcome.not_judged,
            "asked": outcome.calls,
            "from_cache": judged.height - outcome.calls,
            "tokens_paid": outcome.tokens,
            "tokens": tokens,
            "estimated_cost_usd": None if not price else round(outcome.tokens * price / 1000, 6),
            **_verdict_metadata(verdict.to_dict()),
            "landed": dg.MetadataValue.path(str(landed)),
            "ratings": dg.MetadataValue.path(str(storage.path(*ratings_place(config.version)))),
        })

    @dg.asset_check(
        asset=asset_key,
        name=GATE_CHECK,
        required_resource_keys={storage_key},
        description="The gate: the judge's quadratic kappa with each person and Kendall's tau "
        "of the rankers' orders against the thresholds (NDCG_EVAL_GATE_MIN_KAPPA, _MIN_TAU, "
        "_MIN_OVERLAP). Refused: the version is published and reported, but not the nightly's "
        "headline.",
    )
    def judge_gate(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
        storage: EvaluationStorage = getattr(context.resources, storage_key)
        event = context.instance.get_latest_materialization_event(asset_key)
        materialization = event.asset_materialization if event is not None else None
        version = (materialization.metadata["judgment_version"].value
                   if materialization is not None else None)
        verdict = None if version is None else recorded_verdict(storage, version)
        if verdict is None:
            return dg.AssetCheckResult(
                passed=False, severity=dg.AssetCheckSeverity.ERROR,
                description="no verdict recorded: the judge's version was not gated")
        reason = verdict["reason"] + ("" if verdict["promoted"] else
                                      "; it is published and reported, but not promoted: the "
                                      "nightly keeps the last promoted version as its headline")
        metadata = {key: value for key, value in _verdict_metadata(verdict).items()
                    if value is not None}
        return dg.AssetCheckResult(
            passed=bool(verdict["promoted"]), severity=dg.AssetCheckSeverity.ERROR,
            description=reason, metadata={"judgment_version": version, **metadata})

    return judgments_llm, judge_gate
