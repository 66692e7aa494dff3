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
import pyarrow.parquet as pq

from evaluation_pipeline.ingest.external_sort import (
    Budget,
    SortInput,
    format_bytes,
    groups_by_value,
    sorted_batches,
    spilling,
    sql_text,
)
from evaluation_pipeline.io.atomic import atomic_write
from evaluation_pipeline.io.datasets import is_data_file
from evaluation_pipeline.io.readers import detect_format, read_judgments, read_run
from evaluation_pipeline.metric.hashing import HASH_VERSION, StreamingDigest
from evaluation_pipeline.metric.kernels.threads import helper
from schemas import columns as cols
from schemas import screening, validate
from schemas.errors import InputError, violation

# Rows read back per batch. At ~150 bytes a row this is some 40 MB, a few copies of which
# (Arrow batch, frame, blocks, writer) with the interpreter's ~300 MB fit in the half of a
# budget of 1 GB or more that DuckDB does not get.
BATCH_ROWS = 250_000


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


@dataclass(frozen=True)
class _Kind:
    """What differs between a pool and a judgment version."""

    model: str
    name_column: str
    what: str
    key: tuple[str, ...]  # the canonical sort key; all but the last make a block
    columns: tuple[str, ...]
    dtypes: dict
    digest: str
    read: Callable[..., pl.DataFrame]  # the existing reader: (path, fmt, name, check_keys)
    optional: tuple[str, ...]  # columns a file may lack: the name column, a pool's ranker


