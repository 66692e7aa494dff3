"""Partitions: one per judgment version, one per candidate pool, and their product; and the
names of one instance of the pipeline in a code location, its partitions' among them.

Both partitions are dynamic: a version or pool becomes a partition when it lands (see
``sensors``), and a partition must exist in the instance before it can be materialized.

Asset keys are ``[*prefix, name]``; the names Dagster keeps in one namespace per code location
(jobs, sensors, schedules, resource keys, ops) or per Dagster instance (dynamic partitions) are
the prefix's parts and the name joined by ``__``, as Dagster names the op of a prefixed asset.
Without a prefix every name is the bare one, so the project's own code location keeps its
names; two instances with different prefixes share nothing but the scoring concurrency pool,
which bounds the machine's work across both.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, cached_property

import dagster as dg

from schemas.errors import EvaluationError

# The characters Dagster allows in the names a prefix part ends up in (ops, jobs, resources).
NAME_PART = re.compile(r"^[A-Za-z0-9_]+$")
SEPARATOR = "__"


@dataclass(frozen=True)
class Naming:
    prefix: tuple[str, ...] = ()
    # Every asset of the instance in this group; None: the ingest and evaluation groups.
    group_name: str | None = None

    @classmethod
    def of(cls, key_prefix: str | Sequence[str] | None = None,
           group_name: str | None = None) -> Naming:
        """The naming of a ``key_prefix`` (one part, or a list of parts, as Dagster's
        ``key_prefix``) and a ``group_name``; a part or group Dagster would refuse is named."""
        parts = (key_prefix,) if isinstance(key_prefix, str) else tuple(key_prefix or ())
        for what, value in [*(("key_prefix part", part) for part in parts),
                            *((("group_name", group_name),) if group_name is not None else ())]:
            if not isinstance(value, str) or not NAME_PART.match(value):
                raise EvaluationError(f"{what} {value!r} is not a name: use letters, digits "
                                      "and underscores")
        return cls(parts, group_name)

    def key(self, name: str) -> dg.AssetKey:
        return dg.AssetKey([*self.prefix, name])

    def name(self, base: str) -> str:
        """A job, sensor, schedule, resource, op or dynamic partitions name of the instance."""
        return SEPARATOR.join((*self.prefix, base))

    def group(self, default: str) -> str:
        return self.group_name or default

    def resource_keys(self, *bases: str) -> set[str]:
        return {self.name(base) for base in bases}

    def resources(self, context, *bases: str) -> tuple:
        """The instance's resources ``bases`` (e.g. "storage") from a run's or tick's context."""
        return tuple(getattr(context.resources, self.name(base)) for base in bases)

    # One set of partitions per instance: a pool or version landed for one is not the other's.
    @cached_property
    def judgment_versions(self) -> dg.DynamicPartitionsDefinition:
        return dg.DynamicPartitionsDefinition(name=self.name("judgment_versions"))

    @cached_property
    def candidate_pools(self) -> dg.DynamicPartitionsDefinition:
        return dg.DynamicPartitionsDefinition(name=self.name("candidate_pools"))


DEFAULT = Naming()


def of_any_instance(name: str, base: str) -> bool:
    """True when ``name`` is ``base`` under some instance's prefix, or under none."""
    return name == base or name.endswith(SEPARATOR + base)


POOL_DIMENSION = "candidate_pool"
VERSION_DIMENSION = "judgment_version"


@cache
def evaluation_partitions_of(naming: Naming) -> dg.MultiPartitionsDefinition:
    """One evaluation per (candidate pool, judgment version) of the instance ``naming`` names."""
    return dg.MultiPartitionsDefinition(
        {POOL_DIMENSION: naming.candidate_pools, VERSION_DIMENSION: naming.judgment_versions})


# The project's own code location's (no prefix).
judgment_version_partitions = DEFAULT.judgment_versions
candidate_pool_partitions = DEFAULT.candidate_pools
evaluation_partitions = evaluation_partitions_of(DEFAULT)


def evaluation_key(pool: str, version: str) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({POOL_DIMENSION: pool, VERSION_DIMENSION: version})


def split_evaluation_key(key: str | dg.MultiPartitionKey) -> tuple[str, str]:
    """(pool, version) of an evaluation partition key."""
    if not isinstance(key, dg.MultiPartitionKey):
        key = evaluation_partitions.get_partition_key_from_str(key)
    dims = key.keys_by_dimension
    return dims[POOL_DIMENSION], dims[VERSION_DIMENSION]


# Dagster tags every partitioned run with its partition key under this name.
PARTITION_TAG = "dagster/partition"
