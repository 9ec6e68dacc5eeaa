"""One daemon per database.

Two daemons on one log fight over its projections and its jobs: each re-queues the other's
running jobs at start and runs them twice, and their projection runners crash on each other's
checkpoints. So the daemon holds a lock for its whole life, taken before it migrates or reads
anything, and released by the operating system or the server when its process dies, however it
dies (SIGKILL included):
- SQLite: an exclusive `flock` on `<database>.daemon.lock`, which also names the holder;
- PostgreSQL: a session advisory lock, per schema, on a connection of its own whose
  application_name names the holder.
A second daemon refuses to start, naming the holder's PID and host; on PostgreSQL, one started
as a standby (`--standby`) waits instead, and takes the database over once the holder's session
ends (its process died or stopped): the log holds everything it needs to resume.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import platform
import time
import zlib
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar

import sqlalchemy as sa
import structlog
from sqlalchemy.engine import Connection, Engine

from events.errors import AccelOptError
from store.engine import make_engine, normalize_url, sqlite_path
from store.errors import StoreError

__all__ = ["AnotherDaemon", "DaemonLock", "StandbyNeedsPostgres"]

log = structlog.get_logger("accelopt.daemon")

STANDBY_POLL_S = 1.0
"""How often a standby tries the lock: a takeover starts at most this long after the holder's
session ends (PostgreSQL ends it as soon as the holder's connection drops)."""

NAMESPACE = 0x0ACC
"""The first key of accelopt's PostgreSQL advisory locks (the second is the schema's)."""


class AnotherDaemon(AccelOptError):
    """Another daemon holds this database."""

    exit_code: ClassVar[int] = 8


class StandbyNeedsPostgres(AccelOptError):
    """--standby on a database only one host can reach."""

    exit_code: ClassVar[int] = 2


def _holder() -> dict[str, object]:
    return {
        "pid": os.getpid(),
        "host": platform.node(),
        "since": datetime.now(UTC).isoformat(timespec="seconds"),
    }


class DaemonLock:
    """Held from `acquire` until `release` (or until the process dies)."""

    def __init__(
        self,
        description: str,
        release: contextlib.ExitStack,
        check: Callable[[], None] = lambda: None,
    ) -> None:
        self.description = description
        self._release = release
        self._check = check

    def check(self) -> None:
        """Still held? A PostgreSQL restart ends the session and its lock: take it again, or
        raise AnotherDaemon if another daemon took it meanwhile (StoreError while the server
        is away)."""
        self._check()

    @classmethod
    def acquire(cls, url: str) -> DaemonLock:
        parsed = normalize_url(url)
        path = sqlite_path(parsed)
        if path is not None:
            return cls._file(path)
        return cls._advisory(make_engine(parsed, pool_size=1))

    @classmethod
    def acquire_as_standby(cls, url: str, poll_s: float = STANDBY_POLL_S) -> DaemonLock:
        """Wait for the daemon holding a PostgreSQL database to go, then take its lock. On
        SQLite there is no standby: one host, one daemon."""
        parsed = normalize_url(url)
        if sqlite_path(parsed) is not None:
            raise StandbyNeedsPostgres(
                f"{parsed.render_as_string()}: --standby needs PostgreSQL (a SQLite database has "
                "one daemon, on the host that holds the file)"
            )
        engine = make_engine(parsed, pool_size=1)
        waiting_since: float | None = None
        while True:
            try:
                lock = cls._advisory(engine)
            except AnotherDaemon as e:
                if waiting_since is None:
                    waiting_since = time.monotonic()
                    log.info("standby", holder=str(e))
                time.sleep(poll_s)
                continue
            if waiting_since is not None:
                log.info("taking over", waited_s=round(time.monotonic() - waiting_since, 1))
            return lock

    def release(self) -> None:
        self._release.close()

    @classmethod
    def holder(cls, url: str) -> str | None:
        """Who holds the database's daemon lock now (AnotherDaemon's message), or None when no
        daemon does: the lock is taken and given back at once, so a daemon starting at that
        very moment may be refused once (systemd's restart tries again)."""
        try:
            cls.acquire(url).release()
        except AnotherDaemon as e:
            return e.message
        return None

    # --- SQLite ----------------------------------------------------------------------------

    @classmethod
    def _file(cls, database: Path) -> DaemonLock:
        lock = database.with_name(database.name + ".daemon.lock")
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 4096, 0).decode("utf-8", "replace")
            os.close(fd)
            raise AnotherDaemon(
                f"another daemon holds {database} ({_described(text)}; lock file {lock})"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(_holder()).encode(), 0)
        os.fsync(fd)
        stack = contextlib.ExitStack()
        stack.callback(os.close, fd)
        stack.callback(fcntl.flock, fd, fcntl.LOCK_UN)
        return cls(f"{lock} (flock)", stack)

    # --- PostgreSQL ------------------------------------------------------------------------

    @classmethod
    def _advisory(cls, engine: Engine) -> DaemonLock:
        stack = contextlib.ExitStack()
        stack.callback(engine.dispose)
        try:
            held: list[Connection | None] = [_advisory_session(engine, stack)]
        except BaseException:
            stack.close()
            raise

        def check() -> None:
            session = held[0]
            if session is not None:
                try:
                    session.exec_driver_sql("SELECT 1").scalar_one()
                    session.commit()
                    return
                except sa.exc.DBAPIError:
                    with contextlib.suppress(sa.exc.DBAPIError):
                        session.invalidate()
                    held[0] = None  # the session ended, and the lock with it
            # Only a new session takes the lock again: the old connection, reconnected, would
            # not hold it. While the server is away this raises, and the next check tries again.
            held[0] = _advisory_session(engine, stack)

        return cls(f"a PostgreSQL advisory lock ({NAMESPACE}, schema key)", stack, check)


def _advisory_session(engine: Engine, stack: contextlib.ExitStack) -> Connection:
    """A session holding the schema's daemon lock, named after this daemon (closed with
    `stack`). AnotherDaemon if another session holds it; StoreError if the server fails."""
    holder = _holder()
    url = engine.url.render_as_string()
    try:
        connection: Connection = stack.enter_context(engine.connect())
        connection.exec_driver_sql(
            "SELECT set_config('application_name', %(name)s, false)",
            {"name": f"accelopt daemon pid {holder['pid']} on {holder['host']}"},
        )
        schema = connection.exec_driver_sql("SELECT current_schema()").scalar_one()
        key = {"namespace": NAMESPACE, "key": zlib.crc32(str(schema).encode()) & 0x7FFFFFFF}
        taken = connection.execute(
            sa.text("SELECT pg_try_advisory_lock(:namespace, :key)"), key
        ).scalar_one()
        connection.commit()
        if taken:
            return connection
        name = connection.execute(
            sa.text(
                "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a "
                "USING (pid) WHERE l.locktype = 'advisory' AND l.granted "
                "AND l.classid = :namespace AND l.objid = :key AND l.objsubid = 2"
            ),
            key,
        ).scalar()
        connection.commit()
    except sa.exc.DBAPIError as e:
        raise StoreError(f"{url}: taking the daemon lock: {e.orig}") from e
    raise AnotherDaemon(
        f"another daemon holds schema {schema} of {url} "
        f"({name or 'a session that no longer reports its name'})"
    )


def _described(text: str) -> str:
    try:
        holder = json.loads(text)
        return f"pid {holder['pid']} on {holder['host']}, since {holder['since']}"
    except (ValueError, KeyError, TypeError):
        return "its holder did not say who it is"
