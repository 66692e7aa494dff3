"""The streaming engine: score a Parquet run in batches of whole queries, in bounded memory.

Both inputs are read batch by batch (slices of a polars scan, which reads only the row groups
a slice covers). The run must be sorted by (ranker, query_id) and the judgments by query_id, as a
ranker's output and a canonical judgment version are; then each batch of whole queries meets
exactly the judgment rows of its query range (a merge join), and peak memory depends on the
batch, not the run. An input that is not sorted is detected on the stream; the engine then sorts
it into a temporary Parquet file with the external sort (``ingest.external_sort``, which spills to
disk under the memory budget), says so on stderr, and starts again; a run whose every (ranker,
query_id) is whole, in another order, is streamed as it is instead (``grouping``). Rows come
out in the in-memory engine's order, with the same values.

Validation is part of the pass: cheap column checks on every batch; a batch that fails them is
handed to the pandera model, whose message names the file, column, rule and rows. Keys are
unique across the whole input because a sorted input cannot repeat a query outside its batch.
The content hashes are computed on the stream (contract section 1: canonical lines sorted by
key): each batch holds whole queries in key order, so sorting a batch sorts the whole.

The work runs in stages on their own threads, one batch in flight between stages: reading a
run batch, cutting it into query blocks, checking it and ordering each block's documents; the
judgments window of the batch, indexed; the kernel and the writes (the calling thread); and
the pool digest. The judgments are read one batch ahead on a thread of their own. Each stage
is mostly polars, compiled loops or hashlib, which release the GIL.

Reading is ``stream_reading``, the checks ``stream_checks``, the merge with the judgments
``judgment_windows``; this module runs one pass over the inputs and writes what it scores.

Inputs and output may be URLs on object storage (``io.locations``): the batches are then read
by pyarrow over the fsspec file, and the rows are put as one object once complete.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import polars as pl
from upath import UPath

from evaluation_pipeline.engines.defaults import DEFAULT_BATCH_ROWS
from evaluation_pipeline.engines.machine import OnThisMachine
from evaluation_pipeline.engines.protocol import (
    EngineResult,
    Resources,
    ScoringInputs,
    ScoringOutput,
)
from evaluation_pipeline.engines.streaming.batch_checks import (
    NotSorted,
    RunBatch,
    cast,
    check_judgments,
    check_run,
)
from evaluation_pipeline.engines.streaming.grouping import (
    GROUPED_NOTE,
    POSITION,
    Grouped,
)
from evaluation_pipeline.engines.streaming.judgment_windows import JudgmentWindows
from evaluation_pipeline.engines.streaming.reading import (
    Groups,
    batches,
    largest_grade,
    read_ahead,
    read_batches,
    whole_groups,
)
from evaluation_pipeline.engines.streaming.result_file import (
    Progress,
    ResultFile,
    with_lineage_file,
)
from evaluation_pipeline.engines.streaming.sorted_inputs import (
    KEYS,
    Names,
    asked_pool,
    check_asked_name,
    external_sort,
    has_raters,
    input_columns,
    parquet_judgments,
    rater_ids,
    run_files,
)
from evaluation_pipeline.engines.streaming.unjudged_scan import pool_unjudged
from evaluation_pipeline.evaluation import Lineage
from evaluation_pipeline.io import leftovers
from evaluation_pipeline.io.atomic import WriteFailed, atomic_write
from evaluation_pipeline.io.locations import is_remote, location
from evaluation_pipeline.metric.hashing import (
    JUDGMENT_KEYS,
    POOL_KEYS,
    KnownDigest,
    KnownHashes,
    StreamingDigest,
)
from evaluation_pipeline.metric.kernels import loading as kernel
from evaluation_pipeline.metric.kernels.blocks import Blocks
from evaluation_pipeline.metric.ndcg import (
    JudgmentIndex,
    index_judgments,
    missing_from_run,
    score_candidates,
    sort_results,
)
from evaluation_pipeline.metric.raters import check_rule
from evaluation_pipeline.spec import EvaluationSpec
from schemas import InputError
from schemas.columns import JUDGMENT_DTYPES
from schemas.errors import violation

__all__ = ["NotSorted", "StreamResult", "StreamingEngine", "score_streaming"]


@dataclass
class StreamResult:
    lineage: Lineage
    rows: int  # per-query rows written
    candidates: int  # candidate rows read
    notes: list[str] = field(default_factory=list)  # fallbacks taken, said on stderr too


def score_streaming(inputs: ScoringInputs, spec: EvaluationSpec, out_path: Path | UPath,
                    resources: Resources) -> StreamResult:
    """Per-query rows with lineage at ``out_path``, streamed; see the module docstring.

    ``resources``: the batch (``batch_rows``), the progress, and the budget of the external
    sort (its memory and spill folder). ``inputs.known``: content hashes proven already
    (``metric.hashing.KnownHashes``), not computed."""
    threading.Thread(target=kernel.warm_up, daemon=True).start()  # while the first batch reads
    judgments_path, run_path, out_path = (location(inputs.judgments), location(inputs.run),
                                          location(out_path))
    judgment_version, pool, ranker = inputs.judgment_version, inputs.pool, inputs.ranker
    batch_rows, budget = resources.batch_rows or DEFAULT_BATCH_ROWS, resources.memory()
    files = run_files(run_path)
    # A file naming another pool than the one asked for is refused as the local engine does.
    check_asked_name(files, "candidate_pool", asked_pool(run_path, pool), "candidate pool")
    names = Names(judgment_version or judgments_path.stem, pool or
                   (run_path.name if run_path.is_dir() else run_path.parent.name), ranker)
    notes: list[str] = []
    # The scratch folder (the rows before their lineage, sorted inputs) is on a local disk:
    # beside a local output (hidden, where the next run removes it if this one is killed),
    # else in the temporary folder; held while it is used (io.leftovers).
    beside = not is_remote(out_path) and out_path.parent.exists()
    scratch = Path(tempfile.mkdtemp(prefix=".ndcg-stream-" if beside else "ndcg-stream-",
                                    dir=out_path.parent if beside else None))
    held = leftovers.hold(scratch)
    try:
        sources = {"judgments": [parquet_judgments(judgments_path, judgment_version, scratch)],
                   "run": files}
        raters = rater_ids(sources["judgments"][0])
        rated = raters is not None
        check_rule(spec, rated, raters, str(judgments_path))  # before a row is scored
        # Other rankers' unjudged documents are holes of each ranker too (all_judged only).
        unjudged = pool_unjudged(files, sources["judgments"][0], names.fill("run")["ranker"],
                                 spec, rated)
        grouped: Grouped | None = None
        while True:
            try:
                one = _Pass(sources, names, spec, batch_rows, grouped=grouped, pool=unjudged,
                            known=inputs.known)
                return _stream(one, out_path, resources.progress, notes, scratch)
            except NotSorted as exc:
                which = exc.what
                if sources[which][0].parent == scratch:  # already sorted by us: cannot happen
                    raise
                if which == "run" and grouped is None and not any(
                        map(is_remote, [*sources["run"], *sources["judgments"]])):
                    # Each (ranker, query)'s rows together, in another order: no sort.
                    grouped = Grouped.of(sources["run"], names.fill("run"), batch_rows,
                                         scratch, budget)
                    if grouped is not None:
                        notes.append(GROUPED_NOTE)
                        print(f"ndcg-eval: {GROUPED_NOTE}", file=sys.stderr)
                        continue
                keys = KEYS[which]
                order = f"({', '.join(keys)})" if len(keys) > 1 else keys[0]
                note = (f"{which} input is not sorted by {order}: sorting it into a temporary "
                        "Parquet file first (an external sort), then streaming")
                notes.append(note)
                print(f"ndcg-eval: {note}", file=sys.stderr)
                with _sorted_copy_named(which, scratch, out_path):
                    sources[which] = external_sort(which, sources[which], names, scratch,
                                                   input_columns(which, spec, rated),
                                                   budget)
    finally:
        os.close(held)
        shutil.rmtree(scratch, ignore_errors=True)


@contextmanager
def _sorted_copy_named(which: str, scratch: Path, out_path: Path | UPath) -> Iterator[None]:
    """A sorted copy that cannot be written (it is in the scratch folder, on the output's disk)
    names the output and says what was being written, not a scratch file's name."""
    try:
        yield
    except WriteFailed as exc:
        if scratch not in Path(exc.filename).parents:
            raise
        raise WriteFailed(exc.errno, f"{exc.strerror} (while writing the {which} input's "
                          "sorted copy in a scratch folder beside it)", str(out_path)) from exc


# -- the steps of a pass, in output order ------------------------------------------------------


@dataclass(frozen=True)
class _Score:
    """Part of a run batch (one ranker's whole queries) with the judgments of its range."""

    candidates: Blocks | pl.DataFrame
    index: JudgmentIndex
    returned: pl.DataFrame  # the (ranker, query_id) pairs the part holds
    ranker: str

    def results(self, spec: EvaluationSpec, pool: pl.DataFrame | None) -> pl.DataFrame:
        scored = score_candidates(self.candidates, self.index, spec, pool)
        missing = missing_from_run(self.index, self.returned, [self.ranker], spec, pool)
        return sort_results(pl.concat([scored, missing]))


@dataclass(frozen=True)
class _Missing:
    """Judged queries the ranker did not return, outside its batches' ranges (before one, or
    after its last)."""

    index: JudgmentIndex
    ranker: str

    def results(self, spec: EvaluationSpec, pool: pl.DataFrame | None) -> pl.DataFrame:
        return missing_from_run(self.index, _NO_PAIRS, [self.ranker], spec, pool)


@dataclass(frozen=True)
class _BatchDone:
    rows: int  # the batch's candidate rows


_NO_PAIRS = pl.DataFrame(schema={"ranker": pl.String, "query_id": pl.String})


class _Pass:
    """One pass over both inputs: the run's batches in order, each met by its judgments.

    The judgments are read once per ranker; the first ranker's read checks and hashes them.
    ``grouped``: the run is grouped by (ranker, query_id) but not sorted (``grouping``).
    ``known``: the hashes not computed again; their digests still cut the batches into blocks."""

    def __init__(self, sources: dict, names: Names, spec: EvaluationSpec, batch_rows: int,
                 grouped: Grouped | None = None, pool: pl.DataFrame | None = None,
                 known: KnownHashes = KnownHashes()):
        self.grouped = grouped
        self.sources = sources
        self.pool = pool  # the pool's unjudged documents per query (unjudged_scan), if needed
        self.names = names
        self.spec = spec
        self.batch_rows = batch_rows
        # A grouped run's judgments have their order of queries found all the same.
        judged = grouped.judgment_digest(sources["judgments"], names.fill("judgments"),
                                         batch_rows) if grouped else None
        self.judgment_digest = (KnownDigest("judgments", known.judgments)
                                if known.judgments is not None
                                else judged or StreamingDigest("judgments"))
        self.pool_digest = (KnownDigest("pool", known.pool) if known.pool is not None
                            else grouped.pool_digest() if grouped else StreamingDigest("pool"))
        self.seen_names: dict = {}  # each input's one name, as its first batch holds it
        self.judgments_checked = False
        self.rated = has_raters(sources["judgments"][0])
        self.windows: JudgmentWindows | None = None  # the current ranker's judgments
        self.ranker: str | None = None
        self.top_grade: int | None = None  # the version's largest grade, read at first use

    def _index(self, judgments: pl.DataFrame) -> JudgmentIndex:
        """A window of judgments indexed, its holes graded on the whole version's scale."""
        if self.top_grade is None and self.spec.max_grade is None:
            self.top_grade = largest_grade(self.sources["judgments"],
                                           self.names.fill("judgments"), self.batch_rows)
        return index_judgments(judgments.drop(POSITION, strict=False), self.spec,
                               top_grade=self.top_grade)

    def run_batches(self) -> Iterator[RunBatch]:
        """The run's batches of whole queries, checked and cut into blocks."""
        groups = whole_groups(read_batches(self.sources["run"], input_columns("run", self.spec),
                                           self.names.fill("run"), self.batch_rows),
                              POOL_KEYS, "run", ordered=self.grouped is None)
        for group in groups:
            yield check_run(group.frame, group.path, group.offset, self.seen_names, group.starts,
                            ranks=self.spec.needs_rank)

    def steps(self, run_batches: Iterator[RunBatch], hasher: ThreadPoolExecutor
              ) -> Iterator[_Score | _Missing | _BatchDone]:
        hashing: Future | None = None
        try:
            for batch in run_batches:
                # The pool digest, in batch order, one batch in flight: memory stays bounded.
                if hashing is not None:
                    hashing.result()
                hashing = hasher.submit(self.pool_digest.update, batch.blocks)
                yield from self._batch_steps(batch)
                yield _BatchDone(batch.frame.height)
            if self.windows is None:
                raise InputError(str(self.sources["run"][0]),
                                 [violation("(file)", "run has no rows", [])])
            yield from self._finish_ranker()
            if hashing is not None:
                hashing.result()
        finally:
            if self.windows is not None:  # stopped early: stop the judgments' read-ahead too
                self.windows.close()

    def _batch_steps(self, batch: RunBatch) -> Iterator[_Score | _Missing]:
        frame = batch.frame
        # Whole queries of one ranker: the batch never spans two rankers' ranges.
        one_ranker = frame["ranker"][-1] == frame["ranker"][0]
        for part in [frame] if one_ranker else frame.partition_by("ranker",
                                                                  maintain_order=True):
            if part["ranker"][0] != self.ranker:
                yield from self._start_ranker(part["ranker"][0])
            first, last = (part["query_id"][0], part["query_id"][-1]) if not self.grouped else (
                self.grouped.positions(batch.blocks, part, one_ranker))
            # Judged queries before this part's first: missing from the run, written batch by
            # batch, so that the part's window holds only its own queries'.
            for early in self.windows.before(first):
                yield _Missing(self._index(early), self.ranker)
            index = self._index(self.windows.upto(last))
            if one_ranker:
                yield _Score(batch.blocks, index, batch.blocks.keys, self.ranker)
            else:
                yield _Score(part, index, part.select("ranker", "query_id").unique(),
                             self.ranker)

    def _start_ranker(self, ranker: str) -> Iterator[_Missing]:
        if self.windows is not None:
            yield from self._finish_ranker()
        read = (self.sources["judgments"], input_columns("judgments", self.spec, self.rated),
                self.names.fill("judgments"), self.batch_rows)
        # A grouped run: the judgments in the ranker's order of queries, checked already.
        groups = (self.grouped.judgment_groups(ranker, *read, check=None if
                                               self.judgments_checked else self._judgment_rows)
                  if self.grouped else whole_groups(batches(*read), JUDGMENT_KEYS, "judgments"))
        self.judgments_checked |= bool(self.grouped and self.grouped.checked)
        self.windows = JudgmentWindows(groups, self._judgment_rows,
                                       POSITION if self.grouped else "query_id")
        self.ranker = ranker

    def _finish_ranker(self) -> Iterator[_Missing]:
        for rest in self.windows.rest():
            yield _Missing(self._index(rest), self.ranker)
        self.judgments_checked = True

    def _judgment_rows(self, group: Groups) -> pl.DataFrame:
        frame = group.frame
        if not self.judgments_checked:
            frame = check_judgments(frame, group.path, group.offset, self.seen_names,
                                    self.judgment_digest)
        return cast(frame, _JUDGMENT_VALUES)

    def lineage(self) -> Lineage:
        return Lineage(
            judgment_version=self.seen_names.get("judgment_version",
                                                 self.names.judgment_version),
            judgments_sha256=self.judgment_digest.hexdigest(),
            candidate_pool=self.seen_names["candidate_pool"],
            pool_sha256=self.pool_digest.hexdigest(),
            spec_id=self.spec.spec_id,
        )


# The judgment columns the kernel reads, in their types (the version is one name, unread).
_JUDGMENT_VALUES = {c: t for c, t in JUDGMENT_DTYPES.items() if c != "judgment_version"}


def _stream(one: _Pass, out_path: Path | UPath, progress: bool, notes: list[str], scratch: Path
            ) -> StreamResult:
    # Stages on their own threads: reading, cutting, checking and ordering each batch (blocks);
    # the judgments window of each batch, indexed, and the feed of the pool digest; then, here,
    # the kernel and the writes. The digest itself runs on a thread of its own. The read is not
    # a stage of its own: polars decodes a slice on its own threads, and the extra batch in
    # flight cost 0.1 to 0.15 GB and 0.4 s at 10M rows.
    run_batches = read_ahead(one.run_batches())
    hasher = ThreadPoolExecutor(max_workers=1)
    body = ResultFile(scratch / "per_query.body.parquet", out_path)
    meter = Progress(progress)
    stream = read_ahead(one.steps(run_batches, hasher))
    try:
        for step in stream:
            if isinstance(step, _BatchDone):
                meter.add(step.rows)
            else:
                body.write(step.results(one.spec, one.pool))
    finally:
        # Stop the stages in order, each after the thread that reads it has ended (a long-lived
        # process, such as a code server, would otherwise keep them until garbage collection).
        stream.close()
        run_batches.close()
        hasher.shutdown(wait=True, cancel_futures=True)
        body.close()
    lineage = one.lineage()
    atomic_write(out_path, lambda tmp: with_lineage_file(body.path, tmp, lineage,
                                                          one.grouped is not None))
    return StreamResult(lineage=lineage, rows=body.rows, candidates=meter.candidates,
                        notes=notes)


class StreamingEngine(OnThisMachine):
    """``streaming``: Parquet runs in batches of whole queries, memory bounded by the batch
    (judgments in another format are read whole first: a version is small); the rows are
    written to a file as they are scored, so an output in memory is none of its."""

    name: ClassVar[str] = "streaming"
    keeps_rows: ClassVar[bool] = False

    def score(self, inputs: ScoringInputs, spec: EvaluationSpec, output: ScoringOutput,
              resources: Resources) -> EngineResult:
        if inputs.in_memory or output.in_memory:
            raise ValueError("the streaming engine reads files and writes one: stage tables "
                             "in memory as files, or score them with an engine that keeps "
                             "rows (Engine.keeps_rows)")
        result = score_streaming(inputs.located(), spec, output.path, resources)
        return EngineResult(result.lineage, str(output.path), result.rows, result.notes,
                            engine=self.name)
