"""The SQLite file under an engine (store.sqlite): its identity, whether its path still names
it, saving what the engine still reads after the file was removed, and the WAL checkpoint;
none of it touches a PostgreSQL engine."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy.pool import QueuePool

from events.catalog import KernelSourceChanged
from events.codec import decode
from store import sqlite
from store.engine import make_engine, sqlite_path
from store.recorder import Recorder
from store.sql import SqlEventStore
from tests.support.factories import source_changed


@pytest.fixture
def store(
    fresh_sqlite_url: Callable[[], str], open_stores: Callable[[str], SqlEventStore]
) -> SqlEventStore:
    return open_stores(fresh_sqlite_url())


def path_of(store: SqlEventStore) -> Path:
    path = sqlite_path(store.engine.url)
    assert path is not None
    return path


def record(store: SqlEventStore, count: int) -> None:
    recorder = Recorder(store, correlation_id="test")
    for i in range(count):
        recorder.record("task:silu", source_changed("silu", f"{i:064x}"), key=f"silu|{i}")


def hashes(store: SqlEventStore) -> list[str]:
    found = []
    for stored in store.read_all(types=["KernelSourceChanged"]):
        event = decode(stored).event
        assert isinstance(event, KernelSourceChanged)
        found.append(event.content_hash)
    return found


def test_the_identity_is_the_files_device_and_inode(store: SqlEventStore) -> None:
    identity = sqlite.file_identity(store.engine)
    path = path_of(store)
    assert identity == (path, (path.stat().st_dev, path.stat().st_ino))
    assert sqlite.replaced(identity) is None


def test_a_replaced_or_removed_file_is_told(store: SqlEventStore, tmp_path: Path) -> None:
    identity = sqlite.file_identity(store.engine)
    assert identity is not None
    path = path_of(store)
    other = tmp_path / "other.db"
    shutil.copyfile(path, other)
    os.replace(other, path)
    found = sqlite.replaced(identity)
    assert found == f"now device {path.stat().st_dev} inode {path.stat().st_ino}"
    path.unlink()
    found = sqlite.replaced(identity)
    assert found is not None
    assert "No such file or directory" in found


def test_a_removed_database_is_saved_back_from_the_open_engine(
    store: SqlEventStore, open_stores: Callable[[str], SqlEventStore]
) -> None:
    record(store, 5)
    written = hashes(store)
    path = path_of(store)
    for name in (path.name, f"{path.name}-wal", f"{path.name}-shm"):
        path.with_name(name).unlink(missing_ok=True)
    assert not path.exists()
    saved = sqlite.rescue(store.engine, path)
    assert saved == path
    assert hashes(open_stores(f"sqlite:///{saved}")) == written


def test_a_rescue_beside_a_new_file_leaves_the_new_file_alone(
    store: SqlEventStore, open_stores: Callable[[str], SqlEventStore]
) -> None:
    record(store, 3)
    written = hashes(store)
    path = path_of(store)
    path.unlink()
    path.write_bytes(b"someone else's")
    saved = sqlite.rescue(store.engine, path)
    assert saved == path.with_name(f"{path.name}.rescued-{os.getpid()}")
    assert path.read_bytes() == b"someone else's"
    assert hashes(open_stores(f"sqlite:///{saved}")) == written


def test_a_rescue_that_cannot_write_says_so(store: SqlEventStore, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"")
    assert sqlite.rescue(store.engine, blocker / "accelopt.db") is None  # its folder is a file


def test_the_checkpoint_empties_the_wal(store: SqlEventStore) -> None:
    record(store, 20)
    wal = path_of(store).with_name(path_of(store).name + "-wal")
    assert wal.stat().st_size > 0
    sqlite.checkpoint_wal(store.engine)
    assert wal.stat().st_size == 0
    assert len(hashes(store)) == 20


def test_a_postgresql_engine_is_left_alone() -> None:
    """Nothing connects: the server named here does not exist."""
    engine = make_engine("postgresql://nobody@127.0.0.1:9/nowhere")
    try:
        assert sqlite.file_identity(engine) is None
        sqlite.checkpoint_wal(engine)
        pool = engine.pool
        assert isinstance(pool, QueuePool)
        assert pool.checkedout() == 0
    finally:
        engine.dispose()
