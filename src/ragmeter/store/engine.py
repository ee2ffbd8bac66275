"""Opening a store: URL resolution, engine options (SQLite WAL), migrations on open, stale-run sweep."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragmeter.errors import InputError, MissingExtraError

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection, Engine

DEFAULT_PATH = Path(".ragmeter") / "ragmeter.db"
MIGRATIONS = Path(__file__).with_name("migrations")


def resolve_url(url: str | None = None) -> str:
    """--db URL, else $RAGMETER_DB, else the SQLite file .ragmeter/ragmeter.db in the working directory.

    A plain path (no "://") means a SQLite file; "postgresql://" gets the psycopg 3 driver.
    """
    url = url or os.environ.get("RAGMETER_DB") or str(DEFAULT_PATH)
    if "://" not in url:
        path = Path(url).expanduser()
        path.parent.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{path}"
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    if url.startswith("sqlite:///"):
        target = url[len("sqlite:///") :]
        if target and target != ":memory:":
            Path(target).expanduser().parent.mkdir(parents=True, exist_ok=True)
    return url


def public_url(url: str) -> str:
    """The URL without its password, for printing."""
    try:
        from sqlalchemy.engine import make_url
    except ImportError:  # pragma: no cover
        return url
    return make_url(url).render_as_string(hide_password=True)


def create_engine(url: str) -> Engine:
    try:
        import sqlalchemy
        from sqlalchemy import event
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise MissingExtraError("store", "the run store") from exc
    try:
        options: dict[str, Any] = {"future": True}
        if url.startswith("sqlite"):
            options["connect_args"] = {"timeout": 30, "check_same_thread": False}
        else:
            options["pool_pre_ping"] = True
        engine = sqlalchemy.create_engine(url, **options)
    except (sqlalchemy.exc.ArgumentError, sqlalchemy.exc.NoSuchModuleError) as exc:
        raise InputError(f"not a database URL we can open: {exc}", source="--db") from exc
    if engine.dialect.name == "sqlite":

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.close()

    return engine


def alembic_config(connection: Connection | None = None) -> Any:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


@contextlib.contextmanager
def _sqlite_file_lock(engine: Engine) -> Iterator[None]:
    """Two processes opening a fresh SQLite file at once must not both create the tables: they serialise on
    an exclusive lock of `<file>.lock` (SQLite's own lock is taken too late, after alembic looked)."""
    database = engine.url.database if engine.dialect.name == "sqlite" else None
    if not database or database == ":memory:" or database.startswith("file:"):
        yield
        return
    import fcntl

    if not _may_be_sqlite(database):  # the user's own file: opening it reports the problem, nothing is left
        yield
        return
    lock = f"{database}.lock"
    made = not os.path.exists(lock)
    try:
        fh = open(lock, "a+b")  # noqa: SIM115 - closed below
    except OSError:  # a read-only folder: opening the store itself reports the problem
        yield
        return
    ok = False
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
            ok = True
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
    if made and not ok:  # a refused open leaves no trace beside the user's file
        with contextlib.suppress(OSError):
            os.unlink(lock)


def _may_be_sqlite(path: str) -> bool:
    """Missing, empty, or starting with SQLite's header: a file that ragmeter may make or open as a store."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
    except FileNotFoundError:
        return True
    except OSError:
        return True  # unreadable: opening it reports why
    return not head or head == b"SQLite format 3\x00"


def upgrade(engine: Engine) -> None:
    """Bring the schema to the newest revision (idempotent; concurrent openers serialise on the DB)."""
    from alembic import command

    with _sqlite_file_lock(engine), engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            # Two processes opening a fresh database at once must not both create the tables.
            from sqlalchemy import text

            connection.execute(text("SELECT pg_advisory_xact_lock(740516)"))
        command.upgrade(alembic_config(connection), "head")
