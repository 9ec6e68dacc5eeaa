"""The portfolio scheduler: which tasks get the next searches (and so the LLM calls and the
device slots).

A pure fold of the log into one view per task, and a pure choice over the views:
- an unfinished search resumes first (work already paid for);
- then tasks whose current revision has no search yet (changed tasks first);
- then, by expected gain, tasks whose last search finished and has rested: headroom to peak
  (1 - % of peak) * the task's weight * the speedup its last search found.
A plateaued task rests for a while; a task whose search ran out of budget, or whose own kernel
fails, waits for a change; a search that ran without agents is redone once they exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from events.base import Event
from events.catalog import (
    KernelRemoved,
    KernelSourceChanged,
    ProfileRecorded,
    SearchFinished,
    SearchStarted,
    TaskInvalid,
)

__all__ = ["PortfolioView", "TaskView", "choose"]


@dataclass
class TaskView:
    task: str
    revision: str | None = None
    removed: bool = False
    invalid: bool = False
    searches: int = 0
    """Searches of the current revision."""
    running_search: str | None = None
    """An unfinished search of the current revision."""
    last_reason: str | None = None
    last_finished_at: datetime | None = None
    last_with_agents: bool = True
    last_speedup: float = 1.0
    pct_of_peak: float | None = None
    baseline_ms: float | None = None


@dataclass
class PortfolioView:
    tasks: dict[str, TaskView] = field(default_factory=dict)
    agents: dict[str, bool] = field(default_factory=dict)
    """Search id → whether it ran with agents."""

    def apply(self, event: Event, recorded_at: datetime) -> None:
        name = getattr(event, "task", None)
        if name is None:
            return
        view = self.tasks.setdefault(name, TaskView(name))
        if isinstance(event, KernelSourceChanged | TaskInvalid):
            if view.revision != event.content_hash:
                self.tasks[name] = view = TaskView(name, revision=event.content_hash)
            view.removed = False
            view.invalid = isinstance(event, TaskInvalid)
        elif isinstance(event, KernelRemoved):
            view.removed = True
        elif isinstance(event, SearchStarted) and event.task_source_hash == view.revision:
            view.searches += 1
            view.running_search = event.search_id
            self.agents[event.search_id] = bool(event.models)
        elif isinstance(event, SearchFinished) and event.search_id == view.running_search:
            view.running_search = None
            view.last_reason = event.reason
            view.last_finished_at = recorded_at
            view.last_with_agents = self.agents.get(event.search_id, True)
            if view.baseline_ms and event.best_latency_ms:
                view.last_speedup = view.baseline_ms / event.best_latency_ms
        elif isinstance(event, ProfileRecorded) and event.task_source_hash == view.revision:
            if event.purpose == "baseline" and event.correct and event.latency_ms:
                view.baseline_ms = event.latency_ms
            if event.correct and event.pct_of_peak is not None:
                view.pct_of_peak = max(view.pct_of_peak or 0.0, event.pct_of_peak)


def _score(view: TaskView, weight: float) -> float:
    headroom = 1.0 - min(view.pct_of_peak or 0.0, 100.0) / 100.0
    return headroom * weight * view.last_speedup


def choose(
    view: PortfolioView,
    *,
    running: set[str],
    slots: int,
    now: datetime,
    rest_s: float,
    agents: bool,
    weights: dict[str, float],
) -> list[str]:
    """The tasks to start searches for now (at most `slots` minus the running ones)."""
    ranked: list[tuple[int, float, str]] = []
    for name, task in view.tasks.items():
        if name in running or task.removed or task.invalid or task.revision is None:
            continue
        if task.running_search is not None:
            ranked.append((0, 0.0, name))
        elif task.searches == 0:
            ranked.append((1, 0.0, name))
        elif task.last_reason == "completed" and not task.last_with_agents and agents:
            ranked.append((1, 0.0, name))  # profiled without agents: now they exist
        elif (
            agents
            and task.last_reason in ("completed", "plateau")
            and task.last_finished_at is not None
            and (now - task.last_finished_at).total_seconds() >= rest_s
        ):
            ranked.append((2, -_score(task, weights.get(name, 1.0)), name))
    ranked.sort()
    return [name for _, _, name in ranked[: max(0, slots - len(running))]]
