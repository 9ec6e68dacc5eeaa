"""A child for the sandbox tests, run exactly like a kernel phase (`python -s -P -m ...`)."""

import json
import os
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nkibench.sandbox.lifeline import hold
from nkibench.sandbox.process import RESULT_FD_VARIABLE, apply_limits


def _attempt(action: Callable[[], object]) -> str:
    try:
        return f"done: {action()!r}"[:200]
    except Exception as e:
        return f"refused: {type(e).__name__}"


def escape(request: dict[str, Any]) -> dict[str, Any]:
    """What an escaping kernel tries, each attempt's outcome in a word."""
    environments = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                environments[entry.name] = (entry / "environ").read_bytes().decode(errors="replace")
            except OSError as e:
                environments[entry.name] = f"unreadable: {e}"
    with socket.socket() as connection:
        connection.settimeout(2)
        connected = _attempt(lambda: connection.connect(("127.0.0.1", request["port"])))
    return {
        "uid": os.getuid(),
        "capabilities": next(
            line.split()[1]
            for line in Path("/proc/self/status").read_text().splitlines()
            if line.startswith("CapEff")
        ),
        "pids": sorted(int(p) for p in environments),
        "environments": environments,
        "write_outside": _attempt(lambda: Path(request["outside"]).write_text("escaped")),
        "read_database": _attempt(lambda: Path(request["database"]).read_bytes()[:16]),
        "connect": connected,
    }


def main() -> None:
    hold()  # the lifeline, first, as in nkibench.sandbox.child
    channel = os.fdopen(int(os.environ.pop(RESULT_FD_VARIABLE)), "wb")
    request = json.loads(sys.stdin.buffer.read())
    apply_limits(request["limits"])
    probe = request["probe"]
    result: dict[str, object]
    if probe == "env":
        result = {"env": dict(os.environ), "cwd": os.getcwd()}
    elif probe == "limits":
        result = {
            name: resource.getrlimit(getattr(resource, name))[0]
            for name in ("RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CORE")
        }
    elif probe == "memory":
        try:
            hoard = bytearray(request["megabytes"] * 1024 * 1024)
            result = {"allocated": len(hoard)}
        except MemoryError:
            result = {"memory_error": True}
    elif probe == "hang":
        # one grandchild in the group, one that leaves it (setsid) to outlive a group kill
        subprocess.Popen(["sleep", "600"])
        subprocess.Popen(["sleep", "600"], start_new_session=True)
        while True:
            time.sleep(1)
    elif probe == "hang_alone":
        while True:
            time.sleep(1)
    elif probe == "flood":
        chunk = b"x" * 65536
        while True:
            os.write(1, chunk)
    elif probe == "escape":
        result = escape(request)
    else:
        raise SystemExit(f"unknown probe {probe}")
    with channel:
        channel.write(json.dumps(result).encode())


if __name__ == "__main__":
    main()
