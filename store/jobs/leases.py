"""A worker's device leases: one job per device, fleet-wide, also across a database restart.

A worker holds one PostgreSQL session advisory lock per device it serves, `(the schema's lease
space, the device's key)`, on a session of its own. A restart of the server (or a dropped
connection, or `pg_terminate_backend`) ends that session and frees every lease at once, and
nothing tells the worker: it went on serving devices it no longer held, a second worker took
them, and two jobs ran on one device. So:

- **Checked at the heartbeat's interval** (`check`, `FleetJobQueue.lease_check_s`: the
  heartbeat's own `stalled_s / 3` unless told): the session is asked which leases it holds. A
  session that ended is replaced by a new one, never by the dead connection again (the daemon
  lock's lesson), which takes the leases again. A device another worker took meanwhile is
  lost: this worker says so (an error in its log) and never serves it again; a worker left
  with no device stops (DevicesLost). While no session can be made (the server is away) every
  device is unsure and takes no job; the worker's serve loop then checks every
  `UNSURE_RETRY_S`, so that after a restart it takes its leases again before a newcomer is
  likely to.
- **Checked before each job starts** (`verify`): a job is claimed only in a transaction that
  finds the device's lock granted to this worker's current lease session (its pid and start
  time: a pid of the server before a restart may be reused after it). A claim that finds it
  is not runs `check` at once instead of waiting for the next heartbeat.
- **A job already running when its device's lease is lost** runs to its end on that device
  and keeps its result (it is running on the physical device; stopping it would not make the
  device free sooner), and its worker starts nothing more there. Whoever takes a device (a
  worker starting, or this one after a restart) first looks for a job that another live worker
  (its procrastinate heartbeat younger than `stalled_s`) still runs on it, by the jobs table;
  while there is one the device is occupied: held, but no job starts on it, looked at again at
  each check (a worker restarted after a crash so waits up to `stalled_s` for the device of
  the job it left: a worker whose session ended may be alive, and running it). That look and
  every claim take a transaction lock on the device, so a claim by the old holder either
  commits before the look (which then sees its job) or finds the lease gone (the new holder
  took it before the look): never two jobs on one device. A restart frees every lease at
  once; whichever worker comes first wins a device, and the other stops serving it after its
  running job ends.
"""

from __future__ import annotations

import contextlib
import os
import platform
import threading
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar, Literal

import sqlalchemy as sa
import structlog
from sqlalchemy.engine import Connection, Engine

from events.errors import AccelOptError
from store.jobs.base import JobCancelled

__all__ = ["DeviceLeases", "DeviceTaken", "DevicesLost", "lease_key", "lease_space"]

log = structlog.get_logger("accelopt.fleet")

State = Literal["held", "occupied", "unsure", "lost"]
"""held: jobs may start on it; occupied: held, but another worker's job still runs on it;
unsure: its session ended and no new one took it yet; lost: another worker holds it."""

UNSURE_RETRY_S = 0.5
"""How often the serve loop checks while a lease is unsure (the server is away, or was)."""


class DeviceTaken(AccelOptError):
    """Another worker session serves one of the devices asked for."""

    exit_code: ClassVar[int] = 8


class DevicesLost(DeviceTaken):
    """While this worker's lease session was gone, other workers took all its devices."""


def lease_key(text: str) -> int:
    """The second key of a device's lease (and of its claim lock): its name's."""
    return zlib.crc32(text.encode()) & 0x7FFFFFFF


def lease_space(connection: Connection, kind: str = "devices") -> int:
    """The first key of this schema's device leases (kind `devices`; the second is the
    device's): one database's leases, counted apart from those of other schemas on the same
    server. Kind `claims`: the transaction locks that order a claim against a new holder's
    look at the device."""
    schema = connection.exec_driver_sql("SELECT current_schema()").scalar_one()
    return lease_key(f"accelopt-{kind}:{schema}")


@dataclass(frozen=True)
class _Session:
    connection: Connection
    pid: int
    started: datetime
    """The backend's start: with the pid, this session and no later one of the same pid."""


HOLDER = (
    "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
    "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = :space AND l.objid = :key "
    "AND l.objsubid = 2 AND l.database = (SELECT oid FROM pg_database "
    "WHERE datname = current_database())"
)

OTHERS_JOBS = (
    "SELECT j.worker, j.job_id FROM jobs j "
    "JOIN procrastinate_jobs p ON p.queueing_lock = j.job_id AND p.status = 'doing' "
    "JOIN procrastinate_workers w ON w.id = p.worker_id "
    "WHERE j.state = 'running' AND j.worker = ANY(:devices) "
    "AND w.last_heartbeat > now() - make_interval(secs => :stalled_s) "
    "AND w.id IS DISTINCT FROM :carrier"
)
"""Jobs running on these devices by the jobs table, carried by another worker that is alive."""


