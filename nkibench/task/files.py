"""Reading a task folder's files: bounded and symlink-safe, because the folder is untrusted.

A task folder is untrusted input to a process that runs for weeks, so reading it is bounded
before anything is parsed: each file has a size limit (FILE_LIMITS: 256 KiB for kernel.py and
reference.py, 64 KiB for task.toml; parsing Python costs about 450 bytes of memory per byte of
source, and the largest suite file is under 6 KiB), checked on the open file before it is read;
only regular files are read (a FIFO would block the reader for ever); and, given the watched
directory as `root`, a task file or folder that resolves outside it (a symlink out, or a
symlink loop) is refused, so that no outside file's content is ever copied into the log. A
task's name becomes a path component of the daemon's state (`revisions/<hash>/<task>`,
`library/<task>`), so it must be a plain identifier (TASK_NAME). A task's workloads
(workloads.jsonl and the safetensors files its lines name: nkibench.task.workloads) are read
with it, each within its limit, all of them inside the task folder itself.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import tomllib
from collections.abc import Mapping
from pathlib import Path

from nkibench.errors import TaskError
from nkibench.task.names import TASK_NAME, VALUE_NAME, name_problem
from nkibench.task.workloads import (
    DATA_FILE_LIMIT,
    DATA_TOTAL_LIMIT,
    WORKLOADS_FILE,
    WORKLOADS_LIMIT,
    data_path_problem,
    parse_workloads,
)

__all__ = [
    "FILE_LIMITS",
    "KERNEL_FILE",
    "REFERENCE_FILE",
    "TASK_FILES",
    "TASK_NAME",
    "TOML_FILE",
    "VALUE_NAME",
    "describe_size",
    "folder_hash",
    "name_problem",
    "read_task_files",
    "workloads_file",
]

KERNEL_FILE, REFERENCE_FILE, TOML_FILE = "kernel.py", "reference.py", "task.toml"
TASK_FILES = (KERNEL_FILE, REFERENCE_FILE, TOML_FILE)
FILE_LIMITS = {KERNEL_FILE: 256 * 1024, REFERENCE_FILE: 256 * 1024, TOML_FILE: 64 * 1024}
"""Bytes a task file may hold: 40x the largest suite file, and about 120 MB of parser memory
at most (a 5 MB kernel.py took 2.26 GB and 35 s to parse inside the daemon)."""


def folder_hash(files: Mapping[str, bytes]) -> str:
    """The revision of a task folder: sha256 over its files' names and contents."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + len(files[name]).to_bytes(8, "big"))
        digest.update(files[name])
    return digest.hexdigest()


def describe_size(count: int) -> str:
    """A byte count as a person reads it (KiB, MiB)."""
    value, unit = (count / 1024**2, "MiB") if count >= 1024**2 else (count / 1024, "KiB")
    return f"{value:.1f}".removesuffix(".0") + f" {unit}"


def _inside(path: str, root: Path) -> bool:
    return path == str(root) or path.startswith(str(root) + os.sep)


def _link_text(path: Path) -> str:
    with contextlib.suppress(OSError):
        return os.readlink(path)
    return "?"


def _check_folder(folder: Path, root: Path) -> None:
    """Refuse a task folder that is a symlink leading out of `root`, or nowhere."""
    if not folder.is_symlink():
        return
    target = _link_text(folder)
    try:
        real = folder.resolve(strict=True)
    except FileNotFoundError:
        raise TaskError(f"{folder}: a symlink to {target}, which does not exist") from None
    except (OSError, RuntimeError):  # RuntimeError: Python 3.11's symlink loop
        raise TaskError(f"{folder}: a symlink loop ({folder} -> {target})") from None
    if not _inside(str(real), root):
        raise TaskError(f"{folder}: a symlink to {real}, outside the watched directory {root}")


