"""The `db_url` fixture: SQLite and PostgreSQL (RAGMETER_TEST_PG_URL; .ci/services.sh starts one)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

PG_ENV = "RAGMETER_TEST_PG_URL"


def _fresh_pg_database(base_url: str) -> tuple[str, str]:
    """Create an empty database on the test server; returns (its URL, its name)."""
    import psycopg
    from sqlalchemy.engine import make_url

    url = make_url(base_url)
    name = f"ragmeter_t_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(
        host=url.host,
        port=url.port,
        user=url.username,
        password=url.password,
        dbname=url.database,
        autocommit=True,
    ) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return url.set(database=name).render_as_string(hide_password=False), name


def _drop_pg_database(base_url: str, name: str) -> None:
    import psycopg
    from sqlalchemy.engine import make_url

    url = make_url(base_url)
    with psycopg.connect(
        host=url.host,
        port=url.port,
        user=url.username,
        password=url.password,
        dbname=url.database,
        autocommit=True,
    ) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL of an empty database of each backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
        return
    base = os.environ.get(PG_ENV)
    if not base:
        if os.environ.get("RAGMETER_CI"):
            pytest.fail(f"{PG_ENV} is unset under CI (RAGMETER_CI=1): .ci/services.sh must start PostgreSQL")
        pytest.skip(f"PostgreSQL store tests need {PG_ENV} (a server URL; .ci/services.sh starts one)")
    url, name = _fresh_pg_database(base)
    try:
        yield url
    finally:
        _drop_pg_database(base, name)
