"""The daemon and its database, as a hostile or unlucky operator treats them, with real
processes: a second daemon on the same log, a write lock held for 30 s, a read-only
filesystem, a full disk, the database's folder removed, a PostgreSQL restart. After each fault
the log is whole (dense positions, stream versions without gaps or repeats) and the daemon has
recovered or stopped with a non-zero exit and a one-line reason; no job is left running once it
runs again.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from events.catalog import KernelSourceChanged, ProfileRecorded, SearchFinished
from nkibench.suites import NKI_LEGACY_SUITE
from store.engine import make_engine
from store.jobs.sql import SqlJobQueue
from store.sql import SqlEventStore
from tests.support.daemon_process import DaemonProcess, wait_until
from tests.support.postgres import PostgresServer, restart_postgresql

SMALL = ("--shapes", "small")
LOCAL = ("--devices", "1")
"""On PostgreSQL a daemon runs jobs itself only on the devices it is given."""
PATIENT = {"ACCELOPT_DAEMON_STORE_PATIENCE_S": "8"}


def assert_whole(url: str) -> None:
    """Dense positions from 1, and every stream's versions 1..n."""
    store = SqlEventStore.open(url)
    try:
        events = list(store.read_all())
    finally:
        store.close()
    assert [e.position for e in events] == list(range(1, len(events) + 1))
    versions: dict[str, list[int]] = defaultdict(list)
    for e in events:
        versions[e.stream_id].append(e.stream_version)
    for stream, seen in versions.items():
        assert seen == list(range(1, len(seen) + 1)), f"stream {stream}: {seen}"


def running_jobs(url: str) -> int:
    engine = make_engine(url)
    try:
        return SqlJobQueue(engine).counts().get("running", 0)
    finally:
        engine.dispose()


def exits(daemon: DaemonProcess, timeout: float) -> int:
    assert daemon.process is not None
    return daemon.process.wait(timeout=timeout)


# --- one daemon per database -------------------------------------------------------------


def test_a_second_daemon_on_the_same_sqlite_file_refuses_naming_the_first(
    tmp_path: Path,
) -> None:
    first = DaemonProcess(tmp_path / "a", *SMALL)
    first.start()
    try:
        second = DaemonProcess(tmp_path / "b", *SMALL, env={"ACCELOPT_DB": first.db})
        second.start(ready=False)
        assert exits(second, 60) == 8
        said = second.log_text()
        assert "another daemon holds" in said
        assert f"pid {first.pid} " in said
        assert first.alive()
    finally:
        assert first.stop() == 0


def test_two_daemons_started_at_once_on_a_new_database_give_one_daemon(tmp_path: Path) -> None:
    """(Once both migrated the empty file at the same time: `table jobs already exists`.)"""
    db = f"sqlite:///{tmp_path / 'shared' / 'accelopt.db'}"
    daemons = [DaemonProcess(tmp_path / n, *SMALL, env={"ACCELOPT_DB": db}) for n in "ab"]
    for daemon in daemons:
        daemon.start(ready=False)
    try:
        wait_until(
            lambda: (
                sum('"event": "ready"' in d.log_text() for d in daemons) == 1
                and sum(not d.alive() for d in daemons) == 1
            ),
            60,
            "one daemon ready, one gone",
        )
        loser = next(d for d in daemons if not d.alive())
        assert exits(loser, 5) == 8
        assert "already exists" not in loser.log_text()
    finally:
        for daemon in daemons:
            if daemon.alive():
                assert daemon.stop() == 0


@pytest.mark.postgres
def test_a_second_daemon_on_the_same_postgresql_schema_refuses(
    tmp_path: Path, fresh_pg_url: Callable[[], str]
) -> None:
    url = fresh_pg_url()
    first = DaemonProcess(tmp_path / "a", *SMALL, *LOCAL, env={"ACCELOPT_DB": url})
    first.start()
    try:
        second = DaemonProcess(tmp_path / "b", *SMALL, *LOCAL, env={"ACCELOPT_DB": url})
        second.start(ready=False)
        assert exits(second, 60) == 8
        assert f"accelopt daemon pid {first.pid} on" in second.log_text()
        assert first.alive()
    finally:
        assert first.stop() == 0


# --- SQLite faults ---------------------------------------------------------------------------


def test_a_write_lock_held_for_30_seconds_is_waited_out(tmp_path: Path) -> None:
    daemon = DaemonProcess(tmp_path, *SMALL)
    daemon.start()
    database = daemon.home / "accelopt.db"
    holder = sqlite3.connect(database, isolation_level=None, timeout=60)
    try:
        holder.execute("BEGIN IMMEDIATE")
        daemon.drop(NKI_LEGACY_SUITE / "silu", "silu")  # its revision waits for the lock
        time.sleep(30)
        holder.execute("ROLLBACK")
        wait_until(lambda: daemon.events(SearchFinished, task="silu"), 120, "the search to end")
        assert daemon.alive()
    finally:
        holder.close()
        assert daemon.stop() == 0
    assert_whole(daemon.db)
    assert running_jobs(daemon.db) == 0


