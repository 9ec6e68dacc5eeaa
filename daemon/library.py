"""The library folder: each task's promoted kernel, with where it came from.

`<state dir>/library/<task>/kernel.py` holds the kernel promoted for the task's current
revision, under a provenance header (candidate, the position of the promotion in the log,
speedup, backend and hardware, latency kind). A demotion, a new revision or the task's
removal takes the file away. The user's own files are never written.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from events.base import Event
from events.catalog import KernelDemoted, KernelPromoted, KernelRemoved, KernelSourceChanged
from events.codec import decode
from store.base import EventStore

__all__ = ["Promotion", "export_text", "promotions", "sync_library"]

KINDS: list[type[Event]] = [KernelSourceChanged, KernelPromoted, KernelDemoted, KernelRemoved]


@dataclass(frozen=True)
class Promotion:
    event: KernelPromoted
    position: int
    recorded_at: str


def promotions(store: EventStore) -> dict[str, Promotion]:
    """Task → its current promotion (for the task's current revision, not demoted)."""
    revision: dict[str, str] = {}
    current: dict[str, Promotion] = {}
    for stored in store.read_all(types=[k.type_name() for k in KINDS]):
        event = decode(stored).event
        if isinstance(event, KernelSourceChanged):
            if revision.get(event.task) != event.content_hash:
                current.pop(event.task, None)
            revision[event.task] = event.content_hash
        elif isinstance(event, KernelPromoted):
            if revision.get(event.task) == event.task_source_hash:
                current[event.task] = Promotion(
                    event, stored.position, stored.recorded_at.isoformat()
                )
        elif isinstance(event, KernelDemoted):
            promoted = current.get(event.task)
            if promoted is not None and promoted.event.candidate_id == event.candidate_id:
                del current[event.task]
        elif isinstance(event, KernelRemoved):
            current.pop(event.task, None)
            revision.pop(event.task, None)
    return current


def export_text(store: EventStore, promotion: Promotion) -> str:
    e = promotion.event
    header = [
        f"# accelopt: the promoted kernel of task {e.task}",
        f"# candidate {e.candidate_id}, promoted at event position {promotion.position} "
        f"({promotion.recorded_at})",
        f"# {e.speedup:.3f}x faster than the task's own kernel: {e.latency_ms:.6g} ms against "
        f"{e.baseline_latency_ms:.6g} ms, {e.latency_kind} on {e.backend} ({e.target})",
        f"# task revision {e.task_source_hash[:12]}, kernel sha256 {e.kernel_hash[:12]}",
        "",
    ]
    return "\n".join(header) + store.get_text(e.kernel_hash)


def sync_library(store: EventStore, library: Path) -> dict[str, Promotion]:
    """Make the folder match the log: write new promotions, drop what is no longer promoted."""
    current = promotions(store)
    library.mkdir(parents=True, exist_ok=True)
    for task, promotion in current.items():
        target = library / task / "kernel.py"
        text = export_text(store, promotion)
        if target.is_file() and target.read_text(encoding="utf-8") == text:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = target.with_name(".kernel.py.tmp")
        staging.write_text(text, encoding="utf-8")
        os.replace(staging, target)
    for folder in library.iterdir():
        if folder.is_dir() and folder.name not in current:
            shutil.rmtree(folder)
    return current
