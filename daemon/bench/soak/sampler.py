"""What a soak samples, from outside the daemon: its process as the kernel sees it (/proc:
Linux only) and its event log as another reader sees it.

Outside, because a daemon that measured itself would change what it measures (and would
have to be trusted while it leaks); /proc is what an operator's tools read too. Children are
every descendant of the daemon (workers' sandboxes are bubblewrap, then the kernel or
reference process under it), counted by walking the parent links of /proc/*/stat; zombies
among them are counted apart, since a child never reaped is a leak of its own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from store.jobs.sql import SqlJobQueue
from store.sql import SqlEventStore

__all__ = ["LogProbe", "ProcessProbe", "Sample", "orphans_in", "survivors", "take_sample"]

PROC = Path("/proc")


@dataclass(frozen=True)
class Sample:
    t_s: float
    """Seconds since the churn started (wall clock)."""
    rss_mb: float
    open_fds: int
    threads: int
    children: int
    zombies: int
    events: int
    log_bytes: int
    """The database file and its write-ahead log together."""
    wal_bytes: int
    jobs_pending: int
    jobs_running: int


def _stat_fields(stat: str) -> list[str]:
    """/proc/<pid>/stat's fields after the command name (which may hold spaces and ')')."""
    return stat.rsplit(")", 1)[1].split()


@dataclass(frozen=True)
class ProcessProbe:
    pid: int
    proc: Path = PROC

    def status(self) -> tuple[float, int]:
        """(resident memory in MB, threads) from /proc/<pid>/status."""
        rss_kb = threads = None
        for line in (self.proc / str(self.pid) / "status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss_kb = int(line.split()[1])
            elif line.startswith("Threads:"):
                threads = int(line.split()[1])
        if rss_kb is None or threads is None:
            raise RuntimeError(f"process {self.pid}: no VmRSS or Threads in its status")
        return rss_kb / 1024.0, threads

    def open_fds(self) -> int:
        return len(os.listdir(self.proc / str(self.pid) / "fd"))

    def descendants(self) -> dict[int, tuple[str, int]]:
        """Every process below this one: pid → (its state letter, Z for a zombie; its start
        time in clock ticks after boot, which tells a process from a later one of its pid)."""
        parents: dict[int, list[tuple[int, tuple[str, int]]]] = {}
        for entry in self.proc.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = _stat_fields((entry / "stat").read_text())
            except (OSError, IndexError):
                continue  # it ended while the table was read
            info = (fields[0], int(fields[19]))
            parents.setdefault(int(fields[1]), []).append((int(entry.name), info))
        found: dict[int, tuple[str, int]] = {}
        frontier = [self.pid]
        while frontier:
            for child, info in parents.get(frontier.pop(), []):
                if child not in found:
                    found[child] = info
                    frontier.append(child)
        return found


class LogProbe:
    """The daemon's SQLite event log and job table, read as another process reads them."""

    def __init__(self, url: str) -> None:
        self.path = Path(url.removeprefix("sqlite:///"))
        self.store = SqlEventStore.open(url)
        self.queue = SqlJobQueue(self.store.engine)

    def sizes(self) -> tuple[int, int]:
        """(database + WAL bytes, WAL bytes)."""
        sizes = []
        for path in (self.path, self.path.with_name(self.path.name + "-wal")):
            try:
                sizes.append(path.stat().st_size)
            except FileNotFoundError:
                sizes.append(0)
        return sizes[0] + sizes[1], sizes[1]

    def close(self) -> None:
        self.store.close()


def take_sample(
    t_s: float, process: ProcessProbe, log: LogProbe
) -> tuple[Sample, dict[int, tuple[str, int]]]:
    """One sample, and the descendants it counted (to tell, after the stop, which are left)."""
    rss_mb, threads = process.status()
    below = process.descendants()
    jobs = log.queue.counts()
    total, wal = log.sizes()
    sample = Sample(
        t_s=t_s,
        rss_mb=rss_mb,
        open_fds=process.open_fds(),
        threads=threads,
        children=len(below),
        zombies=sum(1 for state, _ in below.values() if state == "Z"),
        events=log.store.head(),
        log_bytes=total,
        wal_bytes=wal,
        jobs_pending=jobs.get("pending", 0),
        jobs_running=jobs.get("running", 0),
    )
    return sample, below


def orphans_in(workdir: Path, proc: Path = PROC) -> list[int]:
    """Processes still running in the daemon's kernel work directory (after it exited, any
    is a kernel that outlived the daemon)."""
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd.startswith(str(workdir)):
            found.append(int(entry.name))
    return found


def survivors(seen: dict[int, tuple[str, int]], proc: Path = PROC) -> list[int]:
    """Those of the daemon's descendants `seen` (by `ProcessProbe.descendants`) that are still
    the same processes, alive: after the daemon exited, any is a child it left behind."""
    alive = []
    for pid, (_, started) in seen.items():
        try:
            fields = _stat_fields((proc / str(pid) / "stat").read_text())
        except (OSError, IndexError):
            continue
        if int(fields[19]) == started and fields[0] != "Z":
            alive.append(pid)
    return sorted(alive)