def _read_file(
    path: Path, limit: int, root: Path | None, boundary: str = "the watched directory"
) -> bytes | None:
    """The file's bytes (None: no such file), read through one descriptor that was checked
    first: where it really is (inside `root`, which `boundary` names), that it is a regular
    file, and its size."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        if path.is_symlink():
            raise TaskError(
                f"{path}: a symlink to {_link_text(path)}, which does not exist"
            ) from None
        return None
    except PermissionError:
        where = path if os.access(path.parent, os.X_OK) else path.parent  # chmod 000 folder
        raise TaskError(f"{where}: permission denied (the daemon cannot read it)") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise TaskError(f"{path}: a symlink loop ({path} -> {_link_text(path)})") from None
        raise TaskError(f"{path}: cannot be read: {e.strerror}") from None
    try:
        if root is not None:
            try:
                real = os.readlink(f"/proc/self/fd/{fd}")  # the file opened, not a path
            except OSError:
                real = os.path.realpath(path)
            if not _inside(real, root):
                raise TaskError(f"{path}: a symlink to {real}, outside {boundary} {root}")
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise TaskError(f"{path}: not a regular file")
        if status.st_size > limit:
            raise TaskError(
                f"{path}: {describe_size(status.st_size)} ({status.st_size} bytes), over the "
                f"{describe_size(limit)} limit of {path.name}"
            )
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            try:
                chunk = os.read(fd, min(left, 1 << 16))
            except OSError as e:
                raise TaskError(f"{path}: cannot be read: {e.strerror}") from None
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        if left <= 0:
            raise TaskError(f"{path}: grew over the {describe_size(limit)} limit of {path.name}")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_task_files(folder: Path, *, root: Path | None = None) -> dict[str, bytes]:
    """The task files of a folder as they are now (missing ones absent), each within its size
    limit; with `root` (the watched directory), only what lies inside it. Raises TaskError
    for a file that cannot be taken, FileNotFoundError or NotADirectoryError if the folder is
    not there."""
    if root is not None:
        root = root.resolve()
        _check_folder(folder, root)
    if not folder.is_dir():
        if folder.exists() or folder.is_symlink():
            raise NotADirectoryError(str(folder))
        raise FileNotFoundError(str(folder))
    files = {}
    for name in TASK_FILES:
        content = _read_file(folder / name, FILE_LIMITS[name], root)
        if content is not None:
            files[name] = content
    files |= _workload_files(folder, files.get(TOML_FILE))
    return files


def workloads_file(toml: bytes | None) -> str:
    """The workloads' file task.toml names (`[workloads] file`), else workloads.jsonl. A
    task.toml that does not parse, or a name that is no path in the folder, names the default
    here: load_task reports the problem."""
    try:
        data = tomllib.loads(toml.decode("utf-8")) if toml else {}
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return WORKLOADS_FILE
    table = data.get("workloads")
    name = table.get("file") if isinstance(table, dict) else None
    if isinstance(name, str) and data_path_problem(name) is None and name.endswith(".jsonl"):
        return name
    return WORKLOADS_FILE


def _workload_files(folder: Path, toml: bytes | None) -> dict[str, bytes]:
    """The workloads' file, where there is one, and the safetensors files its lines name, by
    their paths relative to the folder, which none of them may leave (a symlink out is
    refused, whatever the watched directory)."""
    name = workloads_file(toml)
    inside = folder.resolve()
    raw = _read_file(folder / name, WORKLOADS_LIMIT, inside, "the task folder")
    if raw is None:
        return {}
    files = {name: raw}
    total = 0
    for workload in parse_workloads(folder / name, raw):
        for path in workload.data_files:
            if path in files:
                continue
            content = _read_file(folder / path, DATA_FILE_LIMIT, inside, "the task folder")
            if content is None:
                raise TaskError(
                    f"{folder / name} line {workload.line}: {path}: no such file in the task folder"
                )
            total += len(content)
            if total > DATA_TOTAL_LIMIT:
                raise TaskError(
                    f"{folder / name}: the safetensors files it names hold more than "
                    f"{describe_size(DATA_TOTAL_LIMIT)} together (at {path})"
                )
            files[path] = content
    return files
