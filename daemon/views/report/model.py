"""The `report` projection: what the HTML report and the live pages show, folded from the log.

Per task: every candidate with its parent, plan, fate and latency (the search tree), the
beam's best after each selection, the promotions, and what its LLM calls cost. Over all tasks:
the memory's changes (from the memory projection's own fold, so the two never disagree) and
the spend over time. A pure fold like every projection, so `--until` shows the past exactly.
Texts (plans, kernels, lessons) stay blob hashes here; the renderer reads them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from agents.memory import MemoryProjection, MemoryState
from events.base import Event
from events.catalog import (
    AGENT_SESSION_PREFIX,
    BeamSelected,
    CandidateGenerated,
    CandidateRejected,
    KernelDemoted,
    KernelPromoted,
    KernelSourceChanged,
    LLMCallCompleted,
    PlanProposed,
    ProfileRecorded,
    SearchFinished,
    SearchStarted,
)
from events.envelope import Envelope

__all__ = ["Candidate", "Point", "ReportProjection", "ReportState", "Search", "TaskReport"]


@dataclass(slots=True)
class Point:
    """Something that happened at a position of the log, at a time (ISO 8601, UTC)."""

    position: int
    at: str
    candidate_id: str
    latency_ms: float
    latency_kind: str


@dataclass(slots=True)
class Candidate:
    candidate_id: str
    task: str
    search_id: str | None
    iteration: int
    parent_id: str | None
    plan_id: str | None
    origin: str
    source_blob: str | None
    position: int
    fate: str = "generated"
    """generated, rejected, failed (profiled, not correct), profiled, selected, promoted."""
    reason: str | None = None
    latency_ms: float | None = None
    latency_kind: str | None = None
    pct_of_peak: float | None = None
    autotuned: dict[str, list[str]] = field(default_factory=dict)
    """Triton: the config each autotuned kernel was profiled with (its latest profile's)."""
    workloads: list[tuple[str, float | None, str | None]] = field(default_factory=list)
    """A task with workloads: each workload's (name, latency, its kind), its latest
    profile's; the latency above is their geometric mean."""
    gpu_kernels: list[dict[str, float | str]] = field(default_factory=list)
    """Triton on a GPU: its latest profile's hardware counters per launched kernel."""
    counters_unavailable: str | None = None
    """Why its latest GPU profile has no counters."""
    agent: str | None = None
    """An outside agent's candidate (origin `agent`): `client/model`."""


@dataclass(slots=True)
class Search:
    search_id: str
    task: str
    started_position: int
    started_at: str
    backend: str
    target: str
    baseline_candidate_id: str
    end: str | None = None
    detail: str | None = None
    iterations: int = 0


@dataclass(slots=True)
class TaskReport:
    name: str
    dialect: str | None = None
    backend: str | None = None
    target: str | None = None
    latency_kind: str | None = None
    baseline_ms: float | None = None
    baseline_pct: float | None = None
    best_ms: float | None = None
    best_pct: float | None = None
    promoted_candidate_id: str | None = None
    promoted_ms: float | None = None
    searches: list[str] = field(default_factory=list)
    points: list[Point] = field(default_factory=list)
    """Every correct profile of a candidate of this task."""
    beam: list[Point] = field(default_factory=list)
    """The incumbent after each beam selection."""
    promotions: list[Point] = field(default_factory=list)
    plans: dict[str, str] = field(default_factory=dict)
    """Plan id → its text's blob."""
    cost_usd: float = 0.0
    tokens: int = 0
    calls: int = 0


@dataclass(slots=True)
class ReportState:
    tasks: dict[str, TaskReport] = field(default_factory=dict)
    candidates: dict[str, Candidate] = field(default_factory=dict)
    searches: dict[str, Search] = field(default_factory=dict)
    spend: list[tuple[int, str, str, float, int]] = field(default_factory=list)
    """(position, time, task or "", dollars, tokens) per answered LLM call."""
    memory: MemoryState = field(default_factory=MemoryState)
    memory_at: dict[int, str] = field(default_factory=dict)
    """The time of each position where the memory changed."""
    failures: dict[str, int] = field(default_factory=dict)
    """Profiles that failed, by error kind (compile, runtime, incorrect, timeout, ...)."""
    planner_prompts: list[tuple[int, str, str]] = field(default_factory=list)
    """(position, task, prompt blob) of each answered planner call: which lessons each
    planner was shown is in its prompt."""
    head: int = 0


FATE_ORDER = ("generated", "rejected", "failed", "profiled", "selected", "promoted")


class ReportProjection:
    name = "report"
    version = "3-agents"
    """2: the memory within it counts what a retention dropped (none here: it keeps all);
    3: outside agents' candidates, labelled."""

    def __init__(self) -> None:
        self._memory = MemoryProjection()

    def initial(self) -> ReportState:
        return ReportState()

    def apply(self, state: ReportState, envelope: Envelope[Event]) -> ReportState:
        event, position = envelope.event, envelope.position
        at = envelope.recorded_at.isoformat(timespec="seconds")
        state.head = position
        if isinstance(event, KernelSourceChanged):
            task = _task(state, event.task)
            task.dialect = event.dialect or task.dialect
        elif isinstance(event, SearchStarted):
            _task(state, event.task).searches.append(event.search_id)
            state.searches[event.search_id] = Search(
                event.search_id,
                event.task,
                position,
                at,
                event.backend,
                event.target,
                event.baseline_candidate_id,
            )
        elif isinstance(event, PlanProposed):
            _task(state, event.task).plans[event.plan_id] = event.plan_blob
        elif isinstance(event, CandidateGenerated):
            state.candidates[event.candidate_id] = Candidate(
                event.candidate_id,
                event.task,
                event.search_id,
                event.iteration,
                event.parent_candidate_id,
                event.plan_id,
                event.origin,
                event.source_blob,
                position,
                agent=f"{event.agent.client}/{event.agent.model}" if event.agent else None,
            )
        elif isinstance(event, CandidateRejected):
            candidate = state.candidates.get(event.candidate_id)
            if candidate is not None:
                candidate.fate, candidate.reason = "rejected", event.reason
        elif isinstance(event, ProfileRecorded):
            self._profiled(state, event, position, at)
        elif isinstance(event, BeamSelected):
            self._selected(state, event, position, at)
        elif isinstance(event, KernelPromoted):
            self._promoted(state, event, position, at)
        elif isinstance(event, KernelDemoted):
            task = _task(state, event.task)
            if task.promoted_candidate_id == event.candidate_id:
                task.promoted_candidate_id, task.promoted_ms = None, None
        elif isinstance(event, SearchFinished):
            search = state.searches.get(event.search_id)
            if search is not None:
                search.end, search.detail = event.reason, event.detail
                search.iterations = event.iterations
        elif isinstance(event, LLMCallCompleted) and event.error is None:
            tokens = event.prompt_tokens + event.completion_tokens
            state.spend.append((position, at, event.task or "", event.cost_usd, tokens))
            if event.task is not None:
                task = _task(state, event.task)
                task.cost_usd += event.cost_usd
                task.tokens += tokens
                task.calls += 1
                if event.role == "planner":
                    state.planner_prompts.append((position, event.task, event.prompt_blob))
        before = len(state.memory.log)
        state.memory = self._memory.apply(state.memory, envelope)
        if len(state.memory.log) != before:
            state.memory_at[position] = at
        return state

    @staticmethod
    def _profiled(state: ReportState, e: ProfileRecorded, position: int, at: str) -> None:
        task = _task(state, e.task)
        task.backend, task.target = e.backend, e.target
        if not e.correct:
            kind = e.error_kind or "unknown"
            state.failures[kind] = state.failures.get(kind, 0) + 1
        task.dialect = e.dialect or task.dialect
        latency = e.latency_ms if e.correct and e.latency_kind is not None else None
        if latency is not None and e.purpose != "reverify":
            if e.purpose == "baseline":
                task.baseline_ms, task.baseline_pct = latency, e.pct_of_peak
            if task.best_ms is None or latency < task.best_ms:
                task.best_ms, task.best_pct = latency, e.pct_of_peak
            task.latency_kind = e.latency_kind
        candidate = state.candidates.get(e.candidate_id or _baseline_of(state, e.job_id))
        if e.purpose == "reverify" or candidate is None:
            return
        candidate.latency_kind = e.latency_kind
        candidate.autotuned = dict(e.autotuned)
        candidate.workloads = [(w.name, w.latency_ms, w.latency_kind) for w in e.workloads]
        candidate.gpu_kernels = list(e.gpu_kernels)
        candidate.counters_unavailable = e.counters_unavailable
        if latency is None or e.latency_kind is None:
            candidate.fate, candidate.reason = "failed", e.error_kind
            return
        candidate.fate = _later(candidate.fate, "profiled")
        candidate.latency_ms, candidate.pct_of_peak = latency, e.pct_of_peak
        task.points.append(Point(position, at, candidate.candidate_id, latency, e.latency_kind))

    @staticmethod
    def _selected(state: ReportState, e: BeamSelected, position: int, at: str) -> None:
        for entry in e.selected:
            candidate = state.candidates.get(entry.candidate_id)
            if candidate is not None:
                candidate.fate = _later(candidate.fate, "selected")
        best = min(e.selected, key=lambda entry: entry.latency_ms, default=None)
        if best is not None:
            point = Point(position, at, best.candidate_id, best.latency_ms, best.latency_kind)
            _task(state, e.task).beam.append(point)

    @staticmethod
    def _promoted(state: ReportState, e: KernelPromoted, position: int, at: str) -> None:
        task = _task(state, e.task)
        task.promoted_candidate_id, task.promoted_ms = e.candidate_id, e.latency_ms
        task.promotions.append(Point(position, at, e.candidate_id, e.latency_ms, e.latency_kind))
        candidate = state.candidates.get(e.candidate_id)
        if candidate is not None:
            candidate.fate = "promoted"

    def dump(self, state: ReportState) -> dict[str, Any]:
        return {
            "tasks": {name: asdict(task) for name, task in state.tasks.items()},
            "candidates": {k: asdict(v) for k, v in state.candidates.items()},
            "searches": {k: asdict(v) for k, v in state.searches.items()},
            "spend": [list(row) for row in state.spend],
            "memory": self._memory.dump(state.memory),
            "memory_at": {str(k): v for k, v in state.memory_at.items()},
            "failures": dict(state.failures),
            "planner_prompts": [list(row) for row in state.planner_prompts],
            "head": state.head,
        }

    def load(self, data: dict[str, Any]) -> ReportState:
        tasks = {}
        for name, raw in data["tasks"].items():
            points = {k: [Point(**p) for p in raw[k]] for k in ("points", "beam", "promotions")}
            tasks[name] = TaskReport(**{**raw, **points})
        return ReportState(
            tasks=tasks,
            candidates={k: Candidate(**v) for k, v in data["candidates"].items()},
            searches={k: Search(**v) for k, v in data["searches"].items()},
            spend=[(int(p), str(a), str(t), float(c), int(n)) for p, a, t, c, n in data["spend"]],
            memory=self._memory.load(data["memory"]),
            memory_at={int(k): v for k, v in data["memory_at"].items()},
            failures={str(k): int(v) for k, v in data["failures"].items()},
            planner_prompts=[(int(p), str(t), str(b)) for p, t, b in data["planner_prompts"]],
            head=int(data["head"]),
        )


def _task(state: ReportState, name: str) -> TaskReport:
    task = state.tasks.get(name)
    if task is None:
        task = state.tasks[name] = TaskReport(name)
    return task


def _baseline_of(state: ReportState, job_id: str) -> str:
    """The baseline candidate of the search a job belongs to (a search's job ids start with
    the search's id, agents.search.ids): a baseline's profile names no candidate itself. An
    agent's session has no SearchStarted: its job id names the candidate after the session."""
    session, _, rest = job_id.partition("|")
    search = state.searches.get(session)
    if search is not None:
        return search.baseline_candidate_id
    return rest.split("|", 1)[0] if session.startswith(AGENT_SESSION_PREFIX) else ""


def _later(current: str, fate: str) -> str:
    """A candidate's fate only moves forward (selected, then profiled again, stays selected)."""
    return max(current, fate, key=FATE_ORDER.index)
