"""Finding a test's processes on this host by a marker in their environment: inside the
sandbox's PID namespace they have other numbers, and their working directory may be gone."""

from __future__ import annotations

import time
from pathlib import Path

__all__ = ["marked", "wait_for_none"]

MARK = "ACCELOPT_PROBE_MARK"


def _state(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "gone"


def marked(marker: str) -> list[int]:
    """Live processes (not zombies) whose environment carries `marker`."""
    needle = f"{MARK}={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environment = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environment.split(b"\0") and _state(entry.name) not in ("Z", "gone"):
            found.append(int(entry.name))
    return found


def wait_for_none(marker: str, timeout: float) -> list[int]:
    """The marked processes still alive after `timeout` seconds (empty: all gone sooner)."""
    deadline = time.monotonic() + timeout
    while True:
        alive = marked(marker)
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)
