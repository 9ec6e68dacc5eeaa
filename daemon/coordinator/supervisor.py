"""No daemon thread dies silently.

Every long-lived part of the daemon (a worker per device, the watcher, the clock) is watched
by the main loop on every tick. A part that died is restarted, after a backoff that doubles
with each death in a row, up to a limit; past the limit, or for a part that cannot be
restarted, the supervisor says why and the daemon stops with a non-zero exit, so that systemd
(Restart=on-failure) starts a fresh one instead of a daemon that feeds the watchdog and does
nothing. A part killed by the database (store.errors.StoreError) is restarted as long as the
database is given time to come back (coordinator.health): that is the database's failure, not the
part's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import structlog

from store.errors import StoreError

__all__ = ["GuardedThread", "Part", "Supervisor"]

log = structlog.get_logger("accelopt.supervisor")


class Part(Protocol):
    """Something the supervisor watches."""

    name: str

    def alive(self) -> bool: ...

    def failure(self) -> BaseException | None:
        """Why it died (None: it ended without an error, or is alive)."""
        ...

    def restart(self) -> None: ...


class GuardedThread:
    """A part that is one thread running `target`; its exception is kept, not lost."""

    def __init__(self, name: str, target: Callable[[], None]) -> None:
        self.name = name
        self._target = target
        self._error: BaseException | None = None
        self._thread = self._spawn()

    def _run(self) -> None:
        try:
            self._target()
        except BaseException as e:
            self._error = e
            log.exception("thread died", part=self.name)

    def _spawn(self) -> threading.Thread:
        thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        thread.start()
        return thread

    def alive(self) -> bool:
        return self._thread.is_alive()

    def failure(self) -> BaseException | None:
        return self._error

    def restart(self) -> None:
        self._error = None
        self._thread = self._spawn()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


@dataclass
class _Watched:
    part: Part
    restartable: bool
    deaths: int = 0
    """Deaths of its own in a row (reset once the part has lived `settled_s`)."""
    store_deaths: int = 0
    """Deaths by the database in a row (they only lengthen the backoff)."""
    restart_at: float | None = None
    started_at: float = field(default_factory=time.monotonic)


class Supervisor:
    def __init__(
        self,
        *,
        stopping: threading.Event,
        max_restarts: int = 5,
        backoff_s: float = 1.0,
        max_backoff_s: float = 60.0,
        settled_s: float = 300.0,
        on_store_failure: Callable[[StoreError, str], object] | None = None,
    ) -> None:
        self.stopping = stopping
        self.max_restarts = max_restarts
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.settled_s = settled_s
        self.on_store_failure = on_store_failure or (lambda _error, _where: None)
        self._watched: list[_Watched] = []
        self._failed_start: dict[int, Exception] = {}
        """Part → why its last restart failed (it counts as its death)."""

    def watch(self, part: Part, *, restartable: bool = True) -> None:
        self._watched.append(_Watched(part, restartable))

    def check(self) -> str | None:
        """Restart what died and may be restarted; the reason to stop the daemon, if any."""
        if self.stopping.is_set():
            return None
        now = time.monotonic()
        for watched in self._watched:
            part = watched.part
            if part.alive():
                if now - watched.started_at > self.settled_s:
                    watched.deaths = watched.store_deaths = 0
                continue
            if watched.restart_at is None:
                reason = self._died(watched, now)
                if reason is not None:
                    return reason
            elif now >= watched.restart_at:
                watched.restart_at = None
                watched.started_at = now
                log.warning("restarting", part=part.name, deaths_in_a_row=watched.deaths)
                try:
                    part.restart()
                except Exception as e:  # it did not start: the same as a death
                    self._failed_start[id(part)] = e
                    reason = self._died(watched, now)
                    if reason is not None:
                        return reason
        return None

    def _died(self, watched: _Watched, now: float) -> str | None:
        part = watched.part
        error = self._failed_start.pop(id(part), None) or part.failure()
        what = f"{type(error).__name__}: {error}" if error is not None else "it ended"
        if isinstance(error, StoreError):
            self.on_store_failure(error, part.name)
            watched.store_deaths += 1
        else:
            watched.deaths += 1
        if not watched.restartable:
            return f"the {part.name} thread died ({what}) and cannot be restarted"
        if watched.deaths > self.max_restarts:
            return f"the {part.name} thread died {watched.deaths} times in a row (last: {what})"
        in_a_row = watched.deaths + watched.store_deaths
        delay = min(self.max_backoff_s, self.backoff_s * 2 ** max(in_a_row - 1, 0))
        watched.restart_at = now + delay
        log.warning("thread died; it is restarted", part=part.name, error=what, in_s=delay)
        return None

    def parts(self) -> list[Part]:
        return [w.part for w in self._watched]
