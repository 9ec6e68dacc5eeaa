"""`accelopt bench daemon [--http]`: how fast the daemon notices a new task, and what it costs
idle (with --http, serving its live pages).

The real daemon runs as a child process (nkisim, small shapes, a fresh SQLite file and watch
directory). Task folders are dropped into the directory one at a time (an atomic rename, as a
deployment tool would); for each, the time until its baseline `ProfileRecorded` is in the log.
Then, with nothing left to do, the daemon's own CPU time and resident memory over an idle
period (from /proc: Linux only).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from events.codec import decode
from nkibench.suites import NKI_LEGACY_SUITE as SUITE
from store.sql import SqlEventStore

__all__ = ["DAEMON_TARGETS", "cpu_seconds", "quantile", "run_daemon_benchmark"]

DAEMON_TARGETS = {
    "p50_s": ("<=", 3.0),
    "idle_cpu_percent": ("<=", 1.0),
    "rss_mb": ("<=", 250.0),
}
PROGRAM = [sys.executable, "-c", "from daemon.cli import main; main()"]


def _baseline_recorded(store: SqlEventStore, task: str, after: int) -> tuple[bool, int]:
    found, last = False, after
    for stored in store.read_all(after=after, types=["ProfileRecorded"]):
        last = stored.position
        event = decode(stored).event
        if getattr(event, "task", None) == task and getattr(event, "purpose", None) == "baseline":
            found = True
    return found, last


def cpu_seconds(pid: int) -> float:
    """A process's CPU time so far, user and system (/proc: Linux only)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def quantile(ordered: Sequence[float], q: float) -> float:
    """The nearest-rank quantile `q` of values sorted ascending."""
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def _wait_ready(log: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while '"event": "ready"' not in log.read_text(errors="replace"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the daemon did not start: {log.read_text()[-2000:]}")
        time.sleep(0.05)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def run_daemon_benchmark(
    *, drops: int = 20, idle_s: float = 30.0, http: bool = False
) -> dict[str, Any]:
    """With `http`, the daemon also serves the live pages; the page is fetched once before the
    idle period, so that what serving it loads (templates, plots) is in the memory measured."""
    with tempfile.TemporaryDirectory(prefix="accelopt-bench-daemon-") as tmp:
        root = Path(tmp)
        watch, staging, home = root / "kernels", root / "staging", root / "state"
        watch.mkdir()
        db = f"sqlite:///{home / 'accelopt.db'}"
        env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELOPT_")}
        env |= {"ACCELOPT_HOME": str(home), "ACCELOPT_DB": db}
        log = root / "daemon.log"
        port = _free_port()
        served = ["--http", f"127.0.0.1:{port}"] if http else []
        with log.open("wb") as out:
            daemon = subprocess.Popen(
                [*PROGRAM, "daemon", "--watch", str(watch), "--shapes", "small", *served],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            _wait_ready(log)
            store = SqlEventStore.open(db)
            latencies = []
            position = store.head()
            for i in range(drops):
                name = f"silu{i:02d}"
                shutil.copytree(SUITE / "silu", staging / name)
                started = time.monotonic()
                os.rename(staging / name, watch / name)
                while True:
                    found, position = _baseline_recorded(store, name, position)
                    if found:
                        latencies.append(time.monotonic() - started)
                        break
                    if time.monotonic() - started > 120:
                        raise RuntimeError(f"no baseline for {name} after 120 s")
                    time.sleep(0.02)
            store.close()
            time.sleep(3.0)  # the last searches finish; then the daemon has nothing to do
            if http:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=60) as page:
                    page.read()
            cpu_before = cpu_seconds(daemon.pid)
            time.sleep(idle_s)
            idle_cpu = (cpu_seconds(daemon.pid) - cpu_before) / idle_s * 100
            rss = _rss_mb(daemon.pid)
        finally:
            daemon.send_signal(signal.SIGTERM)
            code = daemon.wait(timeout=60)
    ordered = sorted(latencies)
    return {
        "drops": drops,
        "http": http,
        "p50_s": statistics.median(ordered),
        "p95_s": quantile(ordered, 0.95),
        "max_s": ordered[-1],
        "idle_s": idle_s,
        "idle_cpu_percent": idle_cpu,
        "rss_mb": rss,
        "exit_code": code,
        "host": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
    }
