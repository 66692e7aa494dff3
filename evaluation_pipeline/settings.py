"""Every ``NDCG_EVAL_*`` environment variable, declared once, as a field of ``Settings``: its
name (``NDCG_EVAL_`` and the field's name in capitals, pydantic-settings' ``env_prefix``), its
type and default, the values it allows (a range, choices) and its meaning. The fields of
``ComponentSettings`` are also the attributes of the NdcgEvaluation component
(definitions.py), the resources take their defaults from them, and docs/configuration.md's
table is written from them (``python -m evaluation_pipeline.settings docs/configuration.md``).

Modules read a variable through its handle (``settings.MEMORY_LIMIT.get()`` for its text,
``.value()`` for its value, checked) and name it in messages by ``.name``; no other module
spells an ``NDCG_EVAL_`` name. Each is read when it is needed, not all at once: a bad variable
fails what reads it, not a command that has no use for it (``Settings()`` reads them all).

An empty value counts as unset, as a shell's ``VAR= command`` means.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import annotated_types
from pydantic import AfterValidator, Field, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.errors import EvaluationError

PREFIX = "NDCG_EVAL_"


def setting(default: Any, meaning: str, *, unset: str | None = None, development: str = "",
            what: str | None = None, example: str | None = None, **rules: Any) -> Any:
    """A variable's declaration: ``default`` (None: none, and ``unset`` says what applies in
    words; ``development``: a location, this under NDCG_EVAL_DEV=1, that a deployment must name
    unless ``unset`` says what leaving it out means), ``meaning``; ``what`` names a valid value
    where its type does not (in a refusal, with ``{choices}`` for the choices); ``example``: a
    value as a defs.yaml writes it; ``rules``: pydantic's bounds (gt, ge, le)."""
    extra = {key: value for key, value in
             (("unset", unset), ("development", development), ("what", what)) if value}
    return Field(default, description=meaning, examples=[example] if example else None,
                 json_schema_extra=extra or None, **rules)


def _time_zone(name: str) -> str:
    try:
        ZoneInfo(name)
    except (ValueError, ZoneInfoNotFoundError):
        raise ValueError(name) from None
    return name


