"""Phase functions for the warm-process tests (nkibench.sandbox.warm): what a child forked by
a zygote can reach, and what it can leave for the next one. Each runs like any phase, through
nkibench.sandbox.child, in a child of the zygote."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.processes import MARK


def _attempt(action: Callable[[], object]) -> str:
    try:
        return f"done: {action()!r}"[:200]
    except Exception as e:
        return f"refused: {type(e).__name__}"


def _pids() -> list[int]:
    return sorted(int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit())


def echo_phase(request: dict[str, Any]) -> dict[str, Any]:
    """Who it is, who its parent is, and which processes it sees."""
    return {
        "ok": True,
        "pid": os.getpid(),
        "zygote": os.getppid(),
        "pids": _pids(),
        "cwd": os.getcwd(),
        "home": os.environ.get("HOME"),
        "marker": os.environ.get(MARK),
        "tmp": _attempt(lambda: sorted(os.listdir("/tmp"))),
        "shm": _attempt(lambda: sorted(os.listdir("/dev/shm"))),
        "temporary": _attempt(tempfile.mkdtemp),
    }


def ask_for_the_temporary_folder() -> None:
    """A preload that asks tempfile for its folder, as torch's and Triton's imports may: the
    zygote's, which tempfile keeps."""
    tempfile.gettempdir()


def _environ(pid: int) -> Callable[[], bytes]:
    return Path(f"/proc/{pid}/environ").read_bytes


def nap_phase(request: dict[str, Any]) -> dict[str, Any]:
    """Which sandbox serves it (its PID namespace: each zygote is PID 2 of its own), held for a
    second (two at once need two zygotes)."""
    time.sleep(1.0)
    return {"ok": True, "sandbox": os.readlink("/proc/self/ns/pid")}


def escape_phase(request: dict[str, Any]) -> dict[str, Any]:
    """Everything a hostile kernel in a warm child tries against its zygote, its siblings and
    the host, each attempt's outcome in a word."""
    zygote = os.getppid()
    environments = {pid: _attempt(_environ(pid)) for pid in _pids()}
    with socket.socket() as connection:
        connection.settimeout(2)
        connected = _attempt(lambda: connection.connect(("127.0.0.1", request["port"])))
    return {
        "ok": True,
        "zygote": zygote,
        "environments": environments,
        "zygote_environ": environments.get(zygote, ""),
        "zygote_mem": _attempt(lambda: open(f"/proc/{zygote}/mem", "rb").read(1)),
        "zygote_cwd": _attempt(lambda: os.listdir(f"/proc/{zygote}/cwd")),
        "signal_zygote": _attempt(lambda: os.kill(zygote, signal.SIGSTOP)),
        "read_sibling": _attempt(lambda: Path(request["sibling"]).read_bytes()),
        "list_root": _attempt(lambda: os.listdir(request["root"])),
        "write_outside": _attempt(lambda: Path(request["outside"]).write_text("escaped")),
        "write_tmp": _attempt(lambda: Path("/tmp/poison").write_text("poison")),
        "write_shm": _attempt(lambda: Path("/dev/shm/poison").write_text("poison")),
        "write_own": _attempt(lambda: Path("own.txt").write_text("mine")),
        "read_input": _attempt(lambda: Path(request["input"]).read_bytes()),
        "write_input": _attempt(lambda: Path(request["input"]).write_bytes(b"changed")),
        "connect": connected,
        "capabilities": next(
            line.split()[1]
            for line in Path("/proc/self/status").read_text().splitlines()
            if line.startswith("CapEff")
        ),
    }


def linger_phase(request: dict[str, Any]) -> dict[str, Any]:
    """Leave processes behind: one in its group, one that left it (setsid), both marked."""
    subprocess.Popen(["sleep", "600"])
    subprocess.Popen(["sleep", "600"], start_new_session=True)
    time.sleep(0.2)
    return {"ok": True, "pids": _pids()}


def hang_phase(request: dict[str, Any]) -> dict[str, Any]:
    subprocess.Popen(["sleep", "600"], start_new_session=True)
    while True:
        time.sleep(1)


def triton_cache_phase(request: dict[str, Any]) -> dict[str, Any]:
    """Where Triton would compile to, in a child of a zygote that imported it."""
    import triton.knobs

    cache = Path(triton.knobs.cache.dir)
    seen = sorted(p.name for p in cache.iterdir()) if cache.is_dir() else []
    planted = _attempt(lambda: _plant(cache))
    zygote = Path(f"/proc/{os.getppid()}/cwd/.triton/cache")
    return {
        "ok": True,
        "cache": str(cache),
        "cwd": os.getcwd(),
        "seen": seen,
        "planted": planted,
        "zygote_cache": _attempt(lambda: _plant(zygote)),
    }


def _plant(cache: Path) -> str:
    """A compiled kernel's entry, as a candidate that poisons the cache would leave it."""
    entry = cache / "POISONED"
    entry.mkdir(parents=True, exist_ok=True)
    (entry / "kernel.cubin").write_bytes(b"poison")
    return str(entry)


def stall() -> None:
    """A preload that never ends: a zygote that does not answer its start."""
    while True:
        time.sleep(1)
