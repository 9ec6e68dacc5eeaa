"""Task code that tries to escape, run by the real daemon: contained by the OS sandbox, and
its findings kept out of every record (issue 14, item 0).

The daemon has the LLM key in its environment (the compatibility route, the worst case): code
that read /proc/<daemon>/environ would have it. A kernel can no longer run such code (the static
check refuses `typing.sys.modules["os"]` and every other door it knows: tests/data/adversarial),
so the escaping code is the task's own reference (tests/data/escape/reference.py), which runs
unrestricted Python in the same kind of sandboxed child: it reads every /proc/*/environ it can,
writes outside its work directory, connects to a listener on 127.0.0.1, double-forks a `setsid`
process meant to outlive it, and puts everything it found in its error message, which is
recorded.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from events.catalog import ProfileRecorded, SearchFinished
from events.codec import canonical_json
from store.sql import SqlEventStore
from tests.support import DATA
from tests.support.daemon_process import DaemonProcess, wait_until

KEY = "sk-accelopt-" + "7f3c9a1e5b2d4c6f8a0b"
ESCAPE = DATA / "escape"


def sleepers(tag: str) -> list[int]:
    """Processes running `sleep TAG` (the kernel's double-forked survivor)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes() == f"sleep\0{tag}\0".encode():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.settimeout(0.2)
        yield server


def escape_task(folder: Path, outside: Path, port: int, tag: str) -> None:
    shutil.copytree(ESCAPE, folder)
    reference = (folder / "reference.py").read_text()
    reference = reference.replace('"/nonexistent/escaped.txt"', repr(str(outside)))
    reference = reference.replace("PORT = 1", f"PORT = {port}").replace('"987654321"', repr(tag))
    (folder / "reference.py").write_text(reference)


def recorded_texts(db: str) -> str:
    """Every event's data and metadata, and every blob, as text."""
    store = SqlEventStore.open(db)
    try:
        parts = [canonical_json({"d": e.data, "m": e.metadata}) for e in store.read_all()]
        with store.engine.connect() as connection:
            hashes = [row[0] for row in connection.exec_driver_sql("SELECT sha256 FROM blobs")]
        parts += [store.get_blob(h).decode("utf-8", "replace") for h in hashes]
        return "\n".join(parts)
    finally:
        store.close()


def run_escape(
    tmp_path: Path, listener: socket.socket, **settings: str
) -> tuple[DaemonProcess, str]:
    tag = str(900_000_000 + os.getpid() % 100_000)
    outside = tmp_path / "escaped.txt"
    daemon = DaemonProcess(
        tmp_path,
        "--shapes",
        "small",
        env={"ACCELOPT_LLM_API_KEY": KEY, "OPENAI_API_KEY": KEY, **settings},
    )
    escape_task(tmp_path / "staging" / "escape", outside, listener.getsockname()[1], tag)
    shutil.copytree(tmp_path / "staging" / "escape", daemon.watch / "escape")
    daemon.start()
    try:
        wait_until(lambda: daemon.events(SearchFinished, task="escape"), 120, "the search's end")
    finally:
        assert daemon.stop() == 0
    return daemon, tag


def test_the_escaping_task_code_is_contained(tmp_path: Path, listener: socket.socket) -> None:
    daemon, tag = run_escape(tmp_path, listener)
    profile = daemon.events(ProfileRecorded, task="escape")[0]
    assert profile.error_kind == "task"
    message = profile.error_message or ""
    assert "escaped:" in message  # the code ran, and what it found is in its message
    assert "no write" in message
    assert "no connection" in message
    assert KEY not in message
    with pytest.raises(TimeoutError):
        listener.accept()
    assert not (tmp_path / "escaped.txt").exists()
    assert not list(tmp_path.glob("*.txt"))
    time.sleep(0.5)
    assert sleepers(tag) == []
    assert KEY not in daemon.log_text()
    assert KEY not in recorded_texts(daemon.db)


def test_without_the_sandbox_the_key_it_reads_is_still_never_recorded(
    tmp_path: Path, listener: socket.socket
) -> None:
    """ACCELOPT_SANDBOX=none: the task's code does read the daemon's environment, the key with it,
    and puts it in its error message; the scrubber takes it out before anything is written."""
    daemon, tag = run_escape(tmp_path, listener, ACCELOPT_SANDBOX="none")
    try:
        message = daemon.events(ProfileRecorded, task="escape")[0].error_message or ""
        assert "[redacted]" in message  # it did find the key, and it was taken out
        assert KEY not in message
        assert KEY not in daemon.log_text()
        assert "NO OS SANDBOX" in daemon.log_text()
        assert KEY not in recorded_texts(daemon.db)
    finally:
        for pid in sleepers(tag):  # unconfined, the survivor does survive: the point of item 0
            os.kill(pid, signal.SIGKILL)
