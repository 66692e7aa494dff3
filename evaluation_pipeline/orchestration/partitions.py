"""Partitions: one per judgment version, one per candidate pool, and their product.

Both are dynamic: a version or pool becomes a partition when it lands (see ``sensors``), and a
partition must exist in the instance before it can be materialized.
"""

from __future__ import annotations

import dagster as dg

judgment_version_partitions = dg.DynamicPartitionsDefinition(name="judgment_versions")
candidate_pool_partitions = dg.DynamicPartitionsDefinition(name="candidate_pools")

POOL_DIMENSION = "candidate_pool"
VERSION_DIMENSION = "judgment_version"

# One evaluation per (candidate pool, judgment version).
evaluation_partitions = dg.MultiPartitionsDefinition(
    {POOL_DIMENSION: candidate_pool_partitions, VERSION_DIMENSION: judgment_version_partitions}
)


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
