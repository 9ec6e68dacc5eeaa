"""Task revisions in the log, and on disk for the workers.

A revision is recorded as `KernelSourceChanged` with its files as blobs, keyed by folder and
hash so that the same revision is recorded once however often it is seen; an invalid one as
`TaskInvalid` with the loader's message; a vanished folder as `KernelRemoved`. Workers never
read the user's folder: they profile a copy of the exact revision, rebuilt from the blobs
under the state directory, so a job stays pinned to the files it was made for.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from events.catalog import KernelRemoved, KernelSourceChanged, TaskInvalid
from nkibench.errors import TaskError
from nkibench.task.spec import TASK_FILES, TaskSpec, folder_hash, load_task
from store.base import EventStore
from store.recorder import Recorder

__all__ = ["materialize", "record_invalid", "record_removed", "record_revision"]


def record_revision(recorder: Recorder, task: TaskSpec) -> bool:
    """Record the task's current revision; False if it was recorded before."""
    files = {
        name: (task.path / name).read_bytes() for name in TASK_FILES if (task.path / name).is_file()
    }
    if folder_hash(files) != task.content_hash:
        raise TaskError(f"{task.path}: the folder changed while it was being read; try again")
    event = KernelSourceChanged(
        task=task.name,
        task_dir=str(task.path),
        content_hash=task.content_hash,
        files={name: recorder.store.put_blob(content) for name, content in sorted(files.items())},
    )
    return recorder.record(
        f"task:{task.name}", event, key=f"source|{task.path}|{task.content_hash}"
    )


def record_invalid(
    recorder: Recorder, name: str, folder: str, content_hash: str, message: str
) -> bool:
    """Record that this revision of the folder does not load, and why."""
    file = next((f for f in TASK_FILES if f in message), None)
    event = TaskInvalid(
        task=name, task_dir=folder, content_hash=content_hash, file=file, message=message
    )
    return recorder.record(f"task:{name}", event, key=f"invalid|{folder}|{content_hash}")


def record_removed(recorder: Recorder, name: str, folder: str, last_hash: str) -> bool:
    event = KernelRemoved(task=name, task_dir=folder)
    return recorder.record(f"task:{name}", event, key=f"removed|{folder}|{last_hash}")


def materialize(store: EventStore, revision: KernelSourceChanged, root: Path) -> TaskSpec:
    """The task as recorded, in `root/<hash>/<task>` (written once, atomically)."""
    folder = root / revision.content_hash / revision.task
    if not folder.is_dir():
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=folder.parent))
        try:
            for name, blob in revision.files.items():
                (staging / name).write_bytes(store.get_blob(blob))
            os.replace(staging, folder)
        except OSError:
            shutil.rmtree(staging, ignore_errors=True)
            if not folder.is_dir():
                raise
    task = load_task(folder)
    if task.content_hash != revision.content_hash:
        raise TaskError(f"{folder}: does not hash to its revision {revision.content_hash[:12]}")
    return task
