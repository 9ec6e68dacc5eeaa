"""`accelopt daemon --flashinfer-trace DIR`: DIR in Trace Apply's layout (definitions/,
solutions/, workloads/, traces/, blob/), holding the promoted kernel of every task that came
from FlashInfer-Bench (a task folder with its definition.json, as import-flashinfer writes it),
in step with the library's promotions and demotions (a failed re-verification demotes).

FlashInfer's Trace Apply (FLASHINFER_TRACE_PATH=DIR) and flashinfer-bench's `apply` read the
whole folder when they start, so it changes at once or not at all: DIR is a symbolic link to
a complete folder beside it (`.DIR.versions/<n>`), each sync writes a new one, checks it with
flashinfer_bench's loader (daemon.flashinfer.export), and swaps the link with one rename.
A reader holding the old folder open keeps it until the next sync removes it.

Imports flashinfer_bench and torch: the daemon loads it only where DIR is given.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Mapping
from pathlib import Path

import structlog

from daemon.flashinfer.importer import DEFINITION_FILE
from daemon.flashinfer.logged import export_logged
from daemon.flashinfer.package import FlashInferError
from nkibench.errors import TaskError
from nkibench.task.spec import load_task
from store.base import EventStore
from store.errors import BlobNotFound
from store.projections.library import LibraryState, Promotion

__all__ = ["TraceFolder"]

log = structlog.get_logger(__name__)

PROMOTIONS_FILE = ".accelopt-promotions.json"
"""In each version: the promotions it holds (task -> kernel and position), so that a sync
whose promotions did not change writes nothing."""


class TraceFolder:
    """The link DIR and the versions beside it."""

    def __init__(self, link: Path) -> None:
        if link.exists() and not link.is_symlink():
            raise FlashInferError(
                f"{link} exists and is no link accelopt made: --flashinfer-trace names a path "
                "accelopt keeps as a link to the folder it writes (give a new path)"
            )
        self.link = link
        self.versions = link.parent / f".{link.name}.versions"

    def held(self) -> dict[str, str]:
        """The promotions the folder the link points at holds (none: no folder yet)."""
        try:
            data = json.loads((self.link / PROMOTIONS_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def sync(
        self, current: Mapping[str, Promotion], state: LibraryState, store: EventStore
    ) -> list[str]:
        """Make DIR hold the promoted kernels of the FlashInfer-Bench tasks among `current`
        (the library folder's promotions, sync_library's answer); the tasks it holds. A task
        whose export fails is left out, with a warning."""
        promoted = {
            task: promotion
            for task, promotion in current.items()
            if task in state.revisions
            and (Path(state.revisions[task].task_dir) / DEFINITION_FILE).is_file()
        }
        wanted = {t: f"{p.kernel_hash}@{p.position}" for t, p in sorted(promoted.items())}
        if self.link.is_symlink() and self.held() == wanted:
            return list(wanted)
        self.versions.mkdir(parents=True, exist_ok=True)
        version = self.versions / str(time.time_ns())
        version.mkdir()
        held = {}
        for task, promotion in sorted(promoted.items()):
            if self._export(task, promotion, state, store, version):
                held[task] = wanted[task]
        (version / PROMOTIONS_FILE).write_text(json.dumps(held, indent=1), encoding="utf-8")
        staging = self.link.with_name(f".{self.link.name}.link")
        staging.unlink(missing_ok=True)
        staging.symlink_to(version.resolve(), target_is_directory=True)
        os.replace(staging, self.link)  # the swap: one rename
        for old in self.versions.iterdir():
            if old != version:
                shutil.rmtree(old, ignore_errors=True)
        log.info("flashinfer trace folder synced", folder=str(self.link), tasks=sorted(held))
        return list(held)

    def _export(
        self,
        task: str,
        promotion: Promotion,
        state: LibraryState,
        store: EventStore,
        version: Path,
    ) -> bool:
        try:
            spec = load_task(Path(state.revisions[task].task_dir))
            if spec.content_hash != promotion.task_source_hash:
                return False  # the folder changed since: its new revision is not promoted yet
            source = store.get_text(promotion.kernel_hash)
            origin = f"promoted candidate {promotion.candidate_id}"
            export_logged(store, spec, source, origin, version)
        except (FlashInferError, TaskError, BlobNotFound, OSError) as e:
            log.warning("flashinfer trace folder: task left out", task=task, reason=str(e))
            return False
        return True
