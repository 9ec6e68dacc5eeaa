"""The portfolio scheduler: which tasks get the next searches (and so the LLM calls and the
device slots).

A projection of the log into one view per task (`PortfolioProjection`, run by the daemon's
projection runners with checkpoints like the library), and a pure choice over the views:
- an unfinished search resumes first (work already paid for);
- then tasks whose current revision has no search yet (changed tasks first);
- then, by expected gain, tasks whose last search finished and has rested: headroom to peak
  (1 - % of peak) * the task's weight * the speedup its last search found.
A plateaued task rests for a while; a task whose search ran out of budget, or whose own kernel
fails, waits for a change; a search that ran without agents is redone once they exist.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from events.base import Event
from events.catalog import (
    KernelRemoved,
    KernelSourceChanged,
    ProfileRecorded,
    SearchFinished,
    SearchStarted,
    TaskInvalid,
)
from events.envelope import Envelope

__all__ = ["PortfolioProjection", "PortfolioView", "TaskView", "choose"]


@dataclass
class TaskView:
    task: str
    revision: str | None = None
    task_dir: str | None = None
    """The folder that holds the task's name (the library's rule: the first to claim it)."""
    removed: bool = False
    invalid: bool = False
    searches: int = 0
    """Searches of the current revision."""
    running_search: str | None = None
    """An unfinished search of the current revision."""
    running_with_agents: bool = True
    """Whether `running_search` runs with agents (it becomes `last_with_agents`)."""
    last_reason: str | None = None
    last_finished_at: datetime | None = None
    last_with_agents: bool = True
    last_speedup: float = 1.0
    pct_of_peak: float | None = None
    baseline_ms: float | None = None


@dataclass
class PortfolioView:
    tasks: dict[str, TaskView] = field(default_factory=dict)
    """One view per task name ever recorded: nothing is kept per search, so the view grows
    with the tasks, never with the searches."""


Handler = Callable[[PortfolioView, Envelope[Any]], None]


class PortfolioProjection:
    """Folds task revisions, searches and profiles into the portfolio view.

    A revision is any hash recorded for the folder, loadable or not: a new one starts a
    fresh view (no searches yet), so an edited task is searched again first. A record of a
    folder other than the one holding the task's name changes nothing (as in the library
    projection): it would restart the task's searches for a revision never searched."""

    name = "portfolio"
    version = "3-running-agents"
    """3: whether a search runs with agents is kept with the running search, where a map of
    every search ever started kept it."""

    def __init__(self) -> None:
        self._handlers: dict[type[Event], Handler] = {
            KernelSourceChanged: self._source_changed,
            TaskInvalid: self._invalid,
            KernelRemoved: self._removed,
            SearchStarted: self._started,
            SearchFinished: self._finished,
            ProfileRecorded: self._profiled,
        }

    def initial(self) -> PortfolioView:
        return PortfolioView()

    def apply(self, state: PortfolioView, envelope: Envelope[Event]) -> PortfolioView:
        handler = self._handlers.get(type(envelope.event))
        if handler is not None:
            handler(state, envelope)
        return state

    def dump(self, state: PortfolioView) -> dict[str, Any]:
        tasks = {}
        for name, view in sorted(state.tasks.items()):
            raw = asdict(view)
            if view.last_finished_at is not None:
                raw["last_finished_at"] = view.last_finished_at.isoformat()
            tasks[name] = raw
        return {"tasks": tasks}

    def load(self, data: dict[str, Any]) -> PortfolioView:
        tasks = {}
        for name, raw in data["tasks"].items():
            finished = raw["last_finished_at"]
            when = None if finished is None else datetime.fromisoformat(finished)
            tasks[name] = TaskView(**{**raw, "last_finished_at": when})
        return PortfolioView(tasks)

    # --- handlers ----------------------------------------------------------------------------

    @staticmethod
    def _view(state: PortfolioView, name: str) -> TaskView:
        return state.tasks.setdefault(name, TaskView(name))

    @staticmethod
    def _held_by_another(view: TaskView | None, task_dir: str) -> bool:
        return (
            view is not None
            and not view.removed
            and view.task_dir is not None
            and view.task_dir != task_dir
        )

    def _revision(
        self, state: PortfolioView, name: str, task_dir: str, content_hash: str, invalid: bool
    ) -> None:
        if self._held_by_another(state.tasks.get(name), task_dir):
            return
        view = self._view(state, name)
        if view.revision != content_hash:
            state.tasks[name] = view = TaskView(name, revision=content_hash)
        view.task_dir = task_dir
        view.removed = False
        view.invalid = invalid

    def _source_changed(
        self, state: PortfolioView, envelope: Envelope[KernelSourceChanged]
    ) -> None:
        e = envelope.event
        self._revision(state, e.task, e.task_dir, e.content_hash, invalid=False)

    def _invalid(self, state: PortfolioView, envelope: Envelope[TaskInvalid]) -> None:
        e = envelope.event
        self._revision(state, e.task, e.task_dir, e.content_hash, invalid=True)

    def _removed(self, state: PortfolioView, envelope: Envelope[KernelRemoved]) -> None:
        e = envelope.event
        view = state.tasks.get(e.task)
        if view is None or view.task_dir in (None, e.task_dir):
            self._view(state, e.task).removed = True

    def _started(self, state: PortfolioView, envelope: Envelope[SearchStarted]) -> None:
        e = envelope.event
        view = self._view(state, e.task)
        if e.task_source_hash != view.revision:
            return  # a search of an older revision
        view.searches += 1
        view.running_search = e.search_id
        view.running_with_agents = bool(e.models)

    def _finished(self, state: PortfolioView, envelope: Envelope[SearchFinished]) -> None:
        e = envelope.event
        view = self._view(state, e.task)
        if e.search_id != view.running_search:
            return
        view.running_search = None
        view.last_reason = e.reason
        view.last_finished_at = envelope.recorded_at
        view.last_with_agents = view.running_with_agents
        if view.baseline_ms and e.best_latency_ms:
            view.last_speedup = view.baseline_ms / e.best_latency_ms

    def _profiled(self, state: PortfolioView, envelope: Envelope[ProfileRecorded]) -> None:
        e = envelope.event
        view = self._view(state, e.task)
        if e.task_source_hash != view.revision:
            return
        if e.purpose == "baseline" and e.correct and e.latency_ms:
            view.baseline_ms = e.latency_ms
        if e.correct and e.pct_of_peak is not None:
            view.pct_of_peak = max(view.pct_of_peak or 0.0, e.pct_of_peak)


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
    cooling: frozenset[str] = frozenset(),
) -> list[str]:
    """The tasks to start searches for now (at most `slots` minus the running ones). A task
    `cooling` down after a crashed search is skipped, and takes no slot."""
    ranked: list[tuple[int, float, str]] = []
    for name, task in view.tasks.items():
        if name in running or name in cooling:
            continue
        if task.removed or task.invalid or task.revision is None:
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
