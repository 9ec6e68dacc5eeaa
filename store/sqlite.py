"""The SQLite file under an engine: which file it opened, whether its path still names that
file, saving what the engine still reads to a path (SQLite's backup API), and the WAL
checkpoint. Every function is a no-op or None for PostgreSQL, so a caller need not ask which
database it holds.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

import structlog
from sqlalchemy.engine import Engine

from store.engine import sqlite_path

__all__ = ["FileIdentity", "checkpoint_wal", "file_identity", "replaced", "rescue"]

log = structlog.get_logger("accelopt.store")

FileIdentity = tuple[Path, tuple[int, int]]
"""The file's path, and the (device, inode) it had when the engine opened it."""


def file_identity(engine: Engine) -> FileIdentity | None:
    """The SQLite file behind `engine` as it is now; None for PostgreSQL."""
    path = sqlite_path(engine.url)
    if path is None:
        return None
    stat = path.stat()
    return path, (stat.st_dev, stat.st_ino)


def replaced(identity: FileIdentity) -> str | None:
    """None while the path still names the file it named; else what is there now (another
    device and inode, or why it cannot be read)."""
    path, opened = identity
    try:
        stat = path.stat()
        found = f"now device {stat.st_dev} inode {stat.st_ino}"
        if (stat.st_dev, stat.st_ino) == opened:
            return None
    except OSError as e:
        found = str(e)
    return found


def rescue(engine: Engine, path: Path) -> Path | None:
    """Copy the log the engine still has open into `path` (or beside it if something new is
    there), with SQLite's backup API; where it went, or None if it could not be saved."""
    target = path if not path.exists() else path.with_name(f"{path.name}.rescued-{os.getpid()}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with engine.connect() as connection:
            source = connection.connection.driver_connection
            assert isinstance(source, sqlite3.Connection)
            with contextlib.closing(sqlite3.connect(target)) as copy:
                source.backup(copy)
    except (OSError, sqlite3.Error, AssertionError) as e:
        log.error("the removed database could not be saved", error=str(e))
        return None
    return target


def checkpoint_wal(engine: Engine) -> None:
    """SQLite: copy the WAL back into the database file and truncate it; nothing elsewhere. A
    driver's error is not translated into a StoreError: the clock that runs this logs it, and
    the database's health does not count it."""
    if engine.dialect.name == "sqlite":
        with engine.connect() as connection:
            connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
