"""Serving the live pages: in the foreground (`accelopt serve`) or on a thread of the daemon
(`accelopt daemon --http`). Loopback by default; any other address needs a token, or the
server refuses to start."""

from __future__ import annotations

import ipaddress
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

import structlog

from events.errors import AccelOptError
from store.sql import SqlEventStore

if TYPE_CHECKING:
    from daemon.views.web.metrics import StateDisk

__all__ = ["DEFAULT_BIND", "HttpRefused", "WebServer", "parse_bind"]

log = structlog.get_logger("accelopt.web")
DEFAULT_BIND = "127.0.0.1:8765"


class HttpRefused(AccelOptError):
    """An address the pages must not be served on as asked."""

    exit_code: ClassVar[int] = 2


def parse_bind(text: str, token: str | None) -> tuple[str, int]:
    """HOST:PORT, checked: a host other than loopback needs a token."""
    host, _, port = text.rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise HttpRefused(f"--http/--bind {text!r}: expected HOST:PORT, e.g. {DEFAULT_BIND}")
    if not _loopback(host) and not token:
        raise HttpRefused(
            f"serving on {host} (not loopback) needs a token: set ACCELOPT_HTTP_TOKEN, or "
            "bind to 127.0.0.1"
        )
    return host, int(port)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name that may resolve anywhere


class WebServer:
    """uvicorn serving the pages of `store`'s log, on a thread of its own (make_app says what
    `state_disk` and `clock` are for)."""

    def __init__(
        self,
        store: SqlEventStore,
        host: str,
        port: int,
        token: str | None,
        *,
        state_disk: Callable[[], StateDisk],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        import uvicorn  # noqa: PLC0415 - only with --http or serve

        from daemon.views.web.app import make_app  # noqa: PLC0415

        app = make_app(store, state_disk=state_disk, token=token, clock=clock)
        config = uvicorn.Config(
            app, host=host, port=port, log_config=None,
            access_log=False, lifespan="off",
        )  # fmt: skip
        self.server = uvicorn.Server(config)
        self.address = f"http://{host}:{port}/"
        self.thread = threading.Thread(target=self.server.run, name="http", daemon=True)

    def start(self, timeout: float = 10.0) -> None:
        self.thread.start()
        ready = threading.Event()
        for _ in range(int(timeout / 0.05)):
            if self.server.started or not self.thread.is_alive():
                break
            ready.wait(0.05)
        if not self.server.started:
            raise HttpRefused(f"the pages could not be served on {self.address} (is it taken?)")
        log.info("serving the live pages", address=self.address)

    def alive(self) -> bool:
        return self.thread.is_alive()

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
