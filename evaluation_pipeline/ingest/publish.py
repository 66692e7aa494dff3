"""Publish a judgment version or a candidate pool in bounded memory, whatever its size or order.

Three passes, none holding more than a batch of rows plus DuckDB's share of the budget:

1. **Checks, file by file, in batches.** Every row rule of the pandera model (types, nulls,
   non-empty ids, finite scores, grades) is a row-local rule, so the model's screen
   (``schemas.screening.screen``) runs on batches of each file as it comes. A Parquet file
   whose columns already have the contract's types is read this way; any other file (CSV,
   TREC, Parquet needing conversions) is read whole by its existing reader, one file at a time,
   and spilled as Parquet. A batch the screen refuses is handed to the existing reader of its
   file, which words the refusal exactly as the in-memory path does.
2. **Canonical key order** by the external sort (``ingest.external_sort.sorted_batches``), which
   spills to disk and streams the sorted rows into pass 3 as they come.
3. **Cross-row rules, content hash and publishing** over the sorted rows, in batches of whole
   (ranker, query_id) or query_id blocks: the content SHA-256 is fed block by block
   (``metric.hashing.StreamingDigest``, byte-identical to ``pool_sha256``/``judgments_sha256`` of
   the whole frame), a repeated key sits inside one block, where the digest's blocks flag it,
   and the rows are written to the target, which appears atomically once all of it passed.

Refusals leave the bounds on purpose: the file that broke a rule is read whole by its reader,
so that the message is the in-memory path's to the byte. A key repeated across files has no
such message (each file alone is fine); it is refused naming the files and rows of the first
repeated key in key order.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl

from evaluation_pipeline.ingest.external_sort import (
    SortInput,
    file_batches,
    format_bytes,
    groups_by_value,
    sorted_batches,
    sql_text,
)
from evaluation_pipeline.ingest.inputs import (
    BATCH_ROWS,
    JUDGMENTS,
    POOL,
    Kind,
    ParquetAppender,
    Prepared,
    check_unchanged,
    identity,
    prepare,
    refuse,
    run_files,
    whole_blocks,
)
from evaluation_pipeline.ingest.verify import compare_sets
from evaluation_pipeline.io.atomic import atomic_write
from evaluation_pipeline.io.budget import Budget
from evaluation_pipeline.metric.hashing import StreamingDigest
from schemas import columns as cols
from schemas.errors import InputError, violation


@dataclass(frozen=True)
class Published:
    """What ``publish_pool``/``publish_judgments`` wrote, with the facts a manifest records.

    ``rankers``: per ranker ``{"ranker", "n_queries", "n_candidates"}`` (pools), as
    ``quality.ranker_counts``; ``grade_distribution``: rows per grade, ``unknown`` for explicit
    unknowns (judgments), as ``quality.grade_distribution``; ``candidate_sets`` (pools, when
    counted while publishing): ``candidate_set_disagreements`` of the published pool."""

    path: Path
    name: str
    sha256: str
    rows: int
    rankers: list[dict] = field(default_factory=list)
    grade_distribution: dict[str, int] = field(default_factory=dict)
    candidate_sets: tuple[int, list[str]] | None = None
    raters: list[str] = field(default_factory=list)  # a version with raters: its raters


def publish_pool(
    source: str | Path | Sequence[str | Path],
    target: str | Path,
    *,
    pool: str | None = None,
    fmt: str | None = None,
    budget: Budget | None = None,
    log: Callable[[str], None] | None = None,
) -> Published:
    """Validate a pool folder (or run files), sort it by (ranker, query_id, doc_id), hash it and
    write it to ``target`` as one Parquet file, in bounded memory.

    The rules, names and defaults are ``read_pool``'s: the pool is ``pool`` or the folder's
    name, a file without a ``ranker`` column is its file's stem. ``budget``: memory and spill
    folder (default ``Budget.of()``: ``NDCG_EVAL_MEMORY_LIMIT`` or 2 GB, ``NDCG_EVAL_SPILL_DIR``
    or the system's temporary folder). Raises ``InputError`` for bad input and
    ``MemoryBudgetError`` when the budget cannot be met; ``target`` is then left as it was.
    ``log`` receives one line per pass with its time."""
    files, label = run_files(source)
    return _publish(POOL, files, label, Path(target), pool or files[0].parent.name, fmt,
                    budget or Budget.of(), log)


def publish_judgments(
    source: str | Path | Sequence[str | Path],
    target: str | Path,
    *,
    version: str | None = None,
    fmt: str | None = None,
    budget: Budget | None = None,
    log: Callable[[str], None] | None = None,
) -> Published:
    """Validate a judgment version (one file, or several holding parts of it), sort it by
    (query_id, doc_id), hash it and write it to ``target``, in bounded memory.

    The rules, names and defaults are ``read_judgments``': the version is ``version``, else the
    file's ``judgment_version`` column, else the (first) file's stem. Other columns (judge,
    rubric, ...) pass through as the first file has them. Options as ``publish_pool``."""
    files = [Path(p) for p in ([source] if isinstance(source, (str, Path)) else source)]
    return _publish(JUDGMENTS, files, ", ".join(map(str, files)), Path(target), version,
                    fmt, budget or Budget.of(), log)


def _publish(kind: Kind, files: list[Path], label: str, target: Path, name: str | None,
             fmt: str | None, budget: Budget, log) -> Published:
    lap = stopwatch(log or (lambda line: None))
    with budget.scratch("ndcg-eval-ingest-") as scratch:
        scratch = Path(scratch)
        prepared, pins = [], {}
        for number, path in enumerate(files):
            pinned = identity(path)
            with budget.spill_writes(f"checking {kind.what} {name or path.stem!r}"):
                prepared.append(prepare(kind, path, fmt, name, scratch / f"in-{number}.parquet"))
            name = prepared[-1].name
            if prepared[-1].input.path == path:  # sorted from the landing: read a second time
                pins[path] = pinned
        # The first file's columns are published; a later file lacking an extra one (a
        # judgment's rubric, say) gives it as null.
        columns = prepared[0].columns
        inputs = [SortInput(p.input.path, {**p.input.constants, **{
            c: None for c in columns if c not in p.columns}}) for p in prepared]
        lap(f"checked {len(files)} file(s) of {kind.what} {name!r}")
        groups = _sort_groups(kind, inputs, prepared)
        sort_budget = dataclasses.replace(budget, spill_dir=scratch)
        dtypes = {c: t for c, t in kind.dtypes.items() if c in columns}

        ordered = _in_key_order(kind, groups, prepared, columns)

        def sorted_rows() -> Iterator[pl.DataFrame]:
            # The sorts one after the other, each streamed into the hash pass as it sorts; a
            # file already in key order is read as it is, in the sort's batches.
            for group, keys in groups:
                if group[0].path in ordered:
                    yield from file_batches(group[0], columns, dtypes, BATCH_ROWS)
                    continue
                with sorted_batches(group, keys, columns=columns, dtypes=dtypes,
                                    budget=sort_budget, step=f"sorting {kind.what} {name!r}",
                                    batch_rows=BATCH_ROWS) as batches:
                    yield from batches

        facts: dict = {}
        signatures = scratch / "candidate-sets.parquet"

        def write(tmp: Path) -> None:
            facts.update(_hash_and_write(kind, rows, tmp, files, inputs, label, fmt, name,
                                         signatures))
            # Before the target appears: what was sorted must be what was screened.
            check_unchanged(pins, f"{kind.what} {name!r}")

        # The target's own failure is its caller's to name (io.atomic.named_in); the spill
        # folder's files (the candidate sets) are named as the spill folder's.
        with (closing(sorted_rows()) as rows,
              budget.spill_writes(f"publishing {kind.what} {name!r}", keep=target)):
            atomic_write(target, write)
        lap(f"sorted by {', '.join(kind.key)} within {format_bytes(budget.memory_limit)}"
            + (f" ({len(groups)} rankers sorted apart)" if len(groups) > 1 else "")
            + (f" ({len(ordered)} of {len(groups)} already in key order, not sorted)"
               if ordered else "")
            + f", hashed {facts['rows']:,} rows and wrote {target}")
        if kind is POOL:
            facts["candidate_sets"] = compare_sets(
                f"read_parquet({sql_text(signatures)})", budget, examples=10
            ) if signatures.exists() else (0, [])
            lap("compared the rankers' candidate sets")
    return Published(path=target, name=name, **facts)


def _sort_groups(kind: Kind, inputs: list[SortInput], prepared: list[Prepared]
                 ) -> list[tuple[list[SortInput], tuple[str, ...]]]:
    """The sorts whose outputs, one after the other, are the whole input in key order: a pool
    whose every file holds one ranker (a ranker's run file, the usual landing) ranker by
    ranker, by the rest of the key (``external_sort.groups_by_value``)."""
    groups = groups_by_value(inputs, [p.rankers for p in prepared]) if kind is POOL else None
    if groups is None:
        return [(inputs, kind.key)]
    return [(group, kind.key[1:]) for group in groups]


def _in_key_order(kind: Kind, groups, prepared: list[Prepared], columns: list[str]) -> set:
    """The files that are a sort's whole input and whose rows were screened in key order: read
    as they are. Only files whose every published column is a contract column (no extra
    columns, whose types DuckDB might read otherwise; no raters, whose ratings of a document
    tie on the key)."""
    if any(c not in kind.dtypes for c in columns):
        return set()
    ordered = {p.input.path for p in prepared if p.in_key_order}
    return {group[0].path for group, _ in groups if len(group) == 1 and group[0].path in ordered}


def stopwatch(log: Callable[[str], None]) -> Callable[[str], None]:
    """``lap(text)`` logs ``text`` with the seconds since the previous lap."""
    last = [time.perf_counter()]

    def lap(text: str) -> None:
        now = time.perf_counter()
        log(f"{text} ({now - last[0]:.1f} s)")
        last[0] = now
    return lap


def _hash_and_write(kind: Kind, rows_in_order: Iterable[pl.DataFrame], tmp: Path, files, inputs,
                    label, fmt, name, signatures: Path) -> dict:
    """Hash the sorted rows, write them to ``tmp`` and count their facts; a pool's candidate
    set signatures (``_set_signatures``) go to ``signatures``."""
    digest = StreamingDigest(kind.digest)
    rankers: dict[str, list[int]] = {}
    grades: Counter = Counter()
    raters: set[str] = set()
    kinds: dict[str, str] = {}  # each rater's one kind, across the batches
    rows = 0
    with ParquetAppender(tmp) as out, ParquetAppender(signatures, named=True) as sets:
        for frame in whole_blocks(rows_in_order, list(kind.key[:-1])):
            blocks = digest.update(frame)
            if blocks.duplicate >= 0:
                refuse_duplicate(kind, blocks.duplicate_key(), files, inputs, label, fmt, name)
            rows += frame.height
            if kind is POOL:
                # A block is one (ranker, query_id), whole in one batch: counting blocks and
                # their rows per ranker counts queries and candidates.
                signed = _set_signatures(blocks)
                for ranker, queries, candidates in signed.group_by("ranker").agg(
                        pl.len(), pl.col("n").sum()).iter_rows():
                    counts = rankers.setdefault(ranker, [0, 0])
                    counts[0] += queries
                    counts[1] += candidates
                sets.append(signed)
            else:
                grades.update(dict(frame.select(pl.when(pl.col("grade_status") == cols.UNKNOWN)
                                                .then(pl.lit(cols.UNKNOWN))
                                                .otherwise(pl.col("grade").cast(pl.String)))
                                   .to_series().value_counts().iter_rows()))
                if cols.RATER in frame.columns:
                    raters.update(frame[cols.RATER].unique().to_list())
                    if cols.RATER_KIND in frame.columns:
                        _same_kinds(kinds, frame, label)
            out.append(frame)
    return {
        "sha256": digest.hexdigest(), "rows": rows,
        "rankers": [{"ranker": r, "n_queries": q, "n_candidates": n}
                    for r, (q, n) in sorted(rankers.items())],
        "grade_distribution": dict(sorted(grades.items())),
        "raters": sorted(raters),
    }


def _same_kinds(kinds: dict[str, str], frame: pl.DataFrame, label: str) -> None:
    """A rater keeps one rater_kind across batches (each batch's own rows were screened)."""
    for rater, kind in frame.select(cols.RATER, cols.RATER_KIND).unique().iter_rows():
        if kinds.setdefault(rater, kind) != kind:
            raise InputError(label, [violation(cols.RATER_KIND, (
                f"one rater_kind per rater: rater {rater!r} is both {kinds[rater]!r} and "
                f"{kind!r}"), [])])


def _set_signatures(blocks) -> pl.DataFrame:
    """Per (ranker, query_id) block: its rows ``n`` and the XOR ``h`` of its doc_ids' 64-bit
    hashes, which with unique keys tell candidate sets apart but for a hash collision. Taken
    while the pool is hashed, they spare ``candidate_set_disagreements`` a pass over it."""
    hashes = blocks.frame["doc_id"].hash(seed=0).to_numpy()
    starts = blocks.starts
    return blocks.keys.with_columns(
        n=pl.Series(np.diff(starts), dtype=pl.Int64),
        h=pl.Series(np.bitwise_xor.reduceat(hashes, starts[:-1]) if len(hashes) else
                    np.empty(0, np.uint64), dtype=pl.UInt64))


def refuse_duplicate(kind: Kind, key: dict, files, inputs, label, fmt, name) -> None:
    """A key seen twice. In one file, its reader's message; across files, name both."""
    where = []
    for path, source in zip(files, inputs):
        found = pl.scan_parquet(source.path, glob=False).with_row_index("row", offset=1) \
            .with_columns(pl.lit(v, dtype=pl.String).alias(c) for c, v in
                          source.constants.items()) \
            .filter(pl.all_horizontal(pl.col(c) == v for c, v in key.items())) \
            .select("row").collect()["row"].to_list()
        where += [(path, row) for row in found]
    holders = {path for path, _ in where}
    if len(holders) == 1:
        refuse(kind, holders.pop(), fmt, name)
    key_text = ", ".join(key)
    shown = "; ".join(f"{path.name} row {row}" for path, row in where[:5])
    raise InputError(label, [violation(
        key_text, f"({key_text}) must be unique: duplicate rows across files ({shown})",
        [], [])])
