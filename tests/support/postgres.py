"""The tests' one PostgreSQL server, shared: a test that restarts it has it to itself."""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tests.support.daemon_process import wait_until

__all__ = ["SERVER_LOCK", "PostgresServer", "restart_postgresql"]

SERVER_LOCK = Path(tempfile.gettempdir()) / "accelopt-tests-postgresql.lock"
"""Every test on the PostgreSQL server holds this lock shared (flock) while it runs; a test that
restarts the server takes it for itself first, so that no other test, in this process, another
xdist worker or another run on this machine, loses its connections to the restart."""


class PostgresServer:
    """This test's share of the one PostgreSQL server."""

    def __init__(self) -> None:
        self._fd = os.open(SERVER_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
        fcntl.flock(self._fd, fcntl.LOCK_SH)

    @contextlib.contextmanager
    def alone(self) -> Iterator[None]:
        """Until the block ends, no other test uses the server (this test's share becomes the
        whole once the others' running tests end)."""
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_SH)

    def close(self) -> None:
        os.close(self._fd)


def restart_postgresql() -> None:
    """pg_ctlcluster restart: every session ends (call it inside `PostgresServer.alone`)."""
    version = subprocess.run(
        ["ls", "/etc/postgresql"], capture_output=True, text=True, check=True
    ).stdout.split()[0]
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"],
        check=True,
        capture_output=True,
    )
    wait_until(
        lambda: (
            subprocess.run(["pg_isready", "-q", "-h", "127.0.0.1"], check=False).returncode == 0
        ),
        60,
        "PostgreSQL to accept connections again",
    )