class ComponentSettings(BaseSettings):
    """The settings a deployment gives; each is an attribute of the NdcgEvaluation component
    too, in this order (the scaffolded defs.yaml's)."""

    model_config = SettingsConfigDict(env_prefix=PREFIX, env_ignore_empty=True)

    # Where the pipeline reads and writes (definitions.py).
    storage: str | None = setting(
        None, "the storage every published input, score and report goes to: a folder or an "
        "fsspec URL", development="the checkout's .storage/",
        example="/data/ndcg-eval/storage")
    # io.locations reads the variable (its JSON named in its refusal).
    storage_options: dict[str, Any] = setting(
        {}, "a JSON object of fsspec options for every URL read or written (endpoint, "
        "credentials)", example='{endpoint_url: "http://127.0.0.1:9000"}')
    landing: str | None = setting(
        None, "the landing folder the sensors watch for judgment versions and candidate pools",
        development="the bundled landing folder",
        example="/data/ndcg-eval/landing")
    queries: str | None = setting(
        None, "the queries table (query text, slices and weights)",
        development="the bundled queries table",
        example="/data/ndcg-eval/queries.csv")
    # Only the judge reads it (judgments_llm): a deployment that does not judge names none.
    documents: str | None = setting(
        None, "the documents table (doc_id, title, text) the judge reads, published by the "
        "documents asset", unset="unset: none is published; the judge's documents config "
        "names one", development="the bundled documents table",
        example="/data/ndcg-eval/documents.parquet")
    # What the pipeline evaluates under.
    spec: str | None = setting(
        None, "the spec file (YAML or TOML) the pipeline evaluates under",
        unset="the packaged evaluation_spec.yaml", example="/data/ndcg-eval/evaluation_spec.yaml")
    engine: Literal["auto", "local", "streaming", "spark"] = setting(
        "auto", "the pipeline's scoring engine: auto, local, streaming or spark",
        what="an engine: choose one of {choices}", example="auto")
    spark_master: str | None = setting(
        None, "the Spark master of the spark engine (spark://host:7077, yarn, k8s://...)",
        unset="a local session, or spark-submit's --master", example="spark://spark-master:7077")
    # ingest.external_sort reads it (a size, named in its refusal).
    memory_limit: str = setting(
        "2GB", "the memory budget of sorts, of the engine choice and of a new version's "
        "incremental scoring on this machine (e.g. 512MB, 4GB)", example="4GB")
    spill_dir: str | None = setting(
        None, "where a sort spills past the memory budget",
        unset="the storage's spill folder when local, else the system's temp folder",
        example="/scratch/ndcg-eval")
    # The nightly watch. Dagster checks the cron string (definitions.py).
    nightly_cron: str = setting(
        "0 2 * * *", "when the nightly schedule evaluates the newest pool",
        example='"0 2 * * *"')
    nightly_timezone: Annotated[str, AfterValidator(_time_zone)] = setting(
        "UTC", "the time zone of the nightly schedule",
        what="a time zone (write e.g. UTC or Europe/Berlin)", example="UTC")
    alpha: float = setting(
        0.05, "the watch's significance level, after Holm's adjustment", example="0.05",
        gt=0, le=1, allow_inf_nan=False)
    # A negative smallest drop would call an improvement a regression.
    min_effect: float = setting(
        0.01, "the smallest drop in mean NDCG the watch calls a regression", example="0.01",
        ge=0, allow_inf_nan=False)
    power: float = setting(
        0.8, "the power of each comparison's detectable effect: the least change its test, at "
        "the level its family holds it to, finds this often", example="0.8",
        gt=0, lt=1, allow_inf_nan=False)
    baseline_pool: str | None = setting(
        None, "one pool every night is compared against, instead of the previous night",
        unset="unset: the previous night", example="pool-2026-12-01")
    # nightly.alerts checks the URL.
    alert_webhook: str | None = setting(
        None, "the URL each alert is POSTed to as JSON",
        unset="unset: alerts are recorded, not sent", example="https://hooks.example.org/ndcg-eval")


class Settings(ComponentSettings):
    """Every variable: the component's, and those a run or a test reads on its own."""

    dev: str | None = setting(
        None, "1: the storage, landing, queries and documents default to the checkout's "
        "example data "
        "(`make run`, `make ui` and the tests set it)", unset="unset")
    lock_timeout: float = setting(
        1800, "seconds a run waits for a lock another holds (`make run`: the instance; a "
        "bucket: the history) before it gives up", gt=0, allow_inf_nan=False)
    backfill_nights: int = setting(
        14, "a new judgment version is scored against the newest this many nights already "
        "landed (and every night after it); 0: every night", ge=0)
    incremental: Literal["0", "1"] = setting(
        "1", "1: a new judgment version's scores of a pool reuse an earlier version's rows for "
        "the queries whose grades did not change (the same bytes as a full scoring); 0: score "
        "in full")
    database_timeout: float = setting(
        60, "seconds `make run` waits for one answer of the Dagster instance's database (a "
        "statement, a connection) before it names the database and exits 1", gt=0,
        allow_inf_nan=False)
    # ndcg-eval judge sends it as a bearer token; it is never printed, logged or written.
    judge_api_key: str | None = setting(
        None, "the API key `ndcg-eval judge` sends to its judge (a bearer token), never printed, "
        "logged or written", unset="unset: no Authorization header (a local server)")
    # The gate of a version with a judge's ratings (judging.gate; contract section 1, Judge
    # ratings). 0.6 is where quadratic kappa is read as substantial agreement (Landis and Koch);
    # 0.8 is the order agreement TREC's studies of assessor disagreement (Voorhees 2000) take
    # as an equivalent ranking of systems; 30 documents keep one lucky streak from deciding.
    gate_min_kappa: float = setting(
        0.6, "the gate: the least quadratic Cohen's kappa between a judge (rater_kind llm) and "
        "each person (rater_kind human) over the documents both graded", ge=-1, le=1,
        allow_inf_nan=False)
    gate_min_tau: float = setting(
        0.8, "the gate: the least Kendall's tau between the rankers' orders under people's "
        "grades and under the judge's, over the documents both graded, at every cutoff",
        ge=-1, le=1,
        allow_inf_nan=False)
    gate_min_overlap: int = setting(
        30, "the gate: the fewest documents a judge and a person must both have graded for "
        "their kappa to decide", ge=1)
    # Tests only.
    fail_write: str | None = setting(
        None, "fault injection for tests: PATTERN[:N] makes the storage's writes of matching "
        "files fail with ENOSPC (the first N times)", unset="unset")


