"""A real daemon run in a thread of the test process (SQLite file, nkisim, task folders of
the NKI suite at small shapes), for tests that reach into its parts."""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from daemon.coordinator.service import Daemon, DaemonOptions
from daemon.settings import Settings
from events.base import Event
from events.codec import decode
from nkibench.suites import NKI_LEGACY_SUITE

__all__ = ["TICK_S", "Running", "wait_for"]

T = TypeVar("T")
E = TypeVar("E", bound=Event)
TICK_S = 0.2


def wait_for(condition: Callable[[], T | None], timeout: float, what: str) -> T:
    """The condition's first truthy value (so never None)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {timeout:g} s waiting for {what}"
        time.sleep(0.05)


class Running:
    """A daemon run in a thread of this process."""

    def __init__(self, root: Path, **options: Any) -> None:
        self.watch = root / "kernels"
        self.watch.mkdir()
        self.url = f"sqlite:///{root / 'state' / 'accelopt.db'}"
        self.daemon = Daemon.open(
            Settings.load(),
            self.url,
            DaemonOptions(watch=self.watch, shapes="small", tick_s=TICK_S, **options),
        )
        self.code: int | None = None
        self.thread = threading.Thread(target=self._run, name="daemon-under-test")
        self.thread.start()

    def _run(self) -> None:
        self.code = self.daemon.run()

    def drop(self, name: str) -> None:
        shutil.copytree(NKI_LEGACY_SUITE / name, self.watch / name)

    def events(self, kind: type[E], task: str) -> list[E]:
        store = self.daemon.store
        found = [
            e
            for s in store.read_all(types=[kind.type_name()])
            if isinstance(e := decode(s).event, kind)
        ]
        return [e for e in found if getattr(e, "task", None) == task]

    def stop(self) -> int:
        self.daemon.stop("the test is done")
        self.thread.join(timeout=60)
        assert not self.thread.is_alive(), "the daemon did not stop"
        assert self.code is not None
        return self.code
