"""Recording a task folder's revision: `KernelSourceChanged` with its files as blobs, keyed so
that the same revision of the same folder is recorded once however often it is seen."""

from __future__ import annotations

from agents.recorder import Recorder
from events.catalog import KernelSourceChanged
from nkibench.errors import TaskError
from nkibench.task import TASK_FILES, TaskSpec, folder_hash

__all__ = ["record_revision"]


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
