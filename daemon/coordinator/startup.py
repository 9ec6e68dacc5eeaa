"""What the daemon does once as it starts, before its loop: plain functions of what they need,
each called by one marked line of daemon/coordinator/service.py.

- `check_shapes`: a `--shapes` value that no task can use is refused (exit status 2) before
  anything is recorded. Recorded, a typo would be a profile failure of every task's baseline,
  and those records stand when the daemon restarts with the right value.
- `sweep_work`: the kernel work folders (`work/nkibench-*`) that a SIGKILL left behind are
  removed (a full-shape job leaves about 1.8 GB), under a lock that keeps a second daemon on
  the same state directory from sweeping the folders of jobs that are running.
"""

from __future__ import annotations

import difflib
import fcntl
import os
import shutil
import tomllib
from pathlib import Path
from typing import IO

import structlog

from events.errors import AccelOptError
from nkibench.errors import TaskError
from nkibench.task.files import TOML_FILE, name_problem, read_task_files, workloads_file
from nkibench.task.toml import FULL
from nkibench.task.workloads import parse_workloads

__all__ = ["OptionRefused", "check_shapes", "declared_shape_sets", "sweep_work"]

log = structlog.get_logger("accelopt.daemon")
WORK_PREFIX = "nkibench-"
"""What nkibench.harness names a job's work folder (tempfile.TemporaryDirectory's prefix)."""


class OptionRefused(AccelOptError):
    """A daemon option that cannot be right: the daemon does not start (a usage error)."""

    exit_code = 2


def declared_shape_sets(watch: Path) -> tuple[int, set[str]]:
    """How many task folders the watched directory holds (folders with a task file, or that
    cannot be read), and every shape set they define: those their task.toml files name (one
    that does not parse names none) and their workloads (`w0`, `w1`...)."""
    folders = 0
    names: set[str] = set()
    try:
        entries = list(os.scandir(watch))
    except OSError:
        return 0, names
    for entry in entries:
        if entry.name.startswith((".", "#")) or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            files = read_task_files(Path(entry.path), root=watch)
        except (TaskError, OSError):
            folders += 1  # a task folder the daemon will record invalid
            continue
        if not files:
            continue  # no task file: not a task folder
        folders += 1
        raw = files.get(TOML_FILE)
        workloads = files.get(workloads_file(raw))
        if workloads is not None:  # parsed already, by read_task_files
            found = parse_workloads(Path(entry.path) / workloads_file(raw), workloads)
            names.update(w.name for w in found)
        try:
            shapes = tomllib.loads(raw.decode("utf-8")).get("shapes") if raw else None
        except (UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        if isinstance(shapes, dict):
            names.update(str(name) for name in shapes)
    return folders, names


def check_shapes(shapes: str, watch: Path) -> None:
    """Refuse a `--shapes` value that is not `full` and is not a shape set of any task in
    the watched directory (most likely a typo). With no task folder yet there is nothing to
    check against: the value is taken, said in the log, and a task dropped later without it
    is recorded invalid for this daemon, which a restart with another value re-evaluates."""
    if shapes == FULL:
        return
    problem = name_problem(shapes)
    if problem is not None:
        raise OptionRefused(f"--shapes: {problem}")
    folders, declared = declared_shape_sets(watch)
    if folders == 0:
        log.warning("--shapes cannot be checked: no task folder yet", shapes=shapes)
        return
    if shapes in declared:
        return
    known = ", ".join(sorted({FULL, *declared}))
    close = difflib.get_close_matches(shapes, sorted(declared), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise OptionRefused(
        f"--shapes {shapes!r}: none of the {folders} task folders in {watch} has this shape "
        f"set (they have: {known}){hint}"
    )


def _size(path: str) -> int:
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                continue
    return total


def sweep_work(workdir: Path) -> IO[bytes] | None:
    """Remove the job folders a killed daemon left in its own `workdir` (only folders named
    `nkibench-*` directly in it, never following a symlink) and log how many and how large.

    Returns the open lock file, which the daemon keeps for its lifetime: while one daemon
    holds it another does not sweep (None: it is held, and nothing was removed)."""
    workdir.mkdir(parents=True, exist_ok=True)
    lock = (workdir / ".lock").open("a+b")  # not inherited by children (O_CLOEXEC)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        log.warning("work folder in use by another daemon: not swept", folder=str(workdir))
        return None
    removed, size, failed = 0, 0, []
    for entry in sorted(os.scandir(workdir), key=lambda e: e.name):
        if not entry.name.startswith(WORK_PREFIX) or not entry.is_dir(follow_symlinks=False):
            continue
        bytes_ = _size(entry.path)
        try:
            shutil.rmtree(entry.path)
        except OSError as e:
            failed.append(f"{entry.name}: {e.strerror}")
            continue
        removed += 1
        size += bytes_
    log.info(
        "work folders of killed jobs removed",
        folder=str(workdir),
        removed=removed,
        bytes=size,
        size=f"{size / 1024**3:.2f} GiB",
    )
    if failed:
        log.warning("work folders left in place", folder=str(workdir), problems=failed[:10])
    return lock
