"""The answers already paid for: each reply stored the moment it arrives, under the key of what
the judge was asked, so that a rerun, or a run after a kill, asks again only what has no answer
(contract section 1, Judge ratings: the cache key).

The key is the SHA-256 of the canonical JSON (keys sorted, no spaces, UTF-8) of
``{"document": passage, "model": model, "parameters": {"max_tokens": ..., "temperature": ...},
"query": query text, "template_sha256": ...}``: a change to any of them is a new question. The
endpoint is not in it (the same model behind another URL gives the same answer), nor is the API
key. The answers are rows of a SQLite database in the cache folder (``answers.sqlite``), each
committed on its own: a kill loses at most the answer in flight.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path

from evaluation_pipeline.judging.client import Reply

DATABASE = "answers.sqlite"
_SCHEMA = """CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    template_sha256 TEXT NOT NULL,
    content TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    finish_reason TEXT,
    stored_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
)"""


def cache_key(template_sha256: str, model: str, parameters: dict, query: str,
              document: str) -> str:
    question = {"document": document, "model": model, "parameters": parameters,
                "query": query, "template_sha256": template_sha256}
    text = json.dumps(question, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class AnswerCache:
    """The answers of a cache folder; safe to share between threads."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.folder / DATABASE, check_same_thread=False,
                                   isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)

    def get(self, key: str) -> Reply | None:
        with self._lock:
            row = self._db.execute(
                "SELECT content, prompt_tokens, completion_tokens, finish_reason FROM answers "
                "WHERE key = ?", (key,)).fetchone()
        return None if row is None else Reply(*row)

    def put(self, key: str, reply: Reply, model: str, template_sha256: str) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR IGNORE INTO answers (key, model, template_sha256, content, "
                "prompt_tokens, completion_tokens, finish_reason) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, model, template_sha256, reply.content, reply.prompt_tokens,
                 reply.completion_tokens, reply.finish_reason))

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT count(*) FROM answers").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()
