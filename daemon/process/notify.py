"""systemd's notify protocol (sd_notify(3)), written in-house: a datagram to $NOTIFY_SOCKET.

READY=1 once the daemon serves, STATUS= a one-line summary, WATCHDOG=1 from the main loop at
half the watchdog interval, STOPPING=1 on shutdown. Outside systemd (no NOTIFY_SOCKET) every
call is a no-op.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping

__all__ = ["Notifier"]


class Notifier:
    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET", "")
        self._address = "\0" + address[1:] if address.startswith("@") else address
        watchdog_pid = env.get("WATCHDOG_PID")
        usec = env.get("WATCHDOG_USEC")
        mine = watchdog_pid is None or watchdog_pid == str(os.getpid())
        self.watchdog_interval_s = int(usec) / 2e6 if usec and mine else None
        """Half the interval systemd expects WATCHDOG=1 within; None if it expects none."""
        self._last_watchdog = 0.0

    @property
    def enabled(self) -> bool:
        return bool(self._address)

    def send(self, *lines: str) -> bool:
        if not self._address:
            return False
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(self._address)
            sock.sendall("\n".join(lines).encode("utf-8"))
        return True

    def ready(self, status: str) -> None:
        self.send("READY=1", f"STATUS={status}")

    def status(self, text: str) -> None:
        self.send(f"STATUS={text}")

    def watchdog(self) -> None:
        """Ping if half the interval has passed since the last ping (call it from the loop)."""
        if self.watchdog_interval_s is None:
            return
        now = time.monotonic()
        if now - self._last_watchdog >= self.watchdog_interval_s:
            self._last_watchdog = now
            self.send("WATCHDOG=1")

    def stopping(self, status: str) -> None:
        self.send("STOPPING=1", f"STATUS={status}")
