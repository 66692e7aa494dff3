"""The one place that assembles the Dagster code location.

Everything that differs between environments arrives here, from arguments or environment
variables: the spec file, the storage base (a folder or an fsspec URL), the landing folder, the
queries and documents tables, the check thresholds, the nightly cron and the nightly watch.

The landing folder, the queries table and the storage have no default in a deployment: an
installed package has no repository beside it, so a missing one is an error naming its variable.
The documents table, which only the judge reads, may be left out: then none is published. Only
under the development switch (NDCG_EVAL_DEV=1: `make run`, `make ui`, the tests) do they
default to the source checkout's example data and ``.storage/``.

``NdcgEvaluation`` is the same code location as a Dagster component (docs/dagster.md): each
attribute a ``defs.yaml`` leaves out is read from its environment variable, as here. This
module's ``defs`` is one use of it, built when first asked for (by Dagster, or an import of
``defs``): importing the module (as ``dg list components`` does) reads no setting.
"""

from __future__ import annotations

import textwrap
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import dagster as dg
import pydantic

from evaluation_pipeline import settings
from evaluation_pipeline.ingest.external_sort import parse_memory_limit
from evaluation_pipeline.io import conditional
from evaluation_pipeline.io.locations import storage_options
from evaluation_pipeline.io.storage import (
    DEFAULT_DOCUMENTS,
    DEFAULT_LANDING,
    DEFAULT_QUERIES,
    DEFAULT_SPEC,
    DEFAULT_STORAGE,
    REPO,
)
from evaluation_pipeline.orchestration.assets import build_evaluation_assets
from evaluation_pipeline.orchestration.checks import (
    build_evaluation_checks,
    build_ingest_checks,
)
from evaluation_pipeline.orchestration.ingest_assets import build_ingest_assets
from evaluation_pipeline.orchestration.jobs import build_jobs, evaluation_selection
from evaluation_pipeline.orchestration.judging_assets import build_judging_assets
from evaluation_pipeline.orchestration.partitions import DEFAULT, Naming
from evaluation_pipeline.orchestration.resources import (
    EvaluationStorage,
    LandingZone,
    MemoryBudget,
    NightlyWatch,
    QualityPolicy,
)
from evaluation_pipeline.orchestration.schedules import build_nightly_schedule
from evaluation_pipeline.orchestration.scoring import ScoringEngine
from evaluation_pipeline.orchestration.sensors import (
    build_evaluation_sensor,
    build_ingest_sensors,
)
from evaluation_pipeline.orchestration.worklist_asset import build_worklist_asset
from evaluation_pipeline.spec import EvaluationSpec, load_spec
from schemas.errors import EvaluationError


class MissingSetting(EvaluationError):
    """A location the deployment must name (landing, queries, storage) was not given."""


def pipeline_spec(spec_path: str | Path | None = None) -> EvaluationSpec:
    """The spec the pipeline evaluates under: ``spec_path``, $NDCG_EVAL_SPEC or the packaged one."""
    chosen = spec_path or settings.SPEC.get()
    if chosen:
        return load_spec(chosen)
    with resources.as_file(DEFAULT_SPEC) as packaged:
        return load_spec(packaged)


def setting(given: str | None, variable: settings.Setting, what: str,
            development_default: Path) -> str | None:
    """``given``, else $``variable``, else (development switch only) the checkout's default;
    else None for a location a deployment may leave out (``variable.required`` false)."""
    value = given or variable.get()
    if value:
        return value
    if settings.DEV.get() == "1":
        return str(development_default)
    if not variable.required:
        return None
    raise MissingSetting(
        f"{variable} is not set: name {what} in it (or pass it to build_definitions). "
        f"{settings.DEV.name}=1 uses the source checkout's "
        f"{development_default.relative_to(REPO)}, as `make run` and the tests do."
    )


def nightly_watch(alpha: float | None = None, min_effect: float | None = None,
                  baseline_pool: str | None = None, alert_webhook: str | None = None,
                  power: float | None = None) -> NightlyWatch:
    """The watch: each threshold given, else its variable's, else its default. The baseline
    pool and the webhook left out are read from their variables when a report is written."""
    return NightlyWatch(alpha=settings.ALPHA.given(alpha),
                        min_effect=settings.MIN_EFFECT.given(min_effect),
                        power=settings.POWER.given(power),
                        baseline_pool=baseline_pool, alert_webhook=alert_webhook)


def nightly_schedule(spec: EvaluationSpec, cron: str | None, timezone: str | None,
                     naming: Naming = DEFAULT):
    """The nightly schedule; a cron string Dagster refuses is named here."""
    cron = settings.NIGHTLY_CRON.given(cron)
    timezone = settings.NIGHTLY_TIMEZONE.given(timezone)
    try:
        return build_nightly_schedule(spec, cron, timezone, naming)
    except dg.DagsterInvalidDefinitionError:
        raise EvaluationError(f"{settings.NIGHTLY_CRON.name}={cron!r} is not a cron string "
                              "(write e.g. '0 2 * * *')") from None


