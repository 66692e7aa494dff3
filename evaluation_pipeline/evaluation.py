"""One evaluation: a judgment version x a candidate pool under a spec, with lineage.

Lineage (contract section 5) is attached here, once, so every per-query and aggregate row names
the exact grades, candidates and conventions behind it.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Annotated, Any, Literal, Self

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from evaluation_pipeline import __version__
from evaluation_pipeline.aggregation.aggregate_table import aggregate
from evaluation_pipeline.io.datasets import (
    dataset_columns,
    distinct_values,
    read_dataset,
)
from evaluation_pipeline.io.locations import Location
from evaluation_pipeline.metric.hashing import (
    HASH_VERSION,
    judgments_sha256,
    pool_blocks,
    pool_sha256,
)
from evaluation_pipeline.metric.kernels.blocks import Blocks
from evaluation_pipeline.metric.ndcg import JudgmentIndex, score
from evaluation_pipeline.spec import EvaluationSpec
from schemas.columns import LINEAGE_COLUMNS, STATUSES, spec_ndcg_rows, with_measure_columns
from schemas.errors import EvaluationError


@dataclass(frozen=True)
class Lineage:
    judgment_version: str
    judgments_sha256: str
    candidate_pool: str
    pool_sha256: str
    spec_id: str
    project_version: str = __version__

    @classmethod
    def of(cls, judgments: pl.DataFrame, pool: pl.DataFrame, spec: EvaluationSpec,
           pool_rows: Blocks | None = None, judgments_digest: str | None = None,
           pool_digest: str | None = None) -> Lineage:
        """``pool_rows``, ``judgments_digest``, ``pool_digest``: the pool's blocks and the
        inputs' SHA-256, if the caller already has them."""
        return cls(
            judgment_version=single_value(judgments, "judgment_version"),
            judgments_sha256=judgments_digest or judgments_sha256(judgments),
            candidate_pool=single_value(pool, "candidate_pool"),
            pool_sha256=pool_digest or pool_sha256(pool if pool_rows is None else pool_rows),
            spec_id=spec.spec_id,
        )

    @classmethod
    def from_rows(cls, rows: pl.DataFrame, source: str = "results") -> Lineage:
        """The lineage that per-query (or aggregate) rows carry, read back from their columns.

        Every lineage column must hold exactly one value: rows of several evaluations mixed in
        one file are refused, naming ``source``.
        """
        return cls.from_values({name: rows[name].unique().to_list()
                                for name in LINEAGE_COLUMNS if name in rows.columns}, source)

    @classmethod
    def from_values(cls, found: dict[str, list], source: str = "results") -> Lineage:
        """The lineage from each lineage column's distinct values (a column left out has
        none), refused as ``from_rows`` refuses it."""
        values = {}
        for name in LINEAGE_COLUMNS:
            distinct = found.get(name, [])
            if len(distinct) != 1 or distinct[0] is None:
                raise LineageError(f"{source}: expected one {name}, found {distinct[:5]}")
            values[name] = distinct[0]
        return cls(**values)

    def columns(self) -> list[pl.Expr]:
        return [pl.lit(v, dtype=pl.String).alias(k) for k, v in asdict(self).items()]

    def record(self) -> dict:
        """The lineage as summary.json and report.json hold it, with the version of the
        content hashes (contract section 1) it names."""
        return {**asdict(self), "hash_version": HASH_VERSION}


class LineageError(EvaluationError):
    """Rows whose lineage columns are missing or name several evaluations."""


def single_value(frame: pl.DataFrame, column: str) -> str:
    # By expression, not frame[column]: a literal column (the reader's one name) stays one.
    value = pl.col(column)
    if frame.height and frame.select((value == value.first()).all()).item():
        return str(frame.select(value.first()).item())
    values = frame[column].unique().to_list()
    raise ValueError(f"expected one {column}, found {len(values)}: {values[:5]}")


def with_lineage(per_query: pl.DataFrame, lineage: Lineage) -> pl.DataFrame:
    return per_query.with_columns(lineage.columns())


def evaluate(
    judgments: pl.DataFrame, pool: pl.DataFrame, spec: EvaluationSpec,
    blocks: Blocks | None = None, index: JudgmentIndex | None = None,
    judgments_digest: str | None = None,
    pool_digest: str | None = None,
) -> tuple[pl.DataFrame, Lineage]:
    """Per-query rows for every ranker of ``pool`` against ``judgments``, with lineage.

    Work the caller has done can be handed in: the pool cut into blocks
    (``metric.hashing.pool_blocks``), the judgment index for ``spec``, the inputs' SHA-256.
    """
    # The pool is cut into blocks once; then hashing and scoring are independent, and both
    # spend their time in compiled loops, polars and hashlib, which release the GIL: hash on a
    # second thread while the kernel scores.
    blocks = pool_blocks(pool) if blocks is None else blocks
    with ThreadPoolExecutor(max_workers=1) as hasher:
        lineage = hasher.submit(Lineage.of, judgments, pool, spec, blocks, judgments_digest,
                                pool_digest)
        per_query = score(blocks, judgments, spec, index=index)
        return with_lineage(per_query, lineage.result()), lineage.result()


