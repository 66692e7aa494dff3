"""The test judge server (``tests.support.judge_server``) for the bundled example data: its
hidden grade table is the example's own truth (``examples/generate_example_data.py``: the grade
a careful judge gives each document for each query), keyed by what the prompt holds, the
query's text and the document's passage.

    python -m tests.support.serve_judge [--port 8765] [--accuracy 0.9] [--seed 0]
                                        [--ready-file FILE]

serves it on 127.0.0.1 until interrupted (Ctrl-C) or terminated (SIGTERM, as `kill` sends),
printing its base URL first. Building the grade table takes a few seconds before the server
listens; with ``--ready-file`` the base URL is also written to FILE (whole, by a rename) once
it answers, and the file is removed when it stops, so a script starting it in the background
waits for the file (docs/judging.md, How far the bounds narrowed on the example week).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from functools import cache
from pathlib import Path

import polars as pl

from evaluation_pipeline.judging.prompt import passage
from tests.support.judge_server import JudgeServer
from tests.support.paths import EXAMPLES


@cache
def example_grades() -> dict[tuple[str, str], int]:
    """(query text, passage) -> the true grade, for every example query and document."""
    sys.path.insert(0, str(EXAMPLES.parent))
    try:
        from generate_example_data import build_example
    finally:
        sys.path.remove(str(EXAMPLES.parent))
    _, queries, _, _ = build_example()
    documents = pl.read_csv(EXAMPLES / "documents.csv", infer_schema=False)
    passages = {doc_id: passage(title or "", text or "") for doc_id, title, text in
                documents.select("doc_id", "title", "text").iter_rows()}
    return {(query.query_text, text): query.relevance.get(doc_id, 0)
            for query in queries for doc_id, text in passages.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--accuracy", type=float, default=0.9,
                        help="the share of pairs answered with the true grade")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ready-file", type=Path,
                        help="write the base URL to this file once the server answers; "
                             "removed when it stops")
    args = parser.parse_args(argv)
    # SIGTERM stops it as Ctrl-C does: the server closed and the ready file removed.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    ready = args.ready_file
    try:
        server = JudgeServer(example_grades(), accuracy=args.accuracy, seed=args.seed,
                             port=args.port)
    except KeyboardInterrupt:
        return
    try:
        print(server.base_url, flush=True)
        if ready is not None:
            partial = ready.with_name(f".{ready.name}.{os.getpid()}")
            partial.write_text(server.base_url + "\n", encoding="utf-8")
            partial.replace(ready)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        if ready is not None:
            ready.unlink(missing_ok=True)
        server.close()


if __name__ == "__main__":
    main()
