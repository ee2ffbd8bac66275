"""Store tests run against SQLite and PostgreSQL: see store_db.py."""

from __future__ import annotations

from store_db import db_url

__all__ = ["db_url"]
