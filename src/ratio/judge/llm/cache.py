"""Persistent SQLite cache of judgments, so a rerun never pays twice.

Rows are keyed by the exact request and committed as they arrive, so an interrupted run
loses at most the requests in flight. Submitted OpenAI batches are recorded too: a rerun
polls the batch it already paid for instead of submitting the same requests again.

Tested by tests/judge/llm/test_runner.py.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judgments (
    key TEXT PRIMARY KEY, backend TEXT NOT NULL, model TEXT NOT NULL,
    prompt_id TEXT NOT NULL, prompt_version TEXT NOT NULL, input_hash TEXT NOT NULL,
    valid INTEGER NOT NULL, accepted INTEGER, parsed TEXT, raw TEXT NOT NULL,
    error TEXT NOT NULL DEFAULT '', attempts INTEGER NOT NULL,
    input_tokens INTEGER NOT NULL DEFAULT 0, output_tokens INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS batches (
    batch_id TEXT PRIMARY KEY, backend TEXT NOT NULL, model TEXT NOT NULL,
    keys TEXT NOT NULL, status TEXT NOT NULL, created REAL NOT NULL
);
"""


def request_key(
    backend: str, model: str, prompt_id: str, version: str, digest: str, user: str
) -> str:
    """The cache key of one request: identical requests share it, any change makes a new one."""
    input_hash = hashlib.sha256(user.encode()).hexdigest()[:24]
    blob = json.dumps([backend, model, prompt_id, version, digest, input_hash])
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


@dataclass
class CachedJudgment:
    key: str
    valid: bool
    accepted: bool | None
    parsed: dict | None
    raw: str
    error: str
    attempts: int
    input_tokens: int
    output_tokens: int


class JudgmentCache:
    """A small thread-safe wrapper over one SQLite file (WAL mode, commit per write)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=60)
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)
            self._db.commit()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def get_many(self, keys: list[str]) -> dict[str, CachedJudgment]:
        out: dict[str, CachedJudgment] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                chunk = keys[i : i + 500]
                rows = self._db.execute(
                    "SELECT key, valid, accepted, parsed, raw, error, attempts, input_tokens, "
                    f"output_tokens FROM judgments WHERE key IN ({','.join('?' * len(chunk))})",
                    chunk,
                ).fetchall()
                for k, v, a, p, *rest in rows:
                    accepted = None if a is None else bool(a)
                    parsed = json.loads(p) if p else None
                    out[k] = CachedJudgment(k, bool(v), accepted, parsed, *rest)
        return out

    def put(self, key: str, request: tuple[str, ...], j: Any) -> None:
        """Store judgment ``j`` (CachedJudgment's fields) of ``request``, the columns before them."""
        accepted = None if j.accepted is None else int(j.accepted)
        parsed = json.dumps(j.parsed) if j.parsed is not None else None
        row = (int(j.valid), accepted, parsed, j.raw, j.error, j.attempts)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO judgments VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (key, *request, *row, j.input_tokens, j.output_tokens, time.time()),
            )
            self._db.commit()

    def count(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0]

    # -- batches --------------------------------------------------------------

    def add_batch(self, batch_id: str, backend: str, model: str, keys: list[str]) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO batches VALUES (?,?,?,?,?,?)",
                (batch_id, backend, model, json.dumps(keys), "submitted", time.time()),
            )
            self._db.commit()

    def open_batches(self, backend: str, model: str) -> list[tuple[str, list[str]]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT batch_id, keys FROM batches WHERE backend=? AND model=? AND status='submitted'",
                (backend, model),
            ).fetchall()
        return [(b, json.loads(k)) for b, k in rows]

    def close_batch(self, batch_id: str, status: str) -> None:
        with self._lock:
            self._db.execute("UPDATE batches SET status=? WHERE batch_id=?", (status, batch_id))
            self._db.commit()
