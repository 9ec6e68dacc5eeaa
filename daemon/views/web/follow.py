"""The projections the live pages show, kept in step with the log in this process's memory.

The pages only read: nothing here writes a checkpoint, a snapshot or an event. Each look folds
the events recorded since the last one, so a request costs what the log grew by. Whoever reads
the states holds `lock` meanwhile: a fold on another request's thread changes them in place.
Each of the report page's sections keeps the position of its last change (`versions`), so
that an open page fetches only what changed.
"""

from __future__ import annotations

import threading
from typing import Any

from daemon.views.report.model import ReportProjection, ReportState
from daemon.views.report.sections import SectionVersions
from events.codec import decode
from store.base import EventStore
from store.projections.library import LibraryProjection, LibraryState

__all__ = ["Follower"]


class Follower:
    def __init__(self, store: EventStore) -> None:
        self.store = store
        self._library = LibraryProjection()
        self._report = ReportProjection()
        self.library: LibraryState = self._library.initial()
        self.report: ReportState = self._report.initial()
        self.versions = SectionVersions()
        self.position = 0
        self.lock = threading.RLock()

    def catch_up(self) -> int:
        """Fold what was recorded since the last look; the position folded to."""
        with self.lock:
            for stored in self.store.read_all(after=self.position):
                envelope: Any = decode(stored)
                self.library = self._library.apply(self.library, envelope)
                tasks = len(self.report.tasks)
                self.report = self._report.apply(self.report, envelope)
                new_task = len(self.report.tasks) != tasks
                self.versions.note(envelope.event, stored.position, new_task=new_task)
                self.position = stored.position
            return self.position