_BOUNDS = ((annotated_types.Gt, "gt", "above"), (annotated_types.Ge, "ge", "at least"),
           (annotated_types.Le, "le", "at most"))


@dataclass(frozen=True)
class Setting:
    """One variable: a handle on its field of ``Settings``."""

    attribute: str  # the field's name; the component's attribute's, if it is one

    @property
    def field(self) -> FieldInfo:
        return Settings.model_fields[self.attribute]

    @property
    def name(self) -> str:
        return PREFIX + self.attribute.upper()

    @property
    def meaning(self) -> str:
        return self.field.description

    @property
    def value_default(self) -> Any:
        """What applies when the variable is unset: a value, or None."""
        return self.field.default

    @property
    def development(self) -> str | None:
        """A location: what it is under NDCG_EVAL_DEV=1, else None."""
        return (self.field.json_schema_extra or {}).get("development")

    @property
    def required(self) -> bool:
        """A location a deployment must name: one with no ``unset`` meaning beside its
        development default."""
        return bool(self.development) and "unset" not in (self.field.json_schema_extra or {})

    @property
    def default(self) -> str:
        """What applies when the variable is unset, in words."""
        default = self.value_default
        if self.development:
            development = f"{_BY_ATTRIBUTE['dev'].name}=1: {self.development}"
            if self.required:
                return f"none: required ({development})"
            return f"{self.field.json_schema_extra['unset']} ({development})"
        if default is None:
            return self.field.json_schema_extra["unset"]
        if isinstance(default, dict):
            return json.dumps(default)
        return f"{default:g}" if isinstance(default, float) else str(default)

    @property
    def example(self) -> str | None:
        return (self.field.examples or [None])[0]

    @property
    def is_attribute(self) -> bool:
        """Whether the NdcgEvaluation component has an attribute for it."""
        return self.attribute in ComponentSettings.model_fields

    @property
    def kind(self) -> type:
        """The type of a value (a choice's type for choices), None aside."""
        annotation = self.field.annotation
        if self.choices:
            return type(self.choices[0])
        if get_origin(annotation) in (Union, UnionType):
            annotation = next(arg for arg in get_args(annotation) if arg is not type(None))
        return get_origin(annotation) or annotation

    @property
    def choices(self) -> tuple:
        return get_args(self.field.annotation) if get_origin(
            self.field.annotation) is Literal else ()

    def values(self) -> str:
        """What a valid value is, in words."""
        if self.choices:
            *first, last = self.choices
            return f"{', '.join(first)} or {last}" if first else last
        extra = self.field.json_schema_extra or {}
        if "what" in extra:
            return extra["what"]
        bounds = " and ".join(f"{words} {getattr(rule, key):g}" for rule in self.field.metadata
                              for kind, key, words in _BOUNDS if isinstance(rule, kind))
        noun = {float: "a number", int: "a whole number", dict: "a JSON object"}.get(
            self.kind, "text")
        return f"{noun} {bounds}" if bounds else noun

    def _refusal(self, named: str, value: Any) -> EvaluationError:
        what = (self.field.json_schema_extra or {}).get("what")
        what = what.format(choices=", ".join(self.choices)) if what else self.values()
        return EvaluationError(f"{named}={value!r} is not {what}")

    @cached_property
    def _adapter(self) -> TypeAdapter:
        return TypeAdapter(self.field.rebuild_annotation())

    def get(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The text, or None when unset or empty."""
        return (os.environ if environ is None else environ).get(self.name) or None

    def value(self, environ: Mapping[str, str] | None = None) -> Any:
        """The value, checked by its declaration's rules, else the default; a value they
        refuse is named with the variable."""
        text = self.get(environ)
        if text is None:
            return self.value_default
        try:
            if self.kind is dict:
                return self._adapter.validate_json(text)
            return self._adapter.validate_strings(text)
        except ValidationError:
            raise self._refusal(self.name, text) from None

    def given(self, value: Any, environ: Mapping[str, str] | None = None) -> Any:
        """``value`` (an argument or an attribute, named by the attribute), checked, unless it is
        None: then the variable's."""
        if value is None:
            return self.value(environ)
        try:
            return self._adapter.validate_python(value)
        except ValidationError:
            raise self._refusal(self.attribute, value) from None

    def __str__(self) -> str:
        return self.name


SETTINGS: tuple[Setting, ...] = tuple(Setting(attribute) for attribute in Settings.model_fields)
_BY_ATTRIBUTE = {setting.attribute: setting for setting in SETTINGS}
# The handles by name (``settings.ALPHA``), made from the fields rather than listed again.
globals().update({setting.attribute.upper(): setting for setting in SETTINGS})


def _read(attribute: str) -> Any:
    return _BY_ATTRIBUTE[attribute].value()


def lock_timeout() -> float:
    """Seconds to wait for a lock another run holds (``NDCG_EVAL_LOCK_TIMEOUT``)."""
    return float(_read("lock_timeout"))


def backfill_nights() -> int:
    """Nights already landed that a new version is scored against (``NDCG_EVAL_BACKFILL_NIGHTS``;
    0: all of them)."""
    return _read("backfill_nights")


def incremental() -> bool:
    """Whether scores are built from an earlier version's (``NDCG_EVAL_INCREMENTAL``)."""
    return _read("incremental") == "1"


def database_timeout() -> float:
    """Seconds to wait for one answer of the instance's database
    (``NDCG_EVAL_DATABASE_TIMEOUT``)."""
    return float(_read("database_timeout"))


def alpha() -> float:
    return _read("alpha")


def min_effect() -> float:
    return _read("min_effect")


def power() -> float:
    return _read("power")


# docs/configuration.md holds the table between these lines.
TABLE_START = ("<!-- The table is written from evaluation_pipeline/settings.py by "
               "`python -m evaluation_pipeline.settings docs/configuration.md`. -->")
TABLE_END = "<!-- End of the written table. -->"


def table() -> str:
    """Every variable, by name: its attribute of the component, default, values and meaning."""
    rows = ["| variable | component attribute | default | values | meaning |",
            "|---|---|---|---|---|"]
    for setting in sorted(SETTINGS, key=lambda setting: setting.name):
        attribute = f"`{setting.attribute}`" if setting.is_attribute else ""
        rows.append(f"| `{setting.name}` | {attribute} | {setting.default} | "
                    f"{setting.values()} | {setting.meaning} |")
    return "\n".join(rows) + "\n"


def with_table(page: str, where: str) -> str:
    """``page`` with the table written again between its marker lines (``where``: its name)."""
    start, end = page.find(TABLE_START + "\n"), page.find(TABLE_END)
    if start < 0 or end < start:
        raise EvaluationError(f"{where}: the lines {TABLE_START!r} and {TABLE_END!r} that "
                              "hold the table of settings are not both there, in that order")
    head = page[:start + len(TABLE_START) + 1]
    return f"{head}\n{table()}\n{page[end:]}"


if __name__ == "__main__":
    for name in sys.argv[1:] or ["docs/configuration.md"]:
        path = Path(name)
        text = path.read_text(encoding="utf-8")
        written = with_table(text, name)
        if written != text:
            path.write_text(written, encoding="utf-8")
            print(f"{name}: the table of settings written again")
