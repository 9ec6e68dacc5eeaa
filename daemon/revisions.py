"""Task revisions in the log, and on disk for the workers.

A revision is recorded as `KernelSourceChanged` with its files as blobs, an invalid one as
`TaskInvalid` with the loader's message, a vanished folder as `KernelRemoved`. Each record's
idempotency key names the folder, what it holds now and the folder's record before it (its
hash or "removed", and its log position; "none" for a folder's first record): the same
transition seen twice (a hint and a rescan, a restart after a crash) is recorded once, while a
folder that goes back to content it held before (after an invalid save, a removal, or an
option that made it invalid) is recorded again. The hash alone would refuse that return, and
the previous hash alone would refuse the second return of a folder that goes back and forth.

Workers never read the user's folder: they profile a copy of the exact revision, rebuilt from
the blobs under the state directory, so a job stays pinned to the files it was made for. A copy
is a cache of the log: the daemon removes those of revisions no longer current once unused for
a while (`prune_copies`), and any is made again when asked for.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Collection, Mapping
from pathlib import Path

from events.base import Event
from events.catalog import KernelRemoved, KernelSourceChanged, TaskInvalid
from nkibench.errors import TaskError
from nkibench.task.files import TASK_FILES, folder_hash, name_problem, read_task_files
from nkibench.task.spec import TaskSpec, load_task
from nkibench.task.workloads import WORKLOADS_FILE, data_path_problem
from store.base import EventStore
from store.projections.library import FolderRecord
from store.recorder import Recorder

__all__ = [
    "after",
    "materialize",
    "prune_copies",
    "record_invalid",
    "record_removed",
    "record_revision",
    "record_task",
]

CONTENT_HASH = re.compile(r"[0-9a-f]{64}")


def after(previous: FolderRecord | None) -> str:
    """The part of a folder's next key that names its record before: `<hash>@<position>`,
    `removed@<position>`, or `none`."""
    if previous is None:
        return "none"
    held = previous.content_hash if previous.kind != "removed" else "removed"
    return f"{held}@{previous.position}"


def _record(recorder: Recorder, name: str, event: Event, key: str) -> int:
    return recorder.append(f"task:{name}", event, key).last_position


def record_revision(
    recorder: Recorder, task: TaskSpec, files: Mapping[str, bytes], *, previous: str
) -> int:
    """Record the task's revision from `files`, the bytes it was loaded from (never read
    again: what was validated is what is recorded); its position in the log."""
    if folder_hash(files) != task.content_hash:
        raise TaskError(f"{task.path}: the files are not those the task was loaded from")
    names = sorted(files)
    hashes = recorder.store.put_blobs(files[name] for name in names)
    event = KernelSourceChanged(
        task=task.name,
        task_dir=str(task.path),
        content_hash=task.content_hash,
        files=dict(zip(names, hashes, strict=True)),
        dialect=task.dialect,
    )
    key = f"source|{task.path}|{task.content_hash}|after:{previous}"
    return _record(recorder, task.name, event, key)


def record_task(recorder: Recorder, task: TaskSpec, last: FolderRecord | None) -> bool:
    """Record the revision of a folder loaded outside the watcher (`accelopt optimize`),
    unless it is the folder's last record (`last`, from the library projection) already;
    True if it was recorded."""
    if last is not None and last.kind == "source" and last.content_hash == task.content_hash:
        return False
    files = read_task_files(task.path)
    if folder_hash(files) != task.content_hash:
        raise TaskError(f"{task.path}: the folder changed while it was being read; try again")
    record_revision(recorder, task, files, previous=after(last))
    return True


def record_invalid(
    recorder: Recorder,
    name: str,
    folder: str,
    content_hash: str,
    message: str,
    *,
    previous: str,
) -> int:
    """Record that this revision of the folder does not load, or is not this daemon's to
    run, and why; its position in the log."""
    file = next((f for f in (*TASK_FILES, WORKLOADS_FILE) if f in message), None)
    event = TaskInvalid(
        task=name, task_dir=folder, content_hash=content_hash, file=file, message=message
    )
    key = f"invalid|{folder}|{content_hash}|after:{previous}"
    return _record(recorder, name, event, key)


def record_removed(recorder: Recorder, name: str, folder: str, *, previous: str) -> int:
    """Record that the folder no longer holds task `name` (it is gone, or took another
    name); its position in the log."""
    event = KernelRemoved(task=name, task_dir=folder)
    return _record(recorder, name, event, f"removed|{folder}|after:{previous}")


def materialize(store: EventStore, revision: KernelSourceChanged, root: Path) -> TaskSpec:
    """The task as recorded, in `root/<hash>/<task>` (written once, atomically).

    The name and hash become path components, so both are checked first: a log written
    before task names were validated may hold a name like `../..`."""
    problem = name_problem(revision.task)
    if problem is not None:
        raise TaskError(f"the recorded task {revision.task!r} cannot be rebuilt: {problem}")
    if not CONTENT_HASH.fullmatch(revision.content_hash):
        raise TaskError(f"{revision.task}: {revision.content_hash!r} is not a content hash")
    folder = root / revision.content_hash / revision.task
    if folder.is_dir():
        os.utime(folder.parent)  # in use: `prune_copies` goes by the last use
    else:
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=folder.parent))
        try:
            for name, blob in revision.files.items():
                # a workloads' or safetensors file lies in the folder, perhaps in a subfolder
                if name not in TASK_FILES and data_path_problem(name) is not None:
                    raise TaskError(f"{revision.task}: {name!r} is not a task file")
                (staging / name).parent.mkdir(parents=True, exist_ok=True)
                (staging / name).write_bytes(store.get_blob(blob))
            os.replace(staging, folder)
        except (OSError, TaskError):
            shutil.rmtree(staging, ignore_errors=True)
            if not folder.is_dir():
                raise
    task = load_task(folder)
    if task.content_hash != revision.content_hash:
        raise TaskError(f"{folder}: does not hash to its revision {revision.content_hash[:12]}")
    return task


def prune_copies(root: Path, *, keep: Collection[str], unused_s: float, now: float) -> int:
    """Remove the copies of revisions under `root` (one folder per content hash) that are not
    in `keep` (the current revisions) and were last used (`materialize`) `unused_s` seconds or
    more before `now` (a Unix time); how many were removed. A search or a job of an old
    revision stops once it is no longer current, so an old copy is not used for long."""
    try:
        folders = [entry for entry in os.scandir(root) if CONTENT_HASH.fullmatch(entry.name)]
    except FileNotFoundError:
        return 0
    removed = 0
    for folder in folders:
        if folder.name in keep or not folder.is_dir(follow_symlinks=False):
            continue
        if now - folder.stat(follow_symlinks=False).st_mtime < unused_s:
            continue
        shutil.rmtree(folder.path, ignore_errors=True)
        removed += not os.path.lexists(folder.path)
    return removed
