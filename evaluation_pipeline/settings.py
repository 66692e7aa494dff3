"""Every ``NDCG_EVAL_*`` environment variable, declared once: its name, its default, its meaning.

Modules read a variable through its declaration (``settings.MEMORY_LIMIT.get()``) and name it
in messages by ``.name``; no other module spells an ``NDCG_EVAL_`` name. docs/configuration.md
lists the same variables, and a test holds the two together.

An empty value counts as unset, as a shell's ``VAR= command`` means.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

from schemas.errors import EvaluationError


@dataclass(frozen=True)
class Setting:
    name: str
    default: str  # what applies when it is unset, in words
    meaning: str

    def get(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The value, or None when unset or empty."""
        return (os.environ if environ is None else environ).get(self.name) or None

    def number(self, *, low: float | None = None, high: float | None = None,
               low_open: bool = False, environ: Mapping[str, str] | None = None) -> float | None:
        """The value as a number in [``low``, ``high``] (``low_open``: above ``low``), else the
        default's when it is one, else None; any other value is refused, naming the variable."""
        text = self.get(environ)
        if text is None:
            try:
                return float(self.default)
            except ValueError:
                return None
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        below = low is not None and (value <= low if low_open else value < low)
        if not math.isfinite(value) or below or (high is not None and value > high):
            bounds = " and ".join(part for part in (
                low is not None and f"{'above' if low_open else 'at least'} {low:g}",
                high is not None and f"at most {high:g}") if part)
            raise EvaluationError(f"{self.name}={text!r} is not a number"
                                  + (f" {bounds}" if bounds else ""))
        return value

    def __str__(self) -> str:
        return self.name


# Where the pipeline reads and writes (definitions.py).
STORAGE = Setting(
    "NDCG_EVAL_STORAGE", "none: required (NDCG_EVAL_DEV=1: the checkout's .storage/)",
    "the storage every published input, score and report goes to: a folder or an fsspec URL")
LANDING = Setting(
    "NDCG_EVAL_LANDING", "none: required (NDCG_EVAL_DEV=1: the bundled landing folder)",
    "the landing folder the sensors watch for judgment versions and candidate pools")
QUERIES = Setting(
    "NDCG_EVAL_QUERIES", "none: required (NDCG_EVAL_DEV=1: the bundled queries table)",
    "the queries table (query text, slices and weights)")
STORAGE_OPTIONS = Setting(
    "NDCG_EVAL_STORAGE_OPTIONS", "{}",
    "a JSON object of fsspec options for every URL read or written (endpoint, credentials)")
DEV = Setting(
    "NDCG_EVAL_DEV", "unset",
    "1: the storage, landing and queries default to the checkout's example data "
    "(`make run`, `make ui` and the tests set it)")
# What the pipeline evaluates under.
SPEC = Setting(
    "NDCG_EVAL_SPEC", "the packaged evaluation_spec.yaml",
    "the spec file (YAML or TOML) the pipeline evaluates under")
ENGINE = Setting(
    "NDCG_EVAL_ENGINE", "auto",
    "the pipeline's scoring engine: auto, local, streaming or spark")
SPARK_MASTER = Setting(
    "NDCG_EVAL_SPARK_MASTER", "a local session, or spark-submit's --master",
    "the Spark master of the spark engine (spark://host:7077, yarn, k8s://...)")
MEMORY_LIMIT = Setting(
    "NDCG_EVAL_MEMORY_LIMIT", "2GB",
    "the memory budget of sorts and of the engine choice (e.g. 512MB, 4GB)")
SPILL_DIR = Setting(
    "NDCG_EVAL_SPILL_DIR", "the storage's spill folder when local, else the system's temp folder",
    "where a sort spills past the memory budget")
# The nightly watch.
NIGHTLY_CRON = Setting(
    "NDCG_EVAL_NIGHTLY_CRON", "0 2 * * *", "when the nightly schedule evaluates the newest pool")
NIGHTLY_TIMEZONE = Setting(
    "NDCG_EVAL_NIGHTLY_TIMEZONE", "UTC", "the time zone of the nightly schedule")
ALPHA = Setting(
    "NDCG_EVAL_ALPHA", "0.05", "the watch's significance level, after Holm's adjustment")
MIN_EFFECT = Setting(
    "NDCG_EVAL_MIN_EFFECT", "0.01", "the smallest drop in mean NDCG the watch calls a regression")
BASELINE_POOL = Setting(
    "NDCG_EVAL_BASELINE_POOL", "unset: the previous night",
    "one pool every night is compared against, instead of the previous night")
ALERT_WEBHOOK = Setting(
    "NDCG_EVAL_ALERT_WEBHOOK", "unset: alerts are recorded, not sent",
    "the URL each alert is POSTed to as JSON")
LOCK_TIMEOUT = Setting(
    "NDCG_EVAL_LOCK_TIMEOUT", "1800",
    "seconds a run waits for a lock another holds (`make run`: the instance; a bucket: the history) "
    "before it gives up")
BACKFILL_NIGHTS = Setting(
    "NDCG_EVAL_BACKFILL_NIGHTS", "14",
    "a new judgment version is scored against the newest this many nights already landed (and "
    "every night after it); 0: every night")
INCREMENTAL = Setting(
    "NDCG_EVAL_INCREMENTAL", "1",
    "1: a new judgment version's scores of a pool reuse an earlier version's rows for the "
    "queries whose grades did not change (the same bytes as a full scoring); 0: score in full")
DATABASE_TIMEOUT = Setting(
    "NDCG_EVAL_DATABASE_TIMEOUT", "60",
    "seconds `make run` waits for one answer of the Dagster instance's database (a statement, a "
    "connection) before it names the database and exits 1")
# Tests only.
FAIL_WRITE = Setting(
    "NDCG_EVAL_FAIL_WRITE", "unset",
    "fault injection for tests: PATTERN[:N] makes the storage's writes of matching files fail "
    "with ENOSPC (the first N times)")



def lock_timeout() -> float:
    """Seconds to wait for a lock another run holds (``NDCG_EVAL_LOCK_TIMEOUT``)."""
    return LOCK_TIMEOUT.number(low=0, low_open=True)


def backfill_nights() -> int:
    """Nights already landed that a new version is scored against (``NDCG_EVAL_BACKFILL_NIGHTS``;
    0: all of them)."""
    value = BACKFILL_NIGHTS.number(low=0)
    if value != int(value):
        raise EvaluationError(f"{BACKFILL_NIGHTS.name}={BACKFILL_NIGHTS.get()!r} is not a whole "
                              "number of nights")
    return int(value)


def incremental() -> bool:
    """Whether scores are built from an earlier version's (``NDCG_EVAL_INCREMENTAL``)."""
    value = INCREMENTAL.get() or INCREMENTAL.default
    if value not in ("0", "1"):
        raise EvaluationError(f"{INCREMENTAL.name}={value!r} is not 0 or 1")
    return value == "1"


def database_timeout() -> float:
    """Seconds to wait for one answer of the instance's database (``NDCG_EVAL_DATABASE_TIMEOUT``)."""
    return DATABASE_TIMEOUT.number(low=0, low_open=True)


def alpha() -> float | None:
    return ALPHA.number(low=0, high=1, low_open=True)


def min_effect() -> float | None:
    # A negative smallest drop would call an improvement a regression.
    return MIN_EFFECT.number(low=0)


SETTINGS: tuple[Setting, ...] = tuple(
    value for value in globals().values() if isinstance(value, Setting))