_POOL = _Kind(
    "CandidatePool", "candidate_pool", "candidate pool", cols.POOL_KEY, cols.RUN_COLUMNS,
    cols.RUN_DTYPES, "pool",
    lambda path, fmt, name, check_keys: read_run(path, fmt, pool=name, check_keys=check_keys),
    ("candidate_pool", "ranker"),
)
_JUDGMENTS = _Kind(
    "Judgments", "judgment_version", "judgment version", cols.JUDGMENT_KEY,
    cols.JUDGMENT_COLUMNS, cols.JUDGMENT_DTYPES, "judgments",
    lambda path, fmt, name, check_keys: read_judgments(path, fmt, version=name,
                                                       check_keys=check_keys),
    ("judgment_version",),
)


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
    files, label = _run_files(source)
    return _publish(_POOL, files, label, Path(target), pool or files[0].parent.name, fmt,
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
    return _publish(_JUDGMENTS, files, ", ".join(map(str, files)), Path(target), version,
                    fmt, budget or Budget.of(), log)


def _run_files(source) -> tuple[list[Path], str]:
    """A pool folder's run files as ``read_pool`` lists them, or the files given."""
    if isinstance(source, (str, Path)) and Path(source).is_dir():
        folder = Path(source)
        files = sorted(p for p in folder.iterdir() if p.is_file()
                       and is_data_file(p.name) and _is_run_file(p))
        if not files:
            raise InputError(str(folder), [violation("(folder)", "a pool folder needs at least "
                                                     "one run file (.parquet, .csv, .run)", [])])
        return files, str(folder)
    files = [Path(p) for p in ([source] if isinstance(source, (str, Path)) else source)]
    return files, ", ".join(map(str, files))


def _is_run_file(path: Path) -> bool:
    try:
        detect_format(path, None)
    except InputError:
        return False
    return True


def _publish(kind: _Kind, files: list[Path], label: str, target: Path, name: str | None,
             fmt: str | None, budget: Budget, log) -> Published:
    lap = _stopwatch(log or (lambda line: None))
    with budget.scratch("ndcg-eval-ingest-") as scratch:
        scratch = Path(scratch)
        prepared = []
        for number, path in enumerate(files):
            prepared.append(_prepare(kind, path, fmt, name, scratch / f"in-{number}.parquet"))
            name = prepared[-1].name
        # The first file's columns are published; a later file lacking an extra one (a
        # judgment's rubric, say) gives it as null.
        columns = prepared[0].columns
        inputs = [SortInput(p.input.path, {**p.input.constants, **{
            c: None for c in columns if c not in p.columns}}) for p in prepared]
        lap(f"checked {len(files)} file(s) of {kind.what} {name!r}")
        groups = _sort_groups(kind, inputs, prepared)
        sort_budget = dataclasses.replace(budget, spill_dir=scratch)
        dtypes = {c: t for c, t in kind.dtypes.items() if c in columns}

        def sorted_rows() -> Iterator[pl.DataFrame]:
            # The sorts one after the other, each streamed into the hash pass as it sorts.
            for group, keys in groups:
                with sorted_batches(group, keys, columns=columns, dtypes=dtypes,
                                    budget=sort_budget, step=f"sorting {kind.what} {name!r}",
                                    batch_rows=BATCH_ROWS) as batches:
                    yield from batches

        facts: dict = {}
        signatures = scratch / "candidate-sets.parquet"
        with closing(sorted_rows()) as rows:
            atomic_write(target, lambda tmp: facts.update(
                _hash_and_write(kind, rows, tmp, files, inputs, label, fmt, name, signatures)))
        lap(f"sorted by {', '.join(kind.key)} within {format_bytes(budget.memory_limit)}"
            + (f" ({len(groups)} rankers sorted apart)" if len(groups) > 1 else "")
            + f", hashed {facts['rows']:,} rows and wrote {target}")
        if kind is _POOL:
            facts["candidate_sets"] = _compare_sets(
                f"read_parquet({sql_text(signatures)})", budget, examples=10
            ) if signatures.exists() else (0, [])
            lap("compared the rankers' candidate sets")
    return Published(path=target, name=name, **facts)


def _sort_groups(kind: _Kind, inputs: list[SortInput], prepared: list[_Prepared]
                 ) -> list[tuple[list[SortInput], tuple[str, ...]]]:
    """The sorts whose outputs, one after the other, are the whole input in key order: a pool
    whose every file holds one ranker (a ranker's run file, the usual landing) ranker by
    ranker, by the rest of the key (``external_sort.groups_by_value``)."""
    groups = groups_by_value(inputs, [p.rankers for p in prepared]) if kind is _POOL else None
    if groups is None:
        return [(inputs, kind.key)]
    return [(group, kind.key[1:]) for group in groups]


def _stopwatch(log: Callable[[str], None]) -> Callable[[str], None]:
    """``lap(text)`` logs ``text`` with the seconds since the previous lap."""
    last = [time.perf_counter()]

    def lap(text: str) -> None:
        now = time.perf_counter()
        log(f"{text} ({now - last[0]:.1f} s)")
        last[0] = now
    return lap


# -- pass 1: row rules, file by file ----------------------------------------------------------


@dataclass(frozen=True)
class _Prepared:
    """A checked file: its sort input, the name it establishes, the columns it contributes,
    and (pools) the rankers it holds."""

    input: SortInput
    name: str
    columns: list[str]
    rankers: frozenset[str] = frozenset()


def _prepare(kind: _Kind, path: Path, fmt: str | None, name: str | None, spilled: Path
             ) -> _Prepared:
    """Screened in batches when its columns already have the contract's types; otherwise read
    whole by its reader (the in-memory path, one file at a time) and spilled as Parquet."""
    schema = _parquet_schema(path) if detect_format(path, fmt) == "parquet" else None
    if schema is not None and _contract_typed(kind, schema):
        constants = _missing_columns(kind, path, schema, name)
        name = constants.get(kind.name_column, name)
        screened = _screen_batches(kind, path, fmt, name, constants)
        if screened is not None:
            columns = [*schema, *(c for c in constants if c not in schema)]
            name, rankers = screened
            return _Prepared(SortInput(path, constants), name,
                             _published_columns(kind, columns), rankers)
    return _converted(kind, path, fmt, name, spilled)


def _missing_columns(kind: _Kind, path: Path, schema: dict, name: str | None) -> dict:
    """The optional columns a contract-typed file lacks, each with the value the readers give
    it: a run file without a ranker column is its file's stem, a version without its name
    column is the asked name, else the file's stem."""
    defaults = {"ranker": path.stem, kind.name_column: name or path.stem}
    return {c: defaults[c] for c in kind.optional if c not in schema}


def _converted(kind: _Kind, path: Path, fmt: str | None, name: str | None, spilled: Path
               ) -> _Prepared:
    """The file read whole by its reader (the in-memory path, one file at a time) and spilled
    as Parquet at ``spilled``."""
    frame = kind.read(path, fmt, name, False)
    name = frame.select(pl.col(kind.name_column).first()).item()
    frame = frame.select(_published_columns(kind, frame.columns))
    frame.write_parquet(spilled)
    return _Prepared(SortInput(spilled), name, frame.columns, _rankers(kind, frame))


def _rankers(kind: _Kind, frame: pl.DataFrame) -> frozenset[str]:
    return frozenset(frame["ranker"].unique().to_list()) if kind is _POOL else frozenset()


def _published_columns(kind: _Kind, columns: list[str]) -> list[str]:
    """Pools publish the contract's columns (``read_pool`` selects them); judgment versions
    keep the reader's order, which puts a missing ``judgment_version`` last, and any extras."""
    return list(kind.columns) if kind is _POOL else columns


def _parquet_schema(path: Path) -> dict | None:
    try:
        schema = pl.scan_parquet(path, glob=False).collect_schema()
        empty = pq.ParquetFile(path).metadata.num_rows == 0
    except (pl.exceptions.PolarsError, OSError):
        return None  # the reader says what is wrong with it
    return None if empty else dict(schema)


def _contract_typed(kind: _Kind, schema: dict) -> bool:
    """Every contract column present with its contract type (the name column and a pool's
    ranker may be absent), and a display ``rank``, if any, stored as int64."""
    if any(schema.get(c, None if c in kind.optional else False) not in (t, None)
           for c, t in kind.dtypes.items()):
        return False
    return schema.get(cols.RANK, pl.Int64) == pl.Int64


def _screen_batches(kind: _Kind, path: Path, fmt, name: str | None, constants: dict
                    ) -> tuple[str, frozenset[str]] | None:
    """Screen the file a batch at a time: (its name, the rankers it holds), or None when a batch
    needs the reader's own conversion (a judgment's grade_status with padding); a refused batch
    raises the reader's message for the whole file."""
    needed = [c for c in kind.dtypes if c not in constants]
    expected = name
    rankers: set[str] = set()
    for frame in _batches(path, needed):
        frame = frame.with_columns(
            pl.lit(v, dtype=pl.String).alias(c) for c, v in constants.items())
        if kind is _JUDGMENTS and not _holds(frame, (pl.col("grade_status") == pl.col(
                "grade_status").str.strip_chars()).all()):
            return None
        if expected is None:
            expected = frame.select(pl.col(kind.name_column).first()).item()
        if not (screening.screen(kind.model, frame, check_keys=False)
                and _holds(frame, (pl.col(kind.name_column) == expected).all())):
            _refuse(kind, path, fmt, name)
        rankers |= _rankers(kind, frame)
    return expected, frozenset(rankers)


def _batches(path: Path, columns: list[str] | None = None) -> Iterator[pl.DataFrame]:
    """A Parquet file's rows in order, some BATCH_ROWS at a time. Polars decodes strings
    straight into its own arrays: a third of the CPU of Arrow batches converted (30M rows)."""
    scan = pl.scan_parquet(path, glob=False)
    return (scan if columns is None else scan.select(columns)).collect_batches(
        chunk_size=BATCH_ROWS)


def _holds(frame: pl.DataFrame, rule: pl.Expr) -> bool:
    return bool(frame.select(rule).item())


def _refuse(kind: _Kind, path: Path, fmt, name: str | None) -> None:
    """Raise the in-memory path's own message for ``path`` (read whole: refusals only)."""
    kind.read(path, fmt, name, True)
    raise InputError(str(path), [violation(kind.name_column, f"one {kind.what} per file: the "
                                           f"file names another {kind.what} than {name!r}", [])])


# -- pass 3: keys, content hash, publishing ---------------------------------------------------


def _hash_and_write(kind: _Kind, rows_in_order: Iterable[pl.DataFrame], tmp: Path, files, inputs,
                    label, fmt, name, signatures: Path) -> dict:
    """Hash the sorted rows, write them to ``tmp`` and count their facts; a pool's candidate
    set signatures (``_set_signatures``) go to ``signatures``."""
    digest = StreamingDigest(kind.digest)
    rankers: dict[str, list[int]] = {}
    grades: Counter = Counter()
    rows = 0
    with _ParquetAppender(tmp) as out, _ParquetAppender(signatures) as sets:
        for frame in _whole_blocks(rows_in_order, list(kind.key[:-1])):
            blocks = digest.update(frame)
            if blocks.duplicate >= 0:
                _refuse_duplicate(kind, blocks.duplicate_key(), files, inputs, label, fmt, name)
            rows += frame.height
            if kind is _POOL:
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
            out.append(frame)
    return {
        "sha256": digest.hexdigest(), "rows": rows,
        "rankers": [{"ranker": r, "n_queries": q, "n_candidates": n}
                    for r, (q, n) in sorted(rankers.items())],
        "grade_distribution": dict(sorted(grades.items())),
    }


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


class _ParquetAppender:
    """Frames appended to one zstd Parquet file, encoded on a helper thread while the caller
    hashes the next batch (Parquet encoding releases the GIL, and was a third of the pass).
    At most one frame waits, so memory stays at a couple of batches."""

    def __init__(self, path: Path) -> None:
        self._path, self._writer, self._pending = path, None, None

    def __enter__(self) -> _ParquetAppender:
        return self

    def append(self, frame: pl.DataFrame) -> None:
        self._wait()
        self._pending = helper("parquet-append").submit(self._write, frame.to_arrow())

    def _write(self, table) -> None:
        self._writer = self._writer or pq.ParquetWriter(self._path, table.schema,
                                                        compression="zstd")
        self._writer.write_table(table)

    def _wait(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()

    def __exit__(self, *exc) -> None:
        try:
            self._wait()
        finally:
            if self._writer is not None:
                self._writer.close()


def _whole_blocks(frames: Iterable[pl.DataFrame], block_key: list[str]
                  ) -> Iterator[pl.DataFrame]:
    """Rows in key order, in batches that never cut a block: a batch's last block waits for
    the next batch (a (ranker, query_id) block may span many)."""
    carry = None
    for frame in frames:
        frame = frame if carry is None else pl.concat([carry, frame])
        tail = _last_block_start(frame, block_key)
        carry = frame.slice(tail)
        if tail:
            yield frame.slice(0, tail)
    if carry is not None and carry.height:
        yield carry


def _last_block_start(frame: pl.DataFrame, block_key: list[str]) -> int:
    """The first row of the frame's last block, by binary search on the sorted key columns:
    the last block's first column is a run at the end, within which the next column is
    sorted, and so on. (On rows out of key order the cut may fall inside a block; the block's
    rest then comes after a later block, which ``verify_published`` refuses as out of order.)"""
    start = 0
    for column in block_key:
        values = frame[column].slice(start)
        start += int(values.search_sorted(values[-1], side="left"))
    return start


def _refuse_duplicate(kind: _Kind, key: dict, files, inputs, label, fmt, name) -> None:
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
        _refuse(kind, holders.pop(), fmt, name)
    key_text = ", ".join(key)
    shown = "; ".join(f"{path.name} row {row}" for path, row in where[:5])
    raise InputError(label, [violation(
        key_text, f"({key_text}) must be unique: duplicate rows across files ({shown})",
        [], [])])


def count_candidate_set_disagreements(path: str | Path, budget: Budget | None = None) -> int:
    """Queries of a published pool whose rankers do not rank the same candidate set, counted
    out of core (``quality.candidate_set_disagreements(pool).height`` without the pool in
    memory). A (query, ranker) set is compared by its size and the XOR of its doc_ids' 64-bit
    hashes (keys are unique): two different sets agree only by a hash collision."""
    return candidate_set_disagreements(path, budget, examples=0)[0]


def candidate_set_disagreements(path: str | Path, budget: Budget | None = None,
                                examples: int = 10) -> tuple[int, list[str]]:
    """(how many, the first ``examples`` in query_id order) of the queries that
    ``count_candidate_set_disagreements`` counts, out of core."""
    return _compare_sets(f"""(SELECT query_id, ranker, count(*) AS n, bit_xor(hash(doc_id)) AS h
                              FROM read_parquet({sql_text(path)}) GROUP BY query_id, ranker)""",
                         budget or Budget.of(), examples)


def _compare_sets(sets: str, budget: Budget, examples: int) -> tuple[int, list[str]]:
    """(how many, the first ``examples`` in query_id order) of the queries where the rankers'
    candidate sets differ or some ranker has none, from ``sets``: a relation of one row per
    (query_id, ranker) with its set's signature (n, h)."""
    with spilling(budget, "comparing candidate sets") as connection:
        connection.execute(f"""
            CREATE TEMP TABLE differing AS
            WITH sets AS (SELECT * FROM {sets}),
                 per_query AS (SELECT query_id, count(*) AS n_rankers,
                                      count(DISTINCT (n, h)) AS n_sets
                               FROM sets GROUP BY query_id)
            SELECT query_id FROM per_query
            WHERE n_rankers < (SELECT count(DISTINCT ranker) FROM sets) OR n_sets > 1
        """)
        count = connection.execute("SELECT count(*) FROM differing").fetchone()[0]
        first = connection.execute("SELECT query_id FROM differing ORDER BY query_id LIMIT ?",
                                   [examples]).fetchall()
    return count, [row[0] for row in first]


@dataclass(frozen=True)
class Verified:
    sha256: str
    rows: int


def verify_published(path: str | Path, kind: str, hash_version: int = HASH_VERSION) -> Verified:
    """Check a published pool (``kind="pool"``) or judgment version (``"judgments"``) again, in
    bounded memory: the row rules of its model batch by batch, its key order and unique keys,
    and its content SHA-256 in ``hash_version`` (to compare with the manifest's).

    Raises ``InputError``. A batch the screen refuses sends the whole file to the model, whose
    message (file, column, rule, rows) is the in-memory check's: refusals leave the bounds."""
    path = Path(path)
    kind_ = _POOL if kind == "pool" else _JUDGMENTS
    block_key = list(kind_.key[:-1])
    digest = StreamingDigest(kind_.digest, hash_version)
    rows, last = 0, None
    for frame in _whole_blocks(_batches(path), block_key):
        if not screening.screen(kind_.model, frame, check_keys=False):
            validate(kind_.model, pl.read_parquet(path), str(path))
        first = frame.select(block_key).row(0)
        if last is not None and first <= last:
            raise InputError(str(path), [violation(", ".join(block_key), (
                f"not in key order ({', '.join(kind_.key)}): {first} after {last}"), [])])
        last = frame.select(block_key).row(-1)
        blocks = digest.update(frame)
        if blocks.duplicate >= 0:
            key = ", ".join(kind_.key)
            raise InputError(str(path), [violation(key, f"({key}) must be unique: duplicate "
                                                   f"rows, e.g. {blocks.duplicate_key()}", [])])
        rows += frame.height
    return Verified(digest.hexdigest(), rows)
