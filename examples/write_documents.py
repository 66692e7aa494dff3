"""Write ``examples/data/documents.csv``: a title and a short text for every document of the
example data's judgment versions and pools (the table ``ndcg-eval judge`` reads).

The documents are the corpus of ``generate_example_data.py`` (work orders, manuals, procedures
per equipment class), rebuilt from its fixed seed; this script reads no draw of its own, so the
files that script writes are untouched. A document's text follows the grade a careful judge
gives it for the query it is most relevant to: grade 3 is dedicated to the query's task, 2
answers it among other matters, 1 is about the same equipment but not the task, 0 about
something else. So a judge reading them grades roughly as the example's judges did.

Usage: ``python examples/write_documents.py [--out-dir DIR]`` (default: examples/data).
"""

from __future__ import annotations

import argparse
import zlib
from pathlib import Path

import polars as pl
from generate_example_data import GENERAL_SOPS, build_example

DOCUMENTS_FILE = "documents.csv"
# Topics of a document about an equipment class, but about none of the queries' tasks.
ROUTINE = (
    "quarterly lubrication schedule",
    "spare parts list and part numbers",
    "commissioning checklist",
    "nameplate data and ratings",
    "annual inspection record",
    "paint and corrosion protection touch-up",
    "housekeeping round around the unit",
    "instrument loop drawing update",
)
# Topics of a document about the class that touch a task without settling it.
RELATED = (
    "general troubleshooting notes for {cls} units, including {task}",
    "operator round findings on the {cls}; {task} mentioned as a possible cause",
    "{cls} overview: components, operating limits and common faults",
)
KIND_WORDS = {"work_order": "work order", "manual": "manual", "procedure": "procedure"}


def _pick(options: tuple[str, ...], doc_id: str, salt: str = "") -> str:
    return options[zlib.crc32(f"{doc_id}{salt}".encode()) % len(options)]


def _texts(doc, grade: int, task: str | None, general: str | None) -> tuple[str, str]:
    cls = doc.equipment_class or "site"
    if general is not None:
        title = f"{doc.doc_id}: {general} procedure (site-wide)"
        text = (f"Site-wide standard procedure for {general}. Applies to every equipment "
                f"class. Covers roles, permits, the steps in order and the records to keep.")
        return title, text
    kind = KIND_WORDS[doc.doc_type]
    if grade >= 3 and task:
        title = f"{cls.capitalize()} {kind}: {task}"
        text = (f"Dedicated to {task}. Lists the symptoms, the checks in order, the "
                f"acceptance values and the corrective action, with the isolation steps "
                f"before work starts and the test after it.")
    elif grade == 2 and task:
        title = f"{cls.capitalize()} {kind}: maintenance notes"
        first = ROUTINE.index(_pick(ROUTINE, doc.doc_id))
        text = (f"Covers several {cls} topics: {ROUTINE[first]}, then a section on {task} "
                f"with the main checks, and notes on {ROUTINE[(first + 1) % len(ROUTINE)]}.")
    elif grade == 1 and task:
        title = f"{cls.capitalize()} {kind}: {_pick(ROUTINE, doc.doc_id)}"
        text = _pick(RELATED, doc.doc_id).format(cls=cls, task=task).capitalize() + (
            ". It does not give the steps or the values.")
    else:
        topic = _pick(ROUTINE, doc.doc_id)
        title = f"{cls.capitalize()} {kind}: {topic}"
        text = f"Record of {topic} for the {cls} equipment. No fault or repair is described."
    if doc.doc_type == "work_order":
        text = f"Work order {doc.doc_id}. " + text
    return title, text


def documents_frame() -> pl.DataFrame:
    corpus, queries, judgments, pools = build_example()
    generals = [d for d in corpus.values() if d.doc_type == "procedure"
                and d.equipment_class is None]
    general_topic = {d.doc_id: topic for d, topic in zip(generals, GENERAL_SOPS)}
    best: dict[str, tuple[int, str]] = {}  # doc_id: (grade, the query's text)
    for query in queries:
        for doc_id, grade in sorted(query.relevance.items()):
            if doc_id not in best or grade > best[doc_id][0]:
                best[doc_id] = (grade, query.query_text)
    wanted = set()
    for frame in judgments.values():
        wanted |= set(frame["doc_id"].to_list())
    for runs in pools.values():
        for run in runs.values():
            wanted |= set(run["doc_id"].to_list())
    rows = []
    for doc_id in sorted(wanted):
        doc = corpus[doc_id]
        grade, task = best.get(doc_id, (0, None))
        title, text = _texts(doc, grade, task, general_topic.get(doc_id))
        rows.append((doc_id, title, text, KIND_WORDS[doc.doc_type], doc.age_band))
    return pl.DataFrame(rows, schema={"doc_id": pl.String, "title": pl.String,
                                      "text": pl.String, "doc_type": pl.String,
                                      "age_band": pl.String}, orient="row")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=Path(__file__).resolve().parent / "data",
                        help="where to write documents.csv (default: examples/data)")
    args = parser.parse_args(argv)
    frame = documents_frame()
    frame.write_csv(args.out_dir / DOCUMENTS_FILE)
    print(f"{args.out_dir / DOCUMENTS_FILE}: {frame.height} documents")


if __name__ == "__main__":
    main()
