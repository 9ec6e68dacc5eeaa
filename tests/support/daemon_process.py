"""Running the real daemon in tests: a child process on a real directory and a real SQLite
file, signalled like systemd would, with its event log read while it runs."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from daemon.bench.soak.sampler import orphans_in
from events.base import Event
from events.codec import decode
from store.sql import SqlEventStore

__all__ = ["DaemonProcess", "WorkerProcess", "orphans", "wait_until"]

PROGRAM = [sys.executable, "-c", "from daemon.cli import main; main()"]
T = TypeVar("T")
E = TypeVar("E", bound=Event)


def wait_until(
    condition: Callable[[], T | None], timeout: float, what: str, every: float = 0.2
) -> T:
    """The condition's first truthy value (so never None), polled every `every` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)


def orphans(workdir: Path) -> list[int]:
    """Processes still running in the daemon's kernel work directory (Linux /proc)."""
    return orphans_in(workdir)


HOST_SETTINGS = ("ACCELOPT_SANDBOX", "ACCELOPT_UNSAFE_SANDBOX")


class ChildProcess:
    """A service of ours as a child process, its output in `log`."""

    log: Path
    process: subprocess.Popen[bytes] | None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        assert self.process is not None
        if self.alive():
            self.process.send_signal(sig)
        return self.process.wait(timeout=timeout)


class DaemonProcess(ChildProcess):
    def __init__(
        self,
        root: Path,
        *args: str,
        env: dict[str, str] | None = None,
        prefix: Sequence[str] = (),
        program: Sequence[str] = PROGRAM,
    ) -> None:
        """`prefix`: a command the daemon runs under (`setpriv ...` to take root's
        permission to ignore file modes, as a daemon under its own user has none);
        `program`: how accelopt is started (another interpreter, for another user)."""
        self.root = root
        self.home = root / "state"
        self.watch = root / "kernels"
        self.watch.mkdir(parents=True, exist_ok=True)
        self.db = (env or {}).get("ACCELOPT_DB", f"sqlite:///{self.home / 'accelopt.db'}")
        self.args = args
        self.prefix = list(prefix)
        self.program = list(program)
        self.env = {
            # the host's sandbox settings pass (a GPU host in gVisor runs without bubblewrap)
            **{k: v for k, v in os.environ.items() if not k.startswith("ACCELOPT_")},
            **{k: os.environ[k] for k in HOST_SETTINGS if k in os.environ},
            "ACCELOPT_HOME": str(self.home),
            "ACCELOPT_DB": self.db,
            **(env or {}),
        }
        self.process: subprocess.Popen[bytes] | None = None
        self.log = root / "daemon.log"
        self.starts = 0

    def start(self, *, ready: bool = True, ready_s: float = 60) -> None:
        """Start it; `ready`: wait until it says so (failing with its log if it ends first)."""
        self.starts += 1
        offset = len(self.log_text())
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [*self.prefix, *self.program, "daemon", "--watch", str(self.watch), *self.args],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        if ready:
            wait_until(
                lambda: '"event": "ready"' in self.log_text()[offset:] or not self.alive(),
                ready_s,
                "the daemon to be ready",
            )
            assert self.alive(), self.log_text()[offset:][-3000:]

    def wait(self, timeout: float = 60) -> int:
        """The exit status of a daemon that ends by itself."""
        assert self.process is not None
        return self.process.wait(timeout=timeout)

    def peak_memory_mb(self) -> float:
        """The daemon's peak resident memory so far (Linux: VmHWM)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmHWM in /proc/<pid>/status")

    def events(self, kind: type[E], **where: object) -> list[E]:
        store = SqlEventStore.open(self.db)
        try:
            found: list[E] = []
            for stored in store.read_all(types=[kind.type_name()]):
                event = decode(stored).event
                assert isinstance(event, kind)  # the events of that type, as asked
                if all(getattr(event, k) == v for k, v in where.items()):
                    found.append(event)
            return found
        finally:
            store.close()

    def accelopt(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*PROGRAM, *argv],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    def drop(self, source: Path, name: str) -> Path:
        """Copy a task folder in, the way a user does (file by file)."""
        target = self.watch / name
        shutil.copytree(source, target)
        return target


class WorkerProcess(ChildProcess):
    """`accelopt worker` as a child process: one "host" of a fleet, its own state directory
    (and kernel work directory) under `root`."""

    def __init__(self, root: Path, db: str, *args: str, env: dict[str, str] | None = None) -> None:
        self.home = root / "state"
        self.home.mkdir(parents=True, exist_ok=True)
        self.args = args
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("ACCELOPT_")},
            **{k: os.environ[k] for k in HOST_SETTINGS if k in os.environ},
            "ACCELOPT_HOME": str(self.home),
            "ACCELOPT_DB": db,
            **(env or {}),
        }
        self.log = root / "worker.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        offset = len(self.log_text())
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [*PROGRAM, "worker", *self.args], env=self.env, stdout=log, stderr=log
            )
        wait_until(
            lambda: '"event": "ready"' in self.log_text()[offset:] or not self.alive(),
            60,
            "the worker to be ready",
        )
        assert self.alive(), self.log_text()

    def kernels(self) -> list[int]:
        """Its kernel processes still running (their working directory is its work folder)."""
        return orphans(self.home / "work")
