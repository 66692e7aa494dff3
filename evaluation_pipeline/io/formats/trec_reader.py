"""TREC files: qrels (``qid iteration docno rel``) and runs (``qid Q0 docno rank score tag``),
whitespace-separated fields read as strings, rows numbered by their file line."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from evaluation_pipeline.io.formats.cells import integer_column
from evaluation_pipeline.io.formats.text import read_text
from schemas import InputError
from schemas.columns import GRADED, UNKNOWN
from schemas.errors import violation

QRELS_FIELDS = ["query_id", "iteration", "doc_id", "rel"]
RUN_FIELDS = ["query_id", "q0", "doc_id", "rank", "score", "ranker"]


def read_qrels(path: Path) -> tuple[pl.DataFrame, pl.Series]:
    """Judgments with their lines; ``rel < 0`` ("in pool, not judged") is ``unknown``."""
    frame, lines = _read_trec(path, QRELS_FIELDS)
    rel = integer_column(frame, "rel", str(path), lines, "TREC rel must be an integer")
    frame = frame.with_columns(
        pl.when(rel >= 0).then(rel).otherwise(None).alias("grade"),
        pl.when(rel >= 0).then(pl.lit(GRADED)).otherwise(pl.lit(UNKNOWN)).alias("grade_status"),
    ).drop("iteration", "rel")
    return frame, lines


def read_trec_run(path: Path, ranker: str | None) -> tuple[pl.DataFrame, pl.Series]:
    """Candidates with their lines (score and rank still text); the tag names the ranker,
    unless ``ranker`` does. Extra trailing fields are ignored."""
    frame, lines = _read_trec(path, RUN_FIELDS)
    frame = frame.drop("q0")
    if ranker is not None:
        frame = frame.with_columns(pl.lit(ranker).alias("ranker"))
    return frame, lines


def _read_trec(path: Path, fields: list[str]) -> tuple[pl.DataFrame, pl.Series]:
    """Whitespace-separated fields; ``#`` comment lines and blank lines are skipped."""
    text = read_text(path, fields)
    lines = pl.Series("text", [text]).str.split("\n").explode().str.strip_chars_end("\r")
    frame = pl.DataFrame({"text": lines, "line": pl.int_range(1, len(lines) + 1, eager=True)})
    frame = frame.filter(
        pl.col("text").str.strip_chars().str.len_bytes() > 0,
        ~pl.col("text").str.strip_chars_start().str.starts_with("#"),
    )
    if frame.height == 0:
        raise InputError(str(path), [violation("(file)", "file has no data lines", [])])
    pattern = r"^\s*" + r"\s+".join([r"(\S+)"] * len(fields))
    parsed = frame.select(
        pl.col("text").str.extract_groups(pattern).struct.rename_fields(fields).alias("f"),
        "line",
        "text",
    ).unnest("f")
    short = parsed.filter(pl.col(fields[0]).is_null())
    if short.height:
        raise InputError(
            str(path),
            [violation("(line)", f"a TREC line needs at least {len(fields)} whitespace-separated "
                       f"fields ({' '.join(fields)})", short["line"].to_list(),
                       [t[:60] for t in short["text"].head(5).to_list()])],
            row_label="line",
        )
    return parsed.drop("text", "line"), parsed["line"]
