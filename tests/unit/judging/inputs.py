"""Small inputs for the judge's tests: a queries table with texts, a documents table, a run of
two rankers, a partial judgment version whose worklist names the holes, and the hidden grade
table the test server answers from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from evaluation_pipeline.judging.prompt import passage

QUERIES = {"q1": "pump seal leak", "q2": "boiler tube inspection", "q3": "valve packing adjustment"}
DOCS_PER_QUERY = 4


@dataclass(frozen=True)
class Inputs:
    folder: Path
    queries: Path
    documents: Path
    judgments: Path  # a version with a grade for the first document of each query only
    run: Path
    worklist: Path  # every (query, doc) of the run, as a pairs file with the worklist's columns
    grades: dict  # (query text, passage) -> the true grade

    def pairs(self) -> list[tuple[str, str]]:
        return [(q, d) for q, d in pl.read_csv(self.worklist).select(
            "query_id", "doc_id").iter_rows()]


def documents() -> list[dict]:
    rows = []
    for number, (query_id, text) in enumerate(QUERIES.items()):
        for index in range(DOCS_PER_QUERY):
            grade = (index + number) % 4
            rows.append({"query_id": query_id, "doc_id": f"D{number}{index}",
                         "title": f"{text.title()} note {index}",
                         "text": f"Document {number}-{index} about {text}: detail level {grade}.",
                         "grade": grade})
    return rows


def make_inputs(folder: Path) -> Inputs:
    folder.mkdir(parents=True, exist_ok=True)
    rows = documents()
    queries = folder / "queries.csv"
    pl.DataFrame({"query_id": list(QUERIES), "query_text": list(QUERIES.values()),
                  "weight": [3, 2, 1]}).write_csv(queries)
    docs = folder / "documents.csv"
    pl.DataFrame([{k: r[k] for k in ("doc_id", "title", "text")} for r in rows]).with_columns(
        source=pl.lit("manual")).write_csv(docs)
    run = folder / "run.csv"
    pl.DataFrame([{"candidate_pool": "p1", "ranker": ranker, "query_id": r["query_id"],
                   "doc_id": r["doc_id"], "score": float(r["grade"] if ranker == "good"
                                                          else 3 - r["grade"])}
                  for ranker in ("good", "bad") for r in rows]).write_csv(run)
    firsts = [r for r in rows if r["doc_id"].endswith("0")]
    judgments = folder / "human-v1.csv"
    pl.DataFrame({"query_id": [r["query_id"] for r in firsts],
                  "doc_id": [r["doc_id"] for r in firsts],
                  "grade": [r["grade"] for r in firsts], "grade_status": "graded",
                  "judgment_version": "human-v1"}).write_csv(judgments)
    holes = [r for r in rows if not r["doc_id"].endswith("0")]
    worklist = folder / "worklist.csv"
    pl.DataFrame({"priority": list(range(1, len(holes) + 1)),
                  "query_id": [r["query_id"] for r in holes],
                  "query_text": [QUERIES[r["query_id"]] for r in holes],
                  "doc_id": [r["doc_id"] for r in holes],
                  "grade": [None] * len(holes), "grade_status": "graded"},
                 schema_overrides={"grade": pl.Int64}).write_csv(worklist)
    grades = {(QUERIES[r["query_id"]], passage(r["title"], r["text"])): r["grade"]
              for r in rows}
    return Inputs(folder, queries, docs, judgments, run, worklist, grades)


def judge_argv(inputs: Inputs, url: str, out: Path, *extra: str) -> list[str]:
    return ["judge", "--worklist", str(inputs.worklist), "--queries", str(inputs.queries),
            "--documents", str(inputs.documents), "--judge-url", url, "--model", "test-model",
            "--budget", "100", "--out", str(out), *extra]
