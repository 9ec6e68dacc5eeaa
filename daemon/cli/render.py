"""Turning read models into what the CLI prints: JSON documents or tables for people.

Every latency printed carries its kind: (m) measured on hardware, (e) estimated by a model.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import click
from rich.console import Console
from rich.table import Table

from daemon.views.report.view import latency_text
from events.envelope import StoredEvent
from store.projections.library import LibraryState, PlatformRecord

__all__ = [
    "cell",
    "daemon_line",
    "emit_json",
    "event_json",
    "library_json",
    "library_table",
    "parse_until",
    "print_table",
    "replaced_whole",
    "stored_event_line",
    "write_file",
]


@contextmanager
def replaced_whole(out: Path) -> Iterator[TextIO]:
    """A handle whose text becomes `out` when the block ends, whole or not at all: a reader
    never sees half a file, and a block that fails leaves `out` as it was."""
    staging = out.with_name(f".{out.name}.tmp")
    try:
        with staging.open("w", encoding="utf-8") as handle:
            yield handle
        os.replace(staging, out)
    except OSError as e:
        raise click.FileError(str(out), hint=e.strerror or str(e)) from None
    finally:
        staging.unlink(missing_ok=True)


def write_file(out: Path, text: str) -> None:
    """`text` into `out` whole or not at all."""
    with replaced_whole(out) as handle:
        handle.write(text)


def emit_json(value: Any) -> None:
    """One JSON document on stdout (non-JSON values, such as times, as strings)."""
    click.echo(json.dumps(value, ensure_ascii=False, default=str))


def event_json(stored: StoredEvent) -> dict[str, Any]:
    return {
        "position": stored.position,
        "event_id": stored.event_id,
        "stream_id": stored.stream_id,
        "stream_version": stored.stream_version,
        "type": stored.type,
        "schema_version": stored.schema_version,
        "recorded_at": stored.recorded_at.isoformat(),
        "idempotency_key": stored.idempotency_key,
        "data": stored.data,
        "metadata": stored.metadata,
    }


def stored_event_line(stored: StoredEvent, width: int = 120) -> str:
    head = (
        f"{stored.position:>8}  {stored.recorded_at:%Y-%m-%d %H:%M:%S}  "
        f"{stored.type} v{stored.schema_version}  {stored.stream_id}@{stored.stream_version}"
    )
    summary = ", ".join(f"{k}={v}" for k, v in sorted(stored.data.items()) if _short(v))
    line = f"{head}  {summary}"
    return line if len(line) <= width else line[: width - 1] + "…"


def _short(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) and len(str(value)) <= 40


def _platform_json(key: str, p: PlatformRecord) -> dict[str, Any]:
    return {
        "platform": key,
        "backend": p.backend,
        "target": p.target,
        "latency_kind": p.latency_kind,
        "baseline_ms": p.baseline_ms,
        "best_ms": p.best_ms,
        "speedup": p.speedup,
        "best_candidate_id": p.best_candidate_id,
        "promoted_candidate_id": p.promoted_candidate_id,
        "promoted_ms": p.promoted_ms,
        "profiles": p.profiles,
        "failed_profiles": p.failed_profiles,
        "agent_profiles": p.agent_profiles,
        "best_by": p.best_by,
        "promoted_by": p.promoted_by,
    }


def library_json(state: LibraryState) -> list[dict[str, Any]]:
    return [
        {
            "task": t.task,
            "task_dir": t.task_dir,
            "state": t.state,
            "revision": t.revision,
            "dialect": _dialect(state, t.task),
            "source_hash": t.source_hash,
            "error": t.error,
            "updated_position": t.updated_position,
            "updated_at": t.updated_at,
            "platforms": [_platform_json(k, p) for k, p in sorted(t.platforms.items())],
        }
        for _, t in sorted(state.tasks.items())
    ]


def _ms(value: float | None, kind: str | None) -> str:
    return latency_text(value, kind, missing="-")


def _by(agent: str | None) -> str:
    """Whose kernel a latency is, where an outside agent's (`accelopt mcp`)."""
    return f" by agent {agent}" if agent else ""


def _dialect(state: LibraryState, task: str) -> str | None:
    """The kernel language of the task's current revision, as recorded."""
    revision = state.revisions.get(task)
    return revision.dialect if revision is not None else None


def library_table(state: LibraryState, *, title: str) -> Table:
    table = Table(title=title, title_justify="left")
    columns = ("task", "dialect", "state", "rev", "platform", "baseline", "best", "speedup")
    for column in (*columns, "promoted", "agent profiles"):
        table.add_column(column, justify="right" if column in ("rev", "speedup") else "left")
    for _, task in sorted(state.tasks.items()):
        state_text = task.state if task.error is None else f"{task.state}: {task.error}"
        dialect = _dialect(state, task.task) or "-"
        if not task.platforms:
            table.add_row(
                task.task, dialect, state_text, str(task.revision), "-", "-", "-", "-", "-", "-"
            )
        for key, p in sorted(task.platforms.items()):
            table.add_row(
                task.task,
                dialect,
                state_text,
                str(task.revision),
                key,
                _ms(p.baseline_ms, p.latency_kind),
                _ms(p.best_ms, p.latency_kind) + _by(p.best_by),
                f"{p.speedup:.2f}x" if p.speedup else "-",
                _ms(p.promoted_ms, p.latency_kind) + _by(p.promoted_by),
                str(p.agent_profiles),
            )
    return table


PIPED_WIDTH = 200
"""Columns of a table written to a file or a pipe (rich would assume 80 and truncate)."""


def cell(value: float | None, spec: str) -> str:
    """A table cell: the value formatted, or "-" where there is none."""
    return "-" if value is None else format(value, spec)


def print_table(table: Table) -> None:
    width = None if sys.stdout.isatty() else PIPED_WIDTH
    Console(soft_wrap=False, width=width).print(table)


def parse_until(text: str) -> int | datetime:
    """A position (digits) or an ISO-8601 time; a time without a zone is taken as UTC."""
    if text.isdigit():
        return int(text)
    moment = datetime.fromisoformat(text)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def daemon_line(host: str, daemon: dict[str, Any]) -> str:
    """One host's last daemon; a daemon without the OS sandbox is said so first."""
    state = (
        f"stopped at {daemon['stopped_at']} ({daemon['stop_reason']})"
        if daemon["stopped_at"]
        else "running (or killed)"
    )
    warning = "WARNING: NO OS SANDBOX: " if daemon["sandbox"].startswith("UNSAFE") else ""
    return (
        f"{warning}daemon on {host}: pid {daemon['pid']}, {daemon['backend']} backend, "
        f"started {daemon['started_at']}, {state}; kernels in {daemon['sandbox']}"
    )