class Record(BaseModel):
    """An object of summary.json or report.json: each field declared once, with its meaning
    (the JSON Schema's and REPORT_FORMAT.md's), and no field the model lacks is accepted.
    A field left unset is absent from the file (``dump``), one set to None is null."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    def dump(self) -> dict:
        return self.model_dump(exclude_unset=True)

    @classmethod
    def checked(cls, document: dict) -> dict:
        """``document`` as the model declares it, its fields in their declared order; refused
        (pydantic's ``ValidationError``, naming the field) when a field is missing, of another
        type, or not declared. What writes the file calls it last."""
        return cls.model_validate(document).dump()


# [low, high]: a percentile bootstrap interval, or a range over every grading of the holes.
Interval = Annotated[list[float | None], Field(min_length=2, max_length=2)]


class LineageRecord(Record):
    """Contract section 5: the exact grades, candidates and conventions behind the numbers."""

    judgment_version: str
    """the judgment version the grades came from"""
    judgments_sha256: str
    """SHA-256 of the judgment version's content (contract section 1)"""
    candidate_pool: str
    """the candidate pool the rankings came from"""
    pool_sha256: str
    """SHA-256 of the candidate pool's content (contract section 1)"""
    spec_id: str
    """the hash of the evaluation spec"""
    project_version: str
    """the version of ndcg-eval that computed the numbers"""
    hash_version: int
    """the version of the content hashes above"""
    queries_sha256: str | None = None
    """with a queries table (report.json), the SHA-256 of the table the weights and slices
    came from: for `ndcg-eval score --report` and `ndcg-eval report`, of the `--queries`
    file's bytes as read; in the pipeline, the published queries manifest's `sha256` (its
    content hash), against which each run checks that the report is current"""


class StampedFile(Record):
    name: str
    """the data file's name, relative to the result"""
    size: int
    """its size in bytes"""
    sha256: str
    """its SHA-256"""


class Stamp(Record):
    """per_query.parquet's bytes as written, which `ndcg-eval compare` and `ndcg-eval report`
    hash again before they read the rows, refusing rows that changed since."""

    files: list[StampedFile]
    """each data file of the result, in name order"""


class Means(Record):
    """The numbers of one ranker and cutoff over a group of queries (aggregates.parquet's row).
    The intervals and bounds are report.json's: summary.json has no resamples."""

    ranker: str
    """the ranker"""
    cutoff: int
    """K"""
    macro_ndcg: float | None
    """mean NDCG@K over queries with a number (contract section 3, rule 5); null when none
    has one"""
    macro_ndcg_interval: Interval | None = None
    """(report.json) `[low, high]` percentile (Poisson) bootstrap interval at `ci_level`, see
    Methods; `[null, null]` with fewer than 2 queries with a number"""
    weighted_ndcg: float | None
    """mean weighted by the queries table's `weight` over queries with a number (queries
    without a row weigh 0); null without weights or when the weights sum to 0"""
    weighted_ndcg_interval: Interval | None = None
    """(report.json) its bootstrap interval (same resamples as the macro interval)"""
    n_queries: int
    """per-query rows in the group"""
    n_with_number: int
    """rows whose `ndcg` is not null (the denominator of the macro mean)"""
    status_counts: dict[Literal[STATUSES], int]
    """rows per status"""
    mean_judged_at_k: float | None
    """mean share of graded documents in the first min(K, n) places (rows with a value)"""
    mean_candidate_recall: float | None
    """mean candidate recall (rows with a value)"""
    macro_ndcg_bounds: Interval | None = None
    """(report.json) `[least, greatest]`: the means of `ndcg_min` and `ndcg_max` over the
    `n_bounded` rows, the range the macro mean over them takes as the holes' grades run over
    every value (docs/CONTRACT.md); `[null, null]` when `n_bounded` is 0. report.html shows it
    beside each interval"""
    n_bounded: int | None = None
    """(report.json) rows with a number under every grading of their unjudged and unknown
    documents (`every_grading_scored` in `per_query.parquet`)"""

    @classmethod
    def of_row(cls, row: dict, *, intervals: bool, **more: Any) -> Self:
        """The entry of an aggregates row; ``intervals``: with the resampled intervals and the
        bounds over every grading (report.json's)."""
        fields = {name: row[name] for name in (
            "ranker", "cutoff", "macro_ndcg", "weighted_ndcg", "n_queries", "n_with_number",
            "mean_judged_at_k", "mean_candidate_recall")}
        fields["status_counts"] = {s: row[f"n_{s}"] for s in STATUSES}
        if intervals:
            fields |= {
                "macro_ndcg_interval": [row["macro_ndcg_low"], row["macro_ndcg_high"]],
                "weighted_ndcg_interval": [row["weighted_ndcg_low"], row["weighted_ndcg_high"]],
                "macro_ndcg_bounds": [row["macro_ndcg_min"], row["macro_ndcg_max"]],
                "n_bounded": row["n_bounded"],
            }
        return cls(**fields, **more)


class RankerResult(Means):
    """One entry of `results`: a ranker and cutoff over all queries, in numbers and words."""

    sentence: str
    """the contract's result sentence (section 4); report.json's has the interval after the
    number"""


class Summary(Record):
    """summary.json: what `ndcg-eval score` wrote, macro means and status counts per ranker
    and cutoff, without intervals."""

    lineage: LineageRecord
    """contract section 5"""
    spec: dict[str, Any]
    """the full evaluation spec (docs/spec.md)"""
    spec_id: str
    """the spec's hash"""
    conventions: str
    """the spec's conventions in words"""
    weights: str
    """whether a queries table supplied weights"""
    results: list[RankerResult]
    """one entry per (ranker, cutoff) over all queries"""
    engine: str | None = None
    """the engine that scored (`local`, `streaming`, `spark`)"""
    stamp: Stamp | None = None
    """per_query.parquet's bytes as written (not on object storage)"""


def summarize(
    per_query: pl.DataFrame,
    spec: EvaluationSpec,
    lineage: Lineage,
    queries: pl.DataFrame | None = None,
) -> dict:
    """The machine-readable summary (:class:`Summary`): macro means and status counts per
    ranker and cutoff."""
    rows = spec_ndcg_rows(aggregate(per_query, queries)).filter(pl.col("slice_column") == "all")
    return Summary(
        lineage=lineage.record(),
        spec=spec.to_dict(),
        spec_id=spec.spec_id,
        conventions=spec.describe(),
        weights="query weights" if queries is not None else
        "none given: weighted mean not computed",
        results=[RankerResult.of_row(row, intervals=False,
                                     sentence=result_sentence(row, spec, lineage))
                 for row in rows.iter_rows(named=True)],
    ).dump()


def result_sentence(row: dict, spec: EvaluationSpec, lineage: Lineage) -> str:
    """Contract section 4: the result in a sentence that keeps its definitions."""
    value = "n/a" if row["macro_ndcg"] is None else f"{row['macro_ndcg']:.3f}"
    apart = []
    if row["n_no_positive"] and spec.no_positive == "exclude":
        apart.append(f"{row['n_no_positive']:,} without a positive grade")
    if row["n_incomplete"]:
        apart.append(f"{row['n_incomplete']:,} incomplete")
    if row["n_not_judged"]:
        apart.append(f"{row['n_not_judged']:,} not judged")
    if row["n_missing_from_run"] and spec.missing_from_run == "exclude":
        apart.append(f"{row['n_missing_from_run']:,} missing from the run")
    apart_text = f"; {', '.join(apart)} counted apart" if apart else ""
    if row["n_no_positive"] and spec.no_positive == "one":  # in the mean, at 1: say how many
        apart_text += f"; {row['n_no_positive']:,} without a positive grade scored 1"
    return (
        f"NDCG@{row['cutoff']} {value} ({spec.describe()}) over {row['n_with_number']:,} of "
        f"{row['n_queries']:,} queries{apart_text}; judgments {lineage.judgment_version} "
        f"(sha256 {lineage.judgments_sha256[:8]}...), pool {lineage.candidate_pool}, "
        f"ranker {row['ranker']}, spec {lineage.spec_id}."
    )


def read_lineage(where: Location, source: str | None = None) -> Lineage:
    """The lineage of per-query results (``read_with_lineage``'s), no other column read."""
    stored = [c for c in LINEAGE_COLUMNS if c in dataset_columns(where)]
    return Lineage.from_values(distinct_values(where, stored), source or str(where))


def read_with_lineage(where: Location, source: str | None = None,
                      columns: Sequence[str] | None = None) -> tuple[pl.DataFrame, Lineage]:
    """The rows of per-query results (a file, or Spark's folder of parts, local or on object
    storage) and their lineage, the lineage columns read only once.

    The lineage is one value per column (one evaluation), but stored on every row: the two
    sha256 columns alone took 256 MB each at 1M queries x 2 rankers x 2 cutoffs. Their distinct
    values are read apart (``io.datasets.distinct_values``); the frame then holds them as
    literal columns (one value, broadcast), in the file's column order. ``source`` names the
    results in a refusal (default: ``where``); ``columns``: only these of the other columns
    (the lineage columns always come). Rows written before the measures get their columns
    (``schemas.columns.with_measure_columns``)."""
    names = dataset_columns(where)
    stored = [c for c in LINEAGE_COLUMNS if c in names]
    if columns is not None:
        names = [c for c in names if c in stored or c in columns]
    lineage = read_lineage(where, source)
    rows = read_dataset(where, [c for c in names if c not in stored])
    values = asdict(lineage)
    return with_measure_columns(rows.with_columns(pl.lit(values[c], dtype=pl.String).alias(c)
                                                  for c in stored).select(names)), lineage
