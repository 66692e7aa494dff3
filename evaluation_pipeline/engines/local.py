"""The in-memory engine: read and validate whole inputs, score, write (as ``ndcg-eval score``).

Its inputs are files in any format the readers take, or tables already in memory
(``io.table_inputs.Table``), read in place; its rows are written, or kept in memory for a
caller that holds them (the Python API)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import ClassVar

import polars as pl

from evaluation_pipeline.engines.defaults import PER_QUERY_ROW_GROUP_ROWS
from evaluation_pipeline.engines.machine import OnThisMachine
from evaluation_pipeline.engines.protocol import (
    EngineResult,
    Resources,
    ScoringInputs,
    ScoringOutput,
)
from evaluation_pipeline.evaluation import Lineage, evaluate
from evaluation_pipeline.io.atomic import atomic_write
from evaluation_pipeline.io.locations import Location, location
from evaluation_pipeline.io.table_inputs import Input, read_candidates, read_judgments
from evaluation_pipeline.metric.hashing import (
    judgment_blocks,
    judgments_sha256,
    pool_blocks,
)
from evaluation_pipeline.metric.kernels import loading as kernel
from evaluation_pipeline.metric.kernels.blocks import Blocks
from evaluation_pipeline.metric.ndcg import JudgmentIndex, index_judgments
from evaluation_pipeline.metric.raters import check_rule, is_rated
from evaluation_pipeline.spec import EvaluationSpec
from schemas import InputError, validate
from schemas.columns import RATER
from schemas.errors import violation


def read_and_evaluate(
    inputs: ScoringInputs,
    spec: EvaluationSpec,
    *,
    ranks: bool | None = None,
    display: bool = False,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, Lineage]:
    """(judgments, candidates, per-query rows, lineage) of the inputs (files, or tables in
    memory), all validated.

    ``ranks``: the run's rank column is read and checked (``schemas.ranks``); by default when
    ``spec`` orders ties by it, or for a caller that will score other specs that do.
    ``display``: a rank column is kept when present, unchecked (``read_run``).
    ``inputs.known``: content hashes proven already (``metric.hashing.KnownHashes``), not
    computed."""
    ranks = spec.needs_rank if ranks is None else ranks
    with ThreadPoolExecutor(max_workers=1) as side:
        # The judgments (read, indexed for the spec, hashed) on a second thread, while the run
        # is read and cut into blocks: both are mostly polars and compiled loops, GIL released.
        judged = side.submit(_read_judgments, inputs.judgments, inputs.judgments_format,
                             inputs.judgment_version, spec, inputs.known.judgments)
        # numba's import (0.3 s, holding the interpreter) runs beside the judgments' read; the
        # compiler then starts on a spare thread while the run is read.
        kernel.load()
        threading.Thread(target=kernel.warm_up, daemon=True).start()
        run, run_format = inputs.run, inputs.run_format
        pool, ranker = inputs.pool, inputs.ranker
        candidates = read_candidates(run, run_format, pool=pool, ranker=ranker,
                                     check_keys=False, display=display, ranks=ranks)
        blocks = pool_blocks(candidates)
        _refuse_repeats(blocks, run, lambda: read_candidates(
            run, run_format, pool=pool, ranker=ranker, ranks=ranks))
        judgments, index, digest = judged.result()
    per_query, lineage = evaluate(judgments, candidates, spec, blocks=blocks, index=index,
                                  judgments_digest=digest, pool_digest=inputs.known.pool)
    return judgments, candidates, per_query, lineage


def _read_judgments(path, fmt, version, spec, digest: str | None
                    ) -> tuple[pl.DataFrame, JudgmentIndex, str]:
    judgments = read_judgments(path, fmt, version=version, check_keys=False)
    rated = is_rated(judgments)
    check_rule(spec, rated, judgments[RATER].unique().to_list() if rated else None, str(path))
    blocks = judgment_blocks(judgments)  # one cut for the index and the hash
    _refuse_repeats(blocks, path, lambda: read_judgments(path, fmt, version=version))
    return judgments, index_judgments(blocks, spec), digest or judgments_sha256(blocks)


def _refuse_repeats(blocks: Blocks, path: Input, read_checked) -> None:
    """Repeated keys are found while the blocks are cut (each query's documents in order), not
    by a separate pass. Input that has some is read again by ``read_checked``, the reader with
    its key check on, whose message names the rows; this message is the fallback."""
    if blocks.duplicate < 0:
        return
    read_checked()
    columns = ", ".join([*blocks.keys.columns, "doc_id"])
    raise InputError(str(path), [violation(
        columns, f"({columns}) must be unique: duplicate rows, e.g. {blocks.duplicate_key()}",
        [])])


@dataclass(frozen=True)
class LocalScores:
    lineage: Lineage
    per_query: pl.DataFrame  # the rows, validated (also written where asked)
    judgments: pl.DataFrame  # the validated inputs, which a report's traces read again
    candidates: pl.DataFrame


def score_local(inputs: ScoringInputs, spec: EvaluationSpec, out_path: Location | None
                ) -> LocalScores:
    """Per-query rows with lineage, everything validated before it is written at ``out_path``
    (None: the rows are only returned)."""
    judgments, candidates, per_query, lineage = read_and_evaluate(inputs, spec)
    per_query = validate("PerQueryResults", per_query, "per-query results")
    if out_path is not None:
        # The streaming engine's row groups, so that both engines write the same bytes.
        atomic_write(out_path, lambda tmp: per_query.write_parquet(
            tmp, compression="zstd", statistics=True, row_group_size=PER_QUERY_ROW_GROUP_ROWS))
    return LocalScores(lineage, per_query, judgments, candidates)


class LocalEngine(OnThisMachine):
    """``local``: whole inputs read and validated in memory, in any format the readers take,
    tables in memory read in place; the rows written, or kept in memory."""

    name: ClassVar[str] = "local"
    keeps_rows: ClassVar[bool] = True

    def score(self, inputs: ScoringInputs, spec: EvaluationSpec, output: ScoringOutput,
              resources: Resources) -> EngineResult:
        scored = score_local(inputs.located(), spec,
                             None if output.in_memory else location(output.path))
        return EngineResult(scored.lineage, None if output.in_memory else str(output.path),
                            scored.per_query.height, engine=self.name,
                            judgments=scored.judgments, candidates=scored.candidates,
                            per_query=scored.per_query if output.in_memory else None)
