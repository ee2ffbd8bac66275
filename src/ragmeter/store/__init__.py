"""The run store: SQLite by default (.ragmeter/ragmeter.db, WAL), PostgreSQL by URL.

SQLAlchemy is imported only when a store is opened, so `import ragmeter.store` stays cheap.
"""

from __future__ import annotations

from ragmeter.store.api import ChunkRecord, DuplicateQueryError, Store, open_store
from ragmeter.store.engine import DEFAULT_PATH, public_url, resolve_url

__all__ = [
    "DEFAULT_PATH",
    "ChunkRecord",
    "DuplicateQueryError",
    "Store",
    "open_store",
    "public_url",
    "resolve_url",
]