@pytest.fixture
def small_filesystem(tmp_path: Path) -> Iterator[Path]:
    """A 32 MiB ext4 image of the test's own, loop-mounted: root writes anywhere else, so only
    a filesystem of its own can be filled, or hold files made immutable (chattr +i, which
    refuses every write to them, root's included)."""
    image, mount = tmp_path / "fs.img", tmp_path / "fs"
    mount.mkdir()
    with image.open("wb") as handle:
        handle.truncate(32 * 1024 * 1024)
    for command in (
        ["mkfs.ext4", "-q", str(image)],
        ["mount", "-o", "loop", str(image), str(mount)],
    ):
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            pytest.skip(f"cannot make a filesystem here ({command[0]}): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        database = mount / "state" / "accelopt.db"
        subprocess.run(["chattr", "-i", str(database), f"{database}-wal"], check=False)
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _daemon_on(tmp_path: Path, mount: Path) -> DaemonProcess:
    return DaemonProcess(
        tmp_path / "d",
        *SMALL,
        env={"ACCELOPT_DB": f"sqlite:///{mount / 'state' / 'accelopt.db'}", **PATIENT},
    )


def test_a_read_only_database_stops_the_daemon_and_nothing_is_lost(
    tmp_path: Path, small_filesystem: Path
) -> None:
    daemon = _daemon_on(tmp_path, small_filesystem)
    daemon.start()
    daemon.drop(NKI_LEGACY_SUITE / "silu", "silu")
    wait_until(lambda: daemon.events(SearchFinished, task="silu"), 120, "the first search")
    database = small_filesystem / "state" / "accelopt.db"
    files = [str(database), f"{database}-wal"]
    subprocess.run(["chattr", "+i", *files], check=True)
    daemon.drop(NKI_LEGACY_SUITE / "rmsnorm_matmul", "rmsnorm_matmul")  # a revision it cannot write
    assert exits(daemon, 90) == 1
    said = daemon.log_text()
    assert "database trouble; retrying" in said
    assert "the database has failed for 8 s" in said
    subprocess.run(["chattr", "-i", *files], check=True)
    daemon.start()  # the same folders: the missed revision is recorded now
    try:
        wait_until(
            lambda: daemon.events(SearchFinished, task="rmsnorm_matmul"), 120, "the next search"
        )
    finally:
        assert daemon.stop() == 0
    assert_whole(daemon.db)
    assert running_jobs(daemon.db) == 0


def test_a_full_disk_stops_the_daemon_and_nothing_is_lost(
    tmp_path: Path, small_filesystem: Path
) -> None:
    daemon = _daemon_on(tmp_path, small_filesystem)
    daemon.start()
    database = small_filesystem / "state" / "accelopt.db"
    with sqlite3.connect(database) as connection:  # an empty WAL: the next write must grow it
        assert connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0
    filler = small_filesystem / "filler"
    subprocess.run(
        ["dd", "if=/dev/zero", f"of={filler}", "bs=4k"], capture_output=True, check=False
    )  # until the disk is full
    assert shutil.disk_usage(small_filesystem).free < 1024 * 1024
    daemon.drop(NKI_LEGACY_SUITE / "silu", "silu")
    assert exits(daemon, 90) == 1
    assert "the database has failed for 8 s" in daemon.log_text()
    filler.unlink()
    daemon.start()
    try:
        wait_until(lambda: daemon.events(SearchFinished, task="silu"), 120, "the search")
    finally:
        assert daemon.stop() == 0
    assert_whole(daemon.db)
    assert running_jobs(daemon.db) == 0
    with sqlite3.connect(database) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_removing_the_database_folder_stops_the_daemon_and_saves_the_log(tmp_path: Path) -> None:
    """(Once the daemon wrote on to the removed files, exited 0, and all history was gone.)"""
    daemon = DaemonProcess(tmp_path, *SMALL)
    daemon.start()
    daemon.drop(NKI_LEGACY_SUITE / "silu", "silu")
    wait_until(lambda: daemon.events(ProfileRecorded, task="silu"), 120, "a baseline")
    recorded = len(daemon.events(KernelSourceChanged))
    shutil.rmtree(daemon.home)
    assert exits(daemon, 30) == 1
    assert "was removed or replaced while the daemon ran" in daemon.log_text()
    assert (daemon.home / "accelopt.db").is_file()  # saved back
    assert len(daemon.events(KernelSourceChanged)) == recorded
    assert daemon.events(ProfileRecorded, task="silu")
    assert_whole(daemon.db)


# --- PostgreSQL ------------------------------------------------------------------------------


@pytest.mark.postgres
def test_a_postgresql_restart_in_the_middle_of_a_run_is_waited_out(
    tmp_path: Path, fresh_pg_url: Callable[[], str], postgres_server: PostgresServer
) -> None:
    """(Once the daemon exited 1 within seconds, without DaemonStopped.) The restart waits for
    the other tests on the server to end, and they for it (a standby test's leader lost its
    connections to it once)."""
    url = fresh_pg_url()
    daemon = DaemonProcess(tmp_path, *SMALL, *LOCAL, env={"ACCELOPT_DB": url})
    daemon.start()
    try:
        daemon.drop(NKI_LEGACY_SUITE / "silu", "silu")
        wait_until(lambda: daemon.events(ProfileRecorded, task="silu"), 120, "a baseline")
        with postgres_server.alone():
            restart = threading.Thread(target=restart_postgresql)
            restart.start()
            daemon.drop(NKI_LEGACY_SUITE / "adamw", "adamw")  # recorded while it restarts
            restart.join()
        wait_until(lambda: daemon.events(SearchFinished, task="adamw"), 120, "the next search")
        assert daemon.alive()
    finally:
        assert daemon.stop() == 0
    assert_whole(url)
    assert running_jobs(url) == 0