def check_settings(storage: EvaluationStorage, watch: NightlyWatch) -> None:
    """Every setting the pipeline reads while it runs, checked before its first write: a
    bad value is named here, with its variable, rather than as a traceback in a step."""
    storage_options()  # read for every URL, the storage's or an input's; its JSON named
    for variable in settings.SETTINGS:
        variable.value()  # its declared type, range or choices
    parse_memory_limit(None)
    root = storage.root()  # an unknown scheme, a missing filesystem
    # The history and the record of alerts are files every evaluation changes.
    conditional.require(root, "the history and the record of alerts")
    watch.alert_settings().check()


def build_definitions(
    *,
    spec_path: str | Path | None = None,
    storage_base: str | None = None,
    landing_folder: str | None = None,
    queries_path: str | None = None,
    documents_path: str | None = None,
    policy: QualityPolicy | None = None,
    nightly_cron: str | None = None,
    nightly_timezone: str | None = None,
    engine: str | None = None,
    watch: NightlyWatch | None = None,
    storage_options: dict[str, Any] | None = None,
    memory: MemoryBudget | None = None,
    spark_master: str | None = None,
    key_prefix: str | list[str] | None = None,
    group_name: str | None = None,
) -> dg.Definitions:
    """The pipeline's definitions. ``key_prefix`` (a name or a list of names) prefixes its
    asset keys and names its jobs, sensors, schedule, resource keys and partitions apart, so
    that instances with different prefixes live in one code location; ``group_name`` puts
    every asset in that group (without it: the ``ingest`` and ``evaluation`` groups)."""
    naming = Naming.of(key_prefix, group_name)
    spec = pipeline_spec(spec_path)
    storage = EvaluationStorage(base=setting(
        storage_base, settings.STORAGE, "the storage (a folder or an fsspec URL)",
        DEFAULT_STORAGE), storage_options=storage_options or {})
    landing = LandingZone(
        folder=setting(landing_folder, settings.LANDING, "the landing folder",
                       DEFAULT_LANDING),
        queries_path=setting(queries_path, settings.QUERIES, "the queries table",
                             DEFAULT_QUERIES),
        documents_path=setting(documents_path, settings.DOCUMENTS, "the documents table",
                               DEFAULT_DOCUMENTS),
    )
    watch = watch or nightly_watch()
    check_settings(storage, watch)
    engine = settings.ENGINE.given(engine)
    resources = {
        "storage": storage,
        "landing": landing,
        "policy": policy or QualityPolicy(),
        # The baseline pool and the webhook are read from the environment at run time
        # (NDCG_EVAL_BASELINE_POOL, NDCG_EVAL_ALERT_WEBHOOK) unless configured here.
        "watch": watch,
        # auto streams Parquet (the published files are) past a small size.
        "scoring": ScoringEngine(engine=engine,
                                 spark_master=spark_master or settings.SPARK_MASTER.get(),
                                 incremental=settings.incremental()),
        # Unset fields read NDCG_EVAL_MEMORY_LIMIT and NDCG_EVAL_SPILL_DIR when a step runs.
        "memory": memory or MemoryBudget(),
    }
    judge, judge_gate = build_judging_assets(spec, naming)  # on demand: in no job
    return dg.Definitions(
        assets=[*build_ingest_assets(naming), *build_evaluation_assets(spec, naming),
                build_worklist_asset(spec, naming), judge],
        asset_checks=[*build_ingest_checks(naming), *build_evaluation_checks(spec, naming),
                      judge_gate],
        jobs=list(build_jobs(naming)),
        sensors=[
            *build_ingest_sensors(naming),
            build_evaluation_sensor(spec, naming),
            dg.AutomationConditionSensorDefinition(
                naming.name("evaluation_automation"),
                target=evaluation_selection(naming),
                default_status=dg.DefaultSensorStatus.RUNNING,
                description="Scores and reports follow new upstream partitions.",
            ),
        ],
        schedules=[
            nightly_schedule(spec, nightly_cron, nightly_timezone, naming),
        ],
        # Under the instance's names: another instance's storage or landing is its own.
        resources={naming.name(key): resource for key, resource in resources.items()},
    )


# The settings that are attributes of the component, by attribute.
ATTRIBUTE_SETTINGS = {variable.attribute: variable for variable in settings.SETTINGS
                      if variable.is_attribute}


