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


def old_store(url: str, revision: str, outputs: dict[str, object], *sql: str) -> None:
    """A store at schema `revision` only (as an older ragmeter left it), holding the completed run 'old' with
    one query 'q1' whose outputs row is `outputs`, then each statement of `sql`."""
    import json

    from alembic import command
    from sqlalchemy import text

    from ragmeter.models import EvalConfig
    from ragmeter.store.engine import alembic_config, create_engine, resolve_url

    engine = create_engine(resolve_url(url))
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), revision)
        conn.execute(
            text(
                "INSERT INTO runs (id, name, status, config, dataset_name, n_dataset_queries, versions, seed, "
                "started_at, host, pid, pid_token, aggregate, summary, n_queries, n_failed) VALUES ('old', '', "
                "'completed', :cfg, 'demo', 1, '{}', 42, '2026-01-01 00:00:00', 'h', 1, '', '{}', '{}', 1, 0)"
            ),
            {"cfg": EvalConfig().model_dump_json()},
        )
        conn.execute(
            text(
                "INSERT INTO query_results (run_id, query_id, position, status, result, completed_at) VALUES "
                "('old', 'q1', 0, 'ok', :res, '2026-01-01 00:00:00')"
            ),
            {"res": json.dumps(outputs)},
        )
        for statement in sql:
            conn.execute(text(statement))
    engine.dispose()
