"""Opt-in response cache in one SQLite file, keyed by backend, model, parameters and the exact prompt.

Re-running an evaluation with the cache on sends no request whose answer is stored, so it costs
nothing and gives the same grades. Only successful replies are stored.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from ragmeter.llm.types import TokenUsage

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    finish_reason TEXT,
    created REAL NOT NULL
)
"""


class ResponseCache:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=10000")
        self._db.execute(_SCHEMA)

    @staticmethod
    def key(backend: str, model: str, params: dict[str, Any], messages: list[dict[str, str]]) -> str:
        blob = json.dumps(
            {"backend": backend, "model": model, "params": params, "messages": messages},
            sort_keys=True,
            ensure_ascii=False,
        )
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def get(self, key: str) -> tuple[str, TokenUsage, str | None] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT text, prompt_tokens, completion_tokens, finish_reason FROM responses WHERE key = ?",
                (key,),
            ).fetchone()
        if row is None:
            return None
        return str(row[0]), TokenUsage(int(row[1]), int(row[2])), row[3]

    def put(
        self, key: str, backend: str, model: str, text: str, usage: TokenUsage, finish_reason: str | None
    ) -> None:
        row = (key, backend, model, text, usage.prompt_tokens, usage.completion_tokens, finish_reason)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (*row, time.time())
            )

    def __len__(self) -> int:
        with self._lock:
            (n,) = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()
        return int(n)

    def close(self) -> None:
        with self._lock:
            self._db.close()
