"""Engines for the event database, tuned per dialect.

SQLite: WAL, synchronous=FULL (a lost ProfileRecorded costs device minutes), a long busy
timeout, and `BEGIN IMMEDIATE` for every write transaction so that a writer never fails on
lock upgrade. The driver's own implicit BEGIN is switched off (it breaks transactional DDL
and savepoints) and we emit BEGIN ourselves from SQLAlchemy's `begin` event.
PostgreSQL: psycopg 3.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

from events.codec import storage_json
from store.errors import BadDatabaseUrl, StoreBusy, StoreError

__all__ = [
    "WRITE_OPTION",
    "make_engine",
    "normalize_url",
    "read_connection",
    "sqlite_path",
    "translated",
    "write_transaction",
]

WRITE_OPTION = "accelopt_write"
"""Execution option marking a connection whose next transaction writes (SQLite: IMMEDIATE)."""

SQLITE_BUSY_TIMEOUT_MS = 30_000


def normalize_url(url: str | sa.URL) -> sa.URL:
    """Parse a database URL; `postgresql://` means psycopg 3, the driver we ship."""
    try:
        parsed = sa.make_url(url)
    except sa.exc.ArgumentError:
        raise BadDatabaseUrl(
            f"{url!r} is not a database URL: use sqlite:///PATH or postgresql://USER@HOST/DB"
        ) from None
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.get_backend_name() not in ("sqlite", "postgresql"):
        raise BadDatabaseUrl(
            f"unsupported database {parsed.get_backend_name()!r}: use sqlite:///PATH "
            "or postgresql://USER@HOST/DB"
        )
    if parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:"):
        raise StoreError("the event log needs a SQLite file, not an in-memory database")
    return parsed


def sqlite_path(url: sa.URL) -> Path | None:
    """The file behind a SQLite URL, or None for PostgreSQL."""
    if url.get_backend_name() != "sqlite" or url.database is None:
        return None
    return Path(url.database)


def _configure_sqlite(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves, see module doc
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = FULL")
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        write = connection.get_execution_options().get(WRITE_OPTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def make_engine(url: str | sa.URL, *, pool_size: int = 5) -> Engine:
    """An engine for the event database at `url` (not connected yet)."""
    parsed = normalize_url(url)
    common: dict[str, Any] = {
        "json_serializer": storage_json,
        "json_deserializer": orjson.loads,
        "pool_size": pool_size,
        "max_overflow": 16,
    }
    if parsed.get_backend_name() == "sqlite":
        engine = sa.create_engine(
            parsed,
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False},
            **common,
        )
        _configure_sqlite(engine)
        return engine
    return sa.create_engine(parsed, pool_pre_ping=True, **common)


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A connection inside a write transaction, committed on normal exit."""
    with engine.connect() as connection:
        connection.execution_options(**{WRITE_OPTION: True})
        with connection.begin():
            yield connection


@contextmanager
def read_connection(engine: Engine) -> Iterator[Connection]:
    """A connection inside a read transaction: one consistent snapshot of the log."""
    with engine.connect() as connection, connection.begin():
        yield connection


@contextmanager
def translated(database: str, action: str) -> Iterator[None]:
    """Where SQLAlchemy and driver errors become accelopt errors, for every adapter on an engine:
    callers (and the CLI's exit codes) know StoreBusy and StoreError, never a driver's types.
    The message names the database and the action, so that a user knows what to look at."""
    try:
        yield
    except sa.exc.OperationalError as e:
        text = str(e.orig).strip()
        if "database is locked" in text or "lock timeout" in text:
            raise StoreBusy(
                f"{database}: {action}: another writer held the log too long ({text})"
            ) from e
        raise StoreError(f"{database}: {action} failed: {text}") from e
    except sa.exc.IntegrityError as e:
        # Writes are serialized, so this means a writer that bypassed the lock.
        raise StoreError(f"{database}: {action} violated a constraint: {e.orig}") from e
    except sa.exc.DBAPIError as e:
        raise StoreError(f"{database}: {action} failed: {e.orig}") from e
    except sa.exc.SQLAlchemyError as e:
        raise StoreError(f"{database}: {action} failed: {e}") from e
