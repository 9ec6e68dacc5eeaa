"""Projections: the runner that keeps them persisted, replays "as of", and the library."""

from store.projections.library import (
    LibraryProjection,
    LibraryState,
    PlatformRecord,
    Promotion,
    Revision,
    TaskRecord,
)
from store.projections.runner import (
    ProjectionRunner,
    Replay,
    SkippedEvent,
    fold_steps,
    replay,
    resolve_until,
)

__all__ = [
    "LibraryProjection",
    "LibraryState",
    "PlatformRecord",
    "ProjectionRunner",
    "Promotion",
    "Replay",
    "Revision",
    "SkippedEvent",
    "TaskRecord",
    "fold_steps",
    "replay",
    "resolve_until",
]
