"""The live pages' sessions: a browser that presented the token once (`?token=`) carries a
random session value in its cookie from then on, never the token itself, so a cookie read off
a browser's disk or a proxy's log is of use for hours at most and can be dropped by restarting
the server, while the token stays as it was."""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

__all__ = ["MAX_SESSIONS", "SESSION_LIFETIME_S", "Sessions"]

SESSION_LIFETIME_S = 12 * 3600
"""A working day: a page open through it keeps following the log, one left overnight asks
for the token again, and a stolen cookie is not good for longer than that."""
MAX_SESSIONS = 1024
"""Sessions kept at once, oldest dropped past it: a client that presents the token again and
again (a script, a page reloaded with `?token=`) cannot grow the server's memory."""


class Sessions:
    """Session values issued by this server, kept in its memory only (a restart ends them all)
    and each good for `lifetime_s` from its issue, on `clock` (seconds; monotonic)."""

    def __init__(
        self,
        *,
        lifetime_s: float = SESSION_LIFETIME_S,
        limit: int = MAX_SESSIONS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.lifetime_s, self.limit, self.clock = lifetime_s, limit, clock
        # Kept by the value's SHA-256, oldest first: a lookup's timing depends on the digest,
        # which tells nothing of the value, and the memory holds no cookie one could replay.
        self._issued: OrderedDict[bytes, float] = OrderedDict()
        self._lock = threading.Lock()

    def issue(self) -> str:
        value = secrets.token_urlsafe(32)
        with self._lock:
            self._issued[_digest(value)] = self.clock()
            while len(self._issued) > self.limit:
                self._issued.popitem(last=False)
        return value

    def valid(self, value: str) -> bool:
        """Whether `value` is a session this server issued and that has not expired."""
        with self._lock:
            self._drop_expired()
            return _digest(value) in self._issued

    def _drop_expired(self) -> None:
        oldest_kept = self.clock() - self.lifetime_s
        while self._issued and next(iter(self._issued.values())) <= oldest_kept:
            self._issued.popitem(last=False)


def _digest(value: str) -> bytes:
    return hashlib.sha256(value.encode()).digest()
