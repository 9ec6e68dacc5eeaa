"""The database's health as the daemon sees it: a locked, read-only, full, removed or
restarting database is waited out with backoff, each attempt logged, for at most
`patience_s`; then the daemon stops with a non-zero exit and a one-line reason. Nothing is
lost either way: an event is written whole or not at all, and a job that was running when the
daemon stopped is run again at the next start.
"""

from __future__ import annotations

import threading
import time

import structlog

from store.errors import StoreError

__all__ = ["StoreHealth"]

log = structlog.get_logger("accelopt.health")


class StoreHealth:
    def __init__(
        self, *, patience_s: float, backoff_s: float = 1.0, max_backoff_s: float = 30.0
    ) -> None:
        self.patience_s = patience_s
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.since: float | None = None
        self.attempts = 0
        self.last = ""
        self._lock = threading.Lock()  # every part reports here

    @property
    def failing(self) -> bool:
        return self.since is not None

    def failed(self, error: StoreError, where: str) -> float:
        """Record a failure; the seconds to wait before the next attempt."""
        now = time.monotonic()
        with self._lock:
            if self.since is None:
                self.since = now
            self.attempts += 1
            self.last = error.message
            attempts, since = self.attempts, self.since
        delay = min(self.max_backoff_s, self.backoff_s * 2.0 ** min(attempts - 1, 10))
        log.warning(
            "database trouble; retrying",
            where=where,
            attempt=attempts,
            failing_for_s=round(now - since, 1),
            retry_in_s=delay,
            error=error.message,
        )
        return delay

    def recovered(self) -> None:
        with self._lock:
            since, attempts = self.since, self.attempts
            self.since, self.attempts, self.last = None, 0, ""
        if since is not None:
            log.info(
                "database recovered", attempts=attempts, after_s=round(time.monotonic() - since, 1)
            )

    def report(self, error: BaseException, where: str) -> None:
        """A part's failure: the database's, if it was the database."""
        if isinstance(error, StoreError):
            self.failed(error, where)

    def exhausted(self) -> str | None:
        """The reason to stop, once the database has failed for longer than the patience."""
        if self.since is None or time.monotonic() - self.since < self.patience_s:
            return None
        return (
            f"the database has failed for {self.patience_s:g} s "
            f"({self.attempts} attempts; last: {self.last})"
        )
