"""What the daemon says about itself: one status line (systemd's STATUS=, the log) and the
live table on a terminal, both from the portfolio view; the sandbox is named in both when it
is not bubblewrap, so an unconfined daemon never looks like a confined one."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from rich.table import Table

from daemon.coordinator.portfolio import PortfolioView
from nkibench.sandbox.isolation import Isolation

__all__ = ["status_line", "status_table"]


def status_line(
    view: PortfolioView,
    *,
    searching: Collection[str],
    jobs: Mapping[Any, int],
    agents: bool,
    position: int,
    isolation: Isolation,
    paused: str | None = None,
) -> str:
    tasks = [v for v in view.tasks.values() if not v.removed]
    invalid = sum(1 for v in tasks if v.invalid)
    line = (
        f"{len(tasks)} tasks ({invalid} invalid), {len(searching)} searching, "
        f"jobs {jobs.get('pending', 0)} pending / {jobs.get('running', 0)} running / "
        f"{jobs.get('failed', 0)} failed, "
        f"{'agents on' if agents else 'agents idle (no LLM endpoint)'}, log at {position}"
    )
    if not isolation.contained:
        line += f", UNSAFE SANDBOX ({isolation.reason})"
    if paused is not None:
        line += f", NEW JOBS PAUSED: {paused}"
    return line


def status_table(view: PortfolioView, *, title: str, searching: Collection[str]) -> Table:
    """One row per task."""
    table = Table(title=title, title_justify="left", expand=False)
    for column in ("task", "state", "baseline ms", "best speedup", "% of peak", "searches"):
        table.add_column(column, justify="left" if column in ("task", "state") else "right")
    for name, task in sorted(view.tasks.items()):
        if task.removed:
            continue
        state = (
            "invalid"
            if task.invalid
            else "searching"
            if name in searching
            else task.last_reason or "waiting"
        )
        table.add_row(
            name,
            state,
            f"{task.baseline_ms:.4g}" if task.baseline_ms else "-",
            f"{task.last_speedup:.2f}x" if task.last_reason else "-",
            f"{task.pct_of_peak:.1f}" if task.pct_of_peak is not None else "-",
            str(task.searches),
        )
    return table