class DeviceLeases:
    """The leases of one worker's `devices` on the database behind `engine`, from `take` until
    `release`. Thread-safe: the serve loop checks while job threads claim."""

    def __init__(self, engine: Engine, devices: Sequence[str], *, stalled_s: float) -> None:
        self.engine = engine
        self.devices = list(devices)
        self.stalled_s = stalled_s
        self._states: dict[str, State] = dict.fromkeys(self.devices, "unsure")
        self._carrier: int | None = None
        """This process's procrastinate worker: the jobs it carries are never another's (a
        job whose run ended in the outage stays `running` until its retry is recorded)."""
        self._session: _Session | None = None
        """The lease session, for the one holding `_io`."""
        self._current: _Session | None = None
        """The session claims check against: published once its leases are looked at."""
        self._spaces: tuple[int, int] | None = None
        self._away_since: float | None = None
        self._io = threading.Lock()
        """One user of the lease session at a time."""
        self._lock = threading.Lock()
        """The states; never held across a database call."""

    # --- what the serve loop and the device pool ask ----------------------------------------

    def usable(self, device: str) -> bool:
        """May a job start on `device` now? JobCancelled once no device is served any more
        (the job goes back to the queue, for other workers)."""
        with self._lock:
            if all(state == "lost" for state in self._states.values()):
                raise JobCancelled("another worker serves every device of this worker now")
            return self._states[device] == "held"

    def serving(self) -> list[str]:
        """The devices this worker still serves (every one it has not lost)."""
        with self._lock:
            return [d for d, state in self._states.items() if state != "lost"]

    def lost(self) -> list[str]:
        with self._lock:
            return [d for d, state in self._states.items() if state == "lost"]

    def settled(self) -> bool:
        """No lease waits for a new session (the next check may wait a whole interval)."""
        with self._lock:
            return "unsure" not in self._states.values()

    def carried_by(self, worker_id: int | None) -> None:
        """The procrastinate worker fetching this process's jobs (known at its first job; no
        job of this process runs before)."""
        with self._lock:
            self._carrier = worker_id

    # --- taking, checking, giving back ------------------------------------------------------

    def take(self) -> None:
        """Every device, or none: DeviceTaken if another session holds one. Database errors
        are the caller's to translate."""
        with self._io:
            session = self._open()
            try:
                for device in self.devices:
                    if not self._try(session, device):
                        raise DeviceTaken(
                            f"device {device} is served by another worker on this database "
                            f"({self._holder(session, device)}; a device runs one job at a "
                            "time, fleet-wide)"
                        )
                self._look(session, self.devices, taken_again=False)
            except BaseException:
                _discard(session.connection)
                raise
            self._session = session
            self._publish(session)

    def check(self) -> None:
        """Confirm every lease, taking again on a new session what a lost session dropped;
        never raises for the database's trouble (the leases are unsure until a check gets
        through)."""
        with self._io:
            try:
                self._check()
            except sa.exc.SQLAlchemyError as e:  # the driver's, or the pool's (no connection)
                self._drop()
                self._unsure(e)

    def verify(self, connection: Connection, device: str) -> bool:
        """In a claim's transaction on `connection`: may a job start on `device`, its lease held
        by this worker's current session by the server's own lock table (and no other worker's
        job on it, by the last look)? The claim lock taken here lasts until the claim commits,
        so no look at the device comes in between."""
        with self._lock:
            current = self._current
            if current is None or self._states[device] != "held" or self._spaces is None:
                return False
            space, claims = self._spaces
        key = lease_key(device)
        connection.execute(
            sa.text("SELECT pg_advisory_xact_lock(:claims, :key)"), {"claims": claims, "key": key}
        )
        held = connection.execute(
            sa.text(
                "SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity a "
                "ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted "
                "AND l.classid = :space AND l.objid = :key AND l.objsubid = 2 "
                "AND l.pid = :pid AND a.backend_start = :started)"
            ),
            {"space": space, "key": key, "pid": current.pid, "started": current.started},
        ).scalar_one()
        return bool(held)

    def release(self) -> None:
        """Give every lease back (closing the session; it is never pooled again)."""
        with self._io:
            session = self._session
            self._session = None
            with self._lock:
                self._current = None
            if session is not None:
                with contextlib.suppress(sa.exc.DBAPIError):
                    session.connection.exec_driver_sql("SELECT pg_advisory_unlock_all()")
                    session.connection.commit()
                _discard(session.connection)

    # --- the parts --------------------------------------------------------------------------

    def _check(self) -> None:
        session = self._session
        held: set[int] = set()
        if session is not None:
            try:
                held = self._held(session)
            except sa.exc.DBAPIError as e:
                self._drop()  # it ended, and its leases with it
                self._unsure(e)
                session = None
        if session is None:
            session = self._open()  # a new session; raises while the server is away
            self._session = session
        again: list[str] = []
        for device in self.serving():
            if lease_key(device) in held:
                continue
            if self._try(session, device):
                again.append(device)
            else:
                self._lose(session, device)
        with self._lock:
            occupied = [d for d, state in self._states.items() if state == "occupied"]
        if again or occupied:
            self._look(session, [*again, *occupied], taken_again=bool(again))
        self._publish(session)
        if self._away_since is not None:
            log.info(
                "device leases taken again",
                devices=again,
                lost=self.lost(),
                away_s=round(time.monotonic() - self._away_since, 1),
            )
            self._away_since = None

    def _open(self) -> _Session:
        """A new session of its own, named after this worker (pg_stat_activity shows it)."""
        connection = self.engine.connect()
        try:
            connection.exec_driver_sql(
                "SELECT set_config('application_name', %(name)s, false)",
                {"name": f"accelopt worker pid {os.getpid()} on {platform.node()}"},
            )
            if self._spaces is None:
                self._spaces = (lease_space(connection), lease_space(connection, "claims"))
            row = connection.execute(
                sa.text(
                    "SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()"
                )
            ).one()
            connection.commit()
        except BaseException:
            _discard(connection)
            raise
        return _Session(connection, int(row.pid), row.backend_start)

    def _try(self, session: _Session, device: str) -> bool:
        assert self._spaces is not None
        taken = session.connection.execute(
            sa.text("SELECT pg_try_advisory_lock(:space, :key)"),
            {"space": self._spaces[0], "key": lease_key(device)},
        ).scalar_one()
        session.connection.commit()
        return bool(taken)

    def _held(self, session: _Session) -> set[int]:
        """The device keys this session holds (a dead session raises)."""
        assert self._spaces is not None
        keys = session.connection.execute(
            sa.text(
                "SELECT objid FROM pg_locks WHERE locktype = 'advisory' AND granted "
                "AND pid = pg_backend_pid() AND classid = :space AND objsubid = 2"
            ),
            {"space": self._spaces[0]},
        ).scalars()
        held = {int(key) for key in keys}
        session.connection.commit()
        return held

    def _holder(self, session: _Session, device: str) -> str:
        assert self._spaces is not None
        name = session.connection.execute(
            sa.text(HOLDER), {"space": self._spaces[0], "key": lease_key(device)}
        ).scalar()
        session.connection.commit()
        return str(name or "a session that does not say whose it is")

    def _look(self, session: _Session, devices: list[str], *, taken_again: bool) -> None:
        """Held or occupied, each of `devices` (just taken, or occupied until now), by the
        jobs other live workers run on them; under each device's claim lock, so that no claim
        commits unseen in between."""
        assert self._spaces is not None
        connection = session.connection
        for device in sorted(devices, key=lease_key):  # one order: two looks never deadlock
            connection.execute(
                sa.text("SELECT pg_advisory_xact_lock(:claims, :key)"),
                {"claims": self._spaces[1], "key": lease_key(device)},
            )
        with self._lock:
            carrier = self._carrier
        rows = connection.execute(
            sa.text(OTHERS_JOBS),
            {"devices": devices, "stalled_s": self.stalled_s, "carrier": carrier},
        ).all()
        with self._lock:
            others = {row.worker: row.job_id for row in rows}
            changed = {d: others.get(d) for d in devices if self._states[d] != "lost"}
            before = {d: self._states[d] for d in changed}
            for device, job in changed.items():
                self._states[device] = "held" if job is None else "occupied"
        connection.commit()  # the claim locks go; claims from now on find these states
        for device, job in changed.items():
            if job is not None and before[device] != "occupied":
                log.warning(
                    "device occupied: another worker's job still runs on it; it takes no job "
                    "until that one ends",
                    device=device,
                    job=job,
                    taken_again=taken_again,
                )
            elif job is None and before[device] == "occupied":
                log.info("device free again: the other worker's job ended", device=device)

    def _lose(self, session: _Session, device: str) -> None:
        holder = self._holder(session, device)
        with self._lock:
            self._states[device] = "lost"
        log.error(
            "device lost: another worker took its lease while this worker's session was gone; "
            "this worker serves it no more (a job of its own still running there ends first)",
            device=device,
            holder=holder,
        )

    def _publish(self, session: _Session) -> None:
        with self._lock:
            self._current = session

    def _drop(self) -> None:
        """The session is dead or unusable: discarded, never used again."""
        session = self._session
        self._session = None
        with self._lock:
            self._current = None
        if session is not None:
            _discard(session.connection)

    def _unsure(self, error: sa.exc.SQLAlchemyError) -> None:
        """The session is gone: no device takes a job until a new one holds its lease."""
        with self._lock:
            for device, state in self._states.items():
                if state != "lost":
                    self._states[device] = "unsure"
            self._current = None
        if self._away_since is None:
            self._away_since = time.monotonic()
            log.warning(
                "device leases unsure: their session ended; no job starts until a new one "
                "holds them",
                devices=self.serving(),
                error=str(getattr(error, "orig", error)).strip(),
            )


def _discard(connection: Connection) -> None:
    """Close a lease session for good: a dead one is never reused, and a live one is not
    pooled with this worker's name and locks."""
    with contextlib.suppress(sa.exc.DBAPIError):
        connection.invalidate()
    with contextlib.suppress(sa.exc.DBAPIError):
        connection.close()
