"""Schema migrations and recognising databases that are not (yet) accelopt's."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config

from store.engine import WRITE_OPTION, make_engine
from store.errors import DatabaseNotFound, NotAnAccelOptDatabase, SchemaMismatch
from store.jobs.base import queue_name
from store.jobs.sql import SqlJobQueue
from store.migrate import _config, check_current, head_revision, inspect_revision, upgrade
from store.sql import SqlEventStore


def test_upgrade_creates_a_sqlite_file_and_is_idempotent(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'deep' / 'dir' / 'a.db'}")
    try:
        assert upgrade(engine) == (None, head_revision())
        assert upgrade(engine) == (head_revision(), head_revision())
        check_current(engine)
        with engine.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
    finally:
        engine.dispose()


def _check(engine: sa.Engine) -> None:
    config: Config = _config()
    with engine.connect() as connection:
        connection.execution_options(**{WRITE_OPTION: True})
        config.attributes["connection"] = connection
        command.check(config)  # raises if the tables differ from store.schema


def test_migrated_schema_matches_the_table_definitions(db_url: Callable[[], str]) -> None:
    engine = make_engine(db_url())
    try:
        _check(engine)
    finally:
        engine.dispose()


def _migrate(engine: sa.Engine, action: Callable[[Config, str], None], revision: str) -> None:
    config: Config = _config()
    with engine.connect() as connection:
        connection.execution_options(**{WRITE_OPTION: True})
        config.attributes["connection"] = connection
        action(config, revision)
        connection.commit()


def test_jobs_from_before_queues_get_the_queue_their_payload_routed_them_to(
    db_url: Callable[[], str],
) -> None:
    """Revision 0004: the queue a job was submitted on is kept in its row; the rows already
    there get the one the fleet routed them to, by their payload's backend and target."""
    engine = make_engine(db_url())
    try:
        _migrate(engine, command.downgrade, "0003")
        now = datetime.now(UTC)
        with engine.begin() as connection:
            for job_id, payload in (
                ("routed", {"backend": "nkisim", "target": "trn2", "source": "k"}),
                ("unrouted", {"ms": 1.0}),
            ):
                connection.execute(
                    sa.text(
                        "INSERT INTO jobs (job_id, task, kind, payload, priority, state, "
                        "attempts, created_at, updated_at) VALUES (:job_id, 'silu', 'profile', "
                        ":payload, 0, 'pending', 0, :now, :now)"
                    ),
                    {"job_id": job_id, "payload": json.dumps(payload), "now": now},
                )
        upgrade(engine)
        queue = SqlJobQueue(engine)
        routed, unrouted = queue.get("routed"), queue.get("unrouted")
        assert routed is not None
        assert unrouted is not None
        assert (routed.queue, unrouted.queue) == (queue_name("nkisim", "trn2"), None)
        assert routed.payload == {"backend": "nkisim", "target": "trn2", "source": "k"}
        _check(engine)
    finally:
        engine.dispose()


def test_missing_sqlite_file_is_not_created_by_readers(tmp_path: Path) -> None:
    path = tmp_path / "absent.db"
    with pytest.raises(DatabaseNotFound, match="accelopt db upgrade"):
        SqlEventStore.open(f"sqlite:///{path}")
    assert not path.exists()


def test_a_file_that_is_not_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n" * 100)
    with pytest.raises(NotAnAccelOptDatabase, match=r"notes\.db is not an SQLite database"):
        SqlEventStore.open(f"sqlite:///{path}")
    engine = make_engine(f"sqlite:///{path}")
    with pytest.raises(NotAnAccelOptDatabase):
        upgrade(engine)
    engine.dispose()
    assert path.read_text().startswith("these are my notes")


def test_a_database_of_another_application_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "shop.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY)")
    engine = make_engine(f"sqlite:///{path}")
    try:
        with pytest.raises(NotAnAccelOptDatabase, match="other tables: customers"):
            upgrade(engine)
    finally:
        engine.dispose()
    with sqlite3.connect(path) as connection:
        tables = {r[0] for r in connection.execute("SELECT name FROM sqlite_master")}
    assert tables == {"customers"}


def test_a_revision_this_code_does_not_know(fresh_sqlite_url: Callable[[], str]) -> None:
    url = fresh_sqlite_url()
    engine = make_engine(url)
    try:
        with engine.begin() as connection:
            connection.exec_driver_sql("UPDATE alembic_version SET version_num = 'ffff9999'")
        with pytest.raises(SchemaMismatch, match="newer accelopt"):
            inspect_revision(engine)
        with pytest.raises(SchemaMismatch):
            SqlEventStore(engine)
    finally:
        engine.dispose()


def test_empty_database_asks_for_upgrade(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()
    engine = make_engine(f"sqlite:///{path}")
    try:
        with pytest.raises(DatabaseNotFound, match="no accelopt tables yet"):
            check_current(engine)
    finally:
        engine.dispose()
