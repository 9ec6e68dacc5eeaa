"""After a soak, once the daemon has stopped: what its log, job table and own log lines say,
and whether the log kept up with the folders on disk.

The last two checks are what a leak test alone would miss: every state a folder was left in
for a few seconds should have reached the log (its hash, valid or invalid, or its removal),
and at the end every folder should be what the library says it is; otherwise the daemon has
quietly stopped serving a task.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from agents.search.ids import SEPARATOR
from daemon.bench.soak.churn import Action, SlotState
from events.catalog import KernelRemoved, KernelSourceChanged, TaskInvalid
from nkibench.errors import TaskError
from nkibench.task.files import folder_hash, read_task_files
from nkibench.task.spec import load_task
from store.projections.library import LibraryProjection, LibraryState
from store.projections.runner import replay
from store.schema import events, jobs, projection_snapshots
from store.sql import SqlEventStore

__all__ = [
    "Applied",
    "Audit",
    "audit_log",
    "disagreements",
    "folder_state",
    "log_messages",
    "missed_changes",
]

SEEN_WITHIN_S = 3.0
"""A state a folder keeps for less than this may be missed by design: the watcher records a
folder after 0.4 s of quiet, and a save that is undone before then never happened to it."""
RECORDED = {
    KernelSourceChanged.type_name(): "valid",
    TaskInvalid.type_name(): "invalid",
    KernelRemoved.type_name(): "absent",
}


def folder_state(folder: Path) -> tuple[SlotState, str | None]:
    """What the daemon should record for a folder now: absent, or valid or invalid with its
    content hash."""
    if not folder.is_dir():
        return "absent", None
    content_hash = folder_hash(read_task_files(folder))
    try:
        load_task(folder)
    except TaskError:
        return "broken", content_hash
    return "valid", content_hash


@dataclass(frozen=True)
class Applied:
    """A churn action as carried out: when (epoch seconds) and what it left on disk."""

    action: Action
    at: float
    state: SlotState
    content_hash: str | None


@dataclass
class Audit:
    by_type: dict[str, int]
    jobs: dict[str, int]
    """Rows of the job table by state."""
    reverify_jobs_done: int
    snapshots: int
    disagreements: list[str] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)


def audit_log(
    url: str, watch: Path, slots: list[str], applied: list[Applied], stopped_at: float
) -> Audit:
    """Counts of the stopped daemon's log and job table, the folder states it missed, and
    where the library disagrees with the folders of `slots`."""
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
        streams = {
            slot: [
                (e.recorded_at.timestamp(), RECORDED[e.type], e.data.get("content_hash"))
                for e in store.read_stream(f"task:{slot}")
                if e.type in RECORDED
            ]
            for slot in slots
        }
    finally:
        store.close()
    return Audit(
        by_type={str(k): int(v) for k, v in by_type.items()},
        jobs={str(k): int(v) for k, v in states.items()},
        reverify_jobs_done=int(reverify),
        snapshots=int(snapshots),
        disagreements=disagreements(library, watch, slots),
        missed=missed_changes(streams, applied, stopped_at),
    )


def missed_changes(
    streams: dict[str, list[tuple[float, str, str | None]]],
    applied: list[Applied],
    stopped_at: float,
) -> list[str]:
    """Each folder state, kept at least `SEEN_WITHIN_S`, that the log did not show by the
    time the folder changed again (or the daemon was stopped). `streams`: per slot, its
    recorded (epoch seconds, "valid" | "invalid" | "absent", content hash), in order."""
    missed = []
    for i, done in enumerate(applied):
        later = next((a for a in applied[i + 1 :] if a.action.slot == done.action.slot), None)
        until = later.at if later is not None else stopped_at
        if until - done.at < SEEN_WITHIN_S:
            continue
        shown = [(state, h) for at, state, h in streams.get(done.action.slot, []) if at <= until]
        expected = ("invalid" if done.state == "broken" else done.state, done.content_hash)
        last = shown[-1] if shown else ("nothing", None)
        if last[0] != expected[0] or (expected[0] != "absent" and last[1] != expected[1]):
            missed.append(
                f"{done.action.slot}: {done.action.kind} #{done.action.serial} at "
                f"{datetime.fromtimestamp(done.at, UTC):%H:%M:%S} left it {expected[0]} "
                f"{str(expected[1])[:12]}; {until - done.at:.0f} s later the log still said "
                f"{last[0]} {str(last[1])[:12]}"
            )
    return missed


def disagreements(library: LibraryState, watch: Path, slots: list[str]) -> list[str]:
    """Each slot whose folder the library does not show as it is on disk, and how."""
    found = []
    for slot in slots:
        state, content_hash = folder_state(watch / slot)
        record = library.tasks.get(slot)
        said = "absent" if record is None else f"{record.state} {str(record.source_hash)[:12]}"
        if state == "absent":
            if record is not None and record.state != "removed":
                found.append(f"{slot}: gone from disk, the log says {said}")
            continue
        if (
            record is None
            or record.source_hash != content_hash
            or record.state == "removed"
            or (record.state == "invalid") != (state == "broken")
        ):
            disk = "valid" if state == "valid" else "invalid"
            found.append(f"{slot}: on disk {disk} {str(content_hash)[:12]}, the log says {said}")
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