def attribute(meaning: str, left_out: str, example: str) -> dg.Resolver:
    """An attribute's documentation: what it does, what leaving it out means, and an example
    value (YAML), as the component's schema and the scaffolded defs.yaml show them."""
    return dg.Resolver.default(description=meaning, examples=[example],
                               json_schema_extra={"left_out": left_out})


# One attribute for each setting of settings.ComponentSettings, left out by default. A choice
# is text here, refused by its setting's rule with the others when the definitions are built.
SettingAttributes = pydantic.create_model(
    "SettingAttributes", __base__=dg.Model, __module__=__name__,
    **{name: (Annotated[(variable.kind if variable.choices else variable.field.annotation)
                        | None, attribute(variable.meaning,
                                          f"{variable.name}, else {variable.default}",
                                          variable.example)], None)
       for name, variable in ATTRIBUTE_SETTINGS.items()})


def defs_yaml(type_name: str) -> str:
    """The scaffolded defs.yaml: the locations a deployment must name, uncommented; the rest
    commented out (the variable's value, else its default, applies)."""
    lines = [f"type: {type_name}", "",
             "# An attribute left out is read from its environment variable, if it has one "
             "(docs/dagster.md).",
             "attributes:"]
    # The instance's names first: they have no variable.
    for name in sorted(NdcgEvaluation.model_fields, key=ATTRIBUTE_SETTINGS.__contains__):
        documented = next(rule for rule in NdcgEvaluation.model_fields[name].metadata
                          if isinstance(rule, dg.Resolver))
        lines += textwrap.wrap(documented.description, 94, initial_indent="  # ",
                               subsequent_indent="  # ")
        lines.append(f"  # (left out: {documented.json_schema_extra['left_out']})")
        required = name in ATTRIBUTE_SETTINGS and ATTRIBUTE_SETTINGS[name].required
        lines.append(f"  {'' if required else '# '}{name}: {documented.examples[0]}")
    return "\n".join(lines) + "\n"


class DefsYamlScaffolder(dg.Scaffolder):
    """`dg scaffold defs evaluation_pipeline.definitions.NdcgEvaluation FOLDER`: a commented
    defs.yaml."""

    def scaffold(self, request: dg.ScaffoldRequest) -> None:
        request.target_path.mkdir(parents=True, exist_ok=True)
        (request.target_path / "defs.yaml").write_text(defs_yaml(request.type_name))


@dg.scaffold_with(DefsYamlScaffolder)
class NdcgEvaluation(dg.Component, dg.Resolvable, SettingAttributes):
    """The NDCG evaluation pipeline: judgment versions and candidate pools ingested from a
    landing folder, every pool scored against every version with its checks and report, the
    nightly watch, its sensors, schedule, jobs and resources. An attribute left out is read
    from its NDCG_EVAL_* variable when the definitions are built (docs/configuration.md)."""

    # No variable stands for these: an instance is named in its defs.yaml, and the project's
    # own location has no name.
    key_prefix: Annotated[list[str] | str | None, attribute(
        "the prefix of this instance's asset keys, and of its jobs, sensors, schedule, resource "
        "keys and partitions: a name or a list of names; two instances in one code location "
        "need different ones", "no prefix", "search")] = None
    group_name: Annotated[str | None, attribute(
        "the group of every asset of this instance", "the ingest and evaluation groups",
        "search_quality")] = None

    def build_defs(self, context: dg.ComponentLoadContext | None = None) -> dg.Definitions:
        if self.memory_limit is not None:
            parse_memory_limit(self.memory_limit)  # a size that is none is named here
        return build_definitions(
            spec_path=self.spec, storage_base=self.storage, landing_folder=self.landing,
            queries_path=self.queries, documents_path=self.documents,
            nightly_cron=self.nightly_cron,
            nightly_timezone=self.nightly_timezone, engine=self.engine,
            watch=nightly_watch(self.alpha, self.min_effect, self.baseline_pool,
                                self.alert_webhook, self.power),
            storage_options=self.storage_options, spark_master=self.spark_master,
            memory=MemoryBudget(memory_limit=self.memory_limit, spill_dir=self.spill_dir),
            key_prefix=self.key_prefix, group_name=self.group_name)


# The code location once built: Dagster builds it once per process, and so does ``defs``.
_built: dict[str, dg.Definitions] = {}


@dg.definitions
def code_location() -> dg.Definitions:
    """The project's own code location: the component configured from the environment alone
    (``dagster ... -m evaluation_pipeline.definitions`` finds it)."""
    if "defs" not in _built:
        _built["defs"] = NdcgEvaluation().build_defs()
    return _built["defs"]


def __getattr__(name: str):
    # ``defs`` (workspace.yaml's attribute) is built on first use: importing this module, as
    # `dg list components` does, reads no setting.
    if name == "defs":
        return code_location()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
