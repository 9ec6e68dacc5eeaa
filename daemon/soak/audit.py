"""After a soak, once the daemon has stopped: what its log, job table and own log lines say,
and whether the log still agrees with the folders on disk.

The last check is the one a leak test alone would miss: after hours of churn, every folder in
the watched directory should be what the log says it is (its current hash, valid or invalid,
or removed), or the daemon has quietly stopped serving a task.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from agents.search.ids import SEPARATOR
from daemon.watcher import folder_files
from nkibench.errors import TaskError
from nkibench.task.spec import folder_hash, load_task
from store.projections.library import LibraryProjection, LibraryState
from store.projections.runner import replay
from store.schema import events, jobs, projection_snapshots
from store.sql import SqlEventStore

__all__ = ["Audit", "audit_log", "disagreements", "log_messages"]


@dataclass
class Audit:
    by_type: dict[str, int]
    jobs: dict[str, int]
    """Rows of the job table by state."""
    reverify_jobs_done: int
    snapshots: int
    disagreements: list[str] = field(default_factory=list)


def audit_log(url: str, watch: Path, slots: list[str]) -> Audit:
    """Counts of the stopped daemon's log and job table, and where the library disagrees with
    the folders of `slots`."""
    store = SqlEventStore.open(url)
    try:
        with store.engine.connect() as connection:
            by_type: dict[str, int] = dict(
                connection.execute(
                    sa.select(events.c.type, sa.func.count()).group_by(events.c.type)
                )
                .tuples()
                .all()
            )
            states: dict[str, int] = dict(
                connection.execute(sa.select(jobs.c.state, sa.func.count()).group_by(jobs.c.state))
                .tuples()
                .all()
            )
            reverify = connection.execute(
                sa.select(sa.func.count()).where(
                    jobs.c.job_id.startswith(f"reverify{SEPARATOR}"), jobs.c.state == "done"
                )
            ).scalar_one()
            snapshots = connection.execute(
                sa.select(sa.func.count()).select_from(projection_snapshots)
            ).scalar_one()
        library = replay(store, LibraryProjection()).state
    finally:
        store.close()
    return Audit(
        by_type={str(k): int(v) for k, v in by_type.items()},
        jobs={str(k): int(v) for k, v in states.items()},
        reverify_jobs_done=int(reverify),
        snapshots=int(snapshots),
        disagreements=disagreements(library, watch, slots),
    )


def disagreements(library: LibraryState, watch: Path, slots: list[str]) -> list[str]:
    """Each slot whose folder the library does not show as it is on disk, and how."""
    found = []
    for slot in slots:
        folder = watch / slot
        record = library.tasks.get(slot)
        said = "absent" if record is None else f"{record.state} {str(record.source_hash)[:12]}"
        if not folder.is_dir():
            if record is not None and record.state != "removed":
                found.append(f"{slot}: gone from disk, the log says {said}")
            continue
        content_hash = folder_hash(folder_files(folder))
        try:
            load_task(folder)
            valid = True
        except TaskError:
            valid = False
        disk = f"{'valid' if valid else 'invalid'} {content_hash[:12]}"
        if (
            record is None
            or record.source_hash != content_hash
            or record.state == "removed"
            or (record.state == "invalid") == valid
        ):
            found.append(f"{slot}: on disk {disk}, the log says {said}")
    return found


def log_messages(path: Path) -> dict[str, Counter[str]]:
    """The daemon's log lines by level ('warning', 'error', ...) and message; lines that are
    not its JSON (a stray print, a crash) count under 'other' by their first 80 characters."""
    levels: dict[str, Counter[str]] = {}
    for line in path.read_text(errors="replace").splitlines():
        text = line.split(">", 1)[1] if line.startswith("<") else line
        try:
            entry: Any = json.loads(text)
            level, message = str(entry.get("level", "?")), str(entry.get("event", "?"))
        except (json.JSONDecodeError, AttributeError):
            level, message = "other", line[:80]
        levels.setdefault(level, Counter())[message] += 1
    return levels
