"""The AccelOpt loop for one task: its control flow, recorded event by event.

Every step first looks for its own result in the log (by an id that says what the step is
for, agents/search/ids.py) and does the work only if it is missing, so the same code runs a
fresh search and resumes one killed at any point: recorded plans, kernels, profiles and LLM
answers are read back, never asked for or measured again.

One iteration: plans for every beam candidate (planner, N per candidate, in parallel), K
implementations per plan (executor), tunable variants of the incumbent (no LLM), each new
kernel deduplicated by hash and profiled, failures repaired by the fixer (at most F times),
the next beam (elitist), lessons from the iteration's slow/fast pairs (summarizer), and the
incumbent promoted once re-verified.

The collaborators: record.py (the search's stream), profiling.py (its profiles), steps.py
(the candidates and lessons), promotion.py, outcome.py. What stays here is the order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from agents.config import SearchConfig
from agents.llm import BudgetExhausted, LLMClient
from agents.memory import MemoryProjection, Retention
from agents.prompts import Prompts
from agents.search import ids, steps
from agents.search.outcome import SearchOutcome, search_outcome
from agents.search.profiling import Kernel, Profiler, Profiles
from agents.search.promotion import Promotion
from agents.search.record import SearchRecord, searches_of
from agents.search.selection import Measured, select_beam
from events.catalog import (
    BeamEntry,
    BeamSelected,
    LatencyKind,
    SearchEnd,
    SearchFinished,
    SearchStarted,
)
from nkibench.dialects import get_dialect
from nkibench.sandbox.isolation import Isolation
from nkibench.task.operators import operators as task_operators
from nkibench.task.spec import TaskSpec
from store.recorder import Recorder

__all__ = ["IDLE", "Interrupted", "Search"]

IDLE = (
    "no LLM endpoint: the baseline is profiled and the tunables swept; the agents are idle "
    "until ACCELOPT_LLM_BASE_URL and ACCELOPT_PLANNER_MODEL are set"
)


class Interrupted(Exception):
    """The search was asked to stop (a daemon draining); nothing more is recorded, and the
    next run resumes it."""


class _Stop(Exception):
    def __init__(self, reason: SearchEnd, detail: str) -> None:
        super().__init__(detail)
        self.reason, self.detail = reason, detail


class Search:
    """One task's search: opened (resumed, or started anew) and run to its end by `run`."""

    def __init__(
        self,
        *,
        task: TaskSpec,
        recorder: Recorder,
        llm: LLMClient | None,
        profiler: Profiler,
        config: SearchConfig,
        prompts: Prompts | None = None,
        memory_capacity: int = 16,
        isolation: Isolation,
        log: Callable[[str], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        """`llm=None` runs the search without agents: the baseline and the tunables only."""
        self.task = task
        self.config = config
        self._llm = llm
        self._should_stop = should_stop or (lambda: False)
        self._profiler = profiler
        self._say = log or (lambda _message: None)
        language = get_dialect(task.dialect)
        if prompts is not None and prompts.dialect != task.dialect:
            raise ValueError(
                f"{task.name} is written in {language.language}; the prompts given are for "
                f"{prompts.dialect}"
            )
        self._record = SearchRecord(recorder, task.name)
        self._profiles = Profiles(
            task=task, record=self._record, profiler=profiler, check_stop=self._check_stop
        )
        self._promotion = Promotion(
            task=task, record=self._record, profiles=self._profiles, say=self._say
        )
        self._steps = steps.Context(
            task=task,
            record=self._record,
            profiles=self._profiles,
            llm=llm,
            prompts=prompts or Prompts(task.dialect),
            config=config,
            # the planner reads active lessons alone: its fold keeps nothing of the past
            memory=MemoryProjection(
                capacity=memory_capacity, retention=Retention(retired_per_task=0, changes=0)
            ),
            operators=task_operators(task.reference_source),
            entry_points=language.entry_points,
            say=self._say,
            check_stop=self._check_stop,
            isolation=isolation,
        )

    @property
    def search_id(self) -> str:
        return self._record.search_id

    def _check_stop(self) -> None:
        if self._should_stop():
            raise Interrupted(f"{self.search_id} stopped; it resumes at the next start")

    # --- the search's identity -------------------------------------------------------------

    def _open(self) -> None:
        """Resume this revision's unfinished search, or start a new one."""
        started, finished = searches_of(self._record.recorder.store, self.task.name)
        for earlier in started:
            if earlier.task_source_hash == self.task.content_hash and (
                earlier.search_id not in finished
            ):
                self._record.resume(earlier.search_id)
                self._configure(self.config.model_validate(earlier.settings))
                self._say(f"{self.task.name}: resuming {self.search_id}")
                return
        self._record.begin(ids.search_id(self.task.name, self.task.content_hash, len(started) + 1))

    def _configure(self, config: SearchConfig) -> None:
        """Run with `config` from now on: a resumed search keeps the settings it started
        with, whatever the current ones are."""
        self.config = config
        self._steps = replace(self._steps, config=config)

    # --- the loop --------------------------------------------------------------------------

    def _baseline(self) -> Kernel:
        cid = ids.baseline_id(self.search_id)
        self._record.candidate(
            iteration=0,
            candidate=cid,
            source=self.task.kernel_source,
            origin="baseline",
            parent=None,
            plan=None,
            sample=0,
            call=None,
        )
        return self._profiles.kernel(cid)

    def _select(self, iteration: int, beam: list[Kernel], incumbent: Measured) -> BeamSelected:
        index = self._record.index
        if iteration in index.beams:
            return index.beams[iteration]
        current = [m for k in beam if (m := k.measured) is not None]
        new = [
            m
            for c in index.of_iteration(iteration)
            if c.candidate_id not in index.rejected
            and (m := self._profiles.kernel(c.candidate_id).measured) is not None
        ]
        chosen, best = select_beam(incumbent, current, new, self.config.beam)
        kind: LatencyKind = beam[0].profile.latency_kind or "estimated"  # type: ignore[union-attr]
        event = BeamSelected(
            task=self.task.name,
            search_id=self.search_id,
            iteration=iteration,
            selected=[
                BeamEntry(candidate_id=m.candidate_id, latency_ms=m.latency_ms, latency_kind=kind)
                for m in chosen
            ],
            incumbent_id=best.candidate_id,
        )
        self._record.record(event, key=ids.beam_key(iteration))
        return event

    def _iterate(self, baseline: Kernel) -> tuple[SearchEnd, str, int]:
        assert baseline.measured is not None
        index = self._record.index
        context = self._steps
        beam = [baseline]
        incumbent = baseline.measured
        history = [incumbent.latency_ms]
        for iteration in range(1, self.config.iterations + 1):
            self._check_stop()
            if iteration not in index.beams:
                planned = steps.plans(context, iteration, beam) if self._llm is not None else []
                tuned = steps.tunables(
                    context, iteration, self._profiles.kernel(incumbent.candidate_id)
                )
                implemented = steps.implementations(context, iteration, planned)
                steps.measure(context, iteration, tuned + implemented)
            if self._llm is None and not index.of_iteration(iteration):
                return "completed", IDLE, iteration - 1
            selected = self._select(iteration, beam, incumbent)
            beam = [self._profiles.kernel(entry.candidate_id) for entry in selected.selected]
            incumbent = next(
                m for k in beam if (m := k.measured) and (m.candidate_id == selected.incumbent_id)
            )
            if self._llm is not None:
                steps.lessons(context, iteration)
            self._promotion.consider(incumbent, baseline, min_gain=self.config.min_gain)
            history.append(incumbent.latency_ms)
            self._say(
                f"{self.task.name}: iteration {iteration}: best {incumbent.latency_ms:.4f} ms "
                f"({incumbent.candidate_id})"
            )
            window = self.config.plateau
            if len(history) > window and history[-window - 1] <= (
                history[-1] * self.config.min_gain
            ):
                return (
                    "plateau",
                    f"no gain above {self.config.min_gain:g}x in {window} iterations",
                    iteration,
                )
        return "completed", f"all {self.config.iterations} iterations", self.config.iterations

    def _finish(self, reason: SearchEnd, detail: str, iterations: int) -> None:
        index = self._record.index
        best: tuple[str, float, LatencyKind | None] | None = None
        if index.beams:
            entry = index.beams[max(index.beams)].selected[0]
            best = (entry.candidate_id, entry.latency_ms, entry.latency_kind)
        else:  # no iteration completed: the best is the baseline, if it ran
            baseline = ids.baseline_id(self.search_id)
            if baseline in index.candidates:
                kernel = self._profiles.kernel(baseline)
                if kernel.measured is not None and kernel.profile is not None:
                    best = (baseline, kernel.measured.latency_ms, kernel.profile.latency_kind)
        self._record.record(
            SearchFinished(
                task=self.task.name,
                search_id=self.search_id,
                reason=reason,
                detail=detail,
                iterations=iterations,
                best_candidate_id=best[0] if best else None,
                best_latency_ms=best[1] if best else None,
                latency_kind=best[2] if best else None,
            ),
            key=ids.FINISHED_KEY,
        )

    def _start(self) -> None:
        self._record.record(
            SearchStarted(
                task=self.task.name,
                search_id=self.search_id,
                task_source_hash=self.task.content_hash,
                baseline_candidate_id=ids.baseline_id(self.search_id),
                backend=self._profiler.backend_name,
                target=self._profiler.target,
                shapes=self._profiler.shapes,
                settings=self.config.as_event_settings(),
                models=(
                    {role: c.model for role, c in self._llm.config.roles.items()}
                    if self._llm is not None
                    else {}
                ),
            ),
            key=ids.STARTED_KEY,
        )

    def run(self) -> SearchOutcome:
        self._open()
        if self._record.index.finished is None:
            self._start()
            try:
                baseline = self._baseline()
                if baseline.measured is None:
                    profile = baseline.profile
                    raise _Stop(
                        "no_baseline",
                        f"the task's own kernel fails: {profile.error_kind if profile else '?'}: "
                        f"{profile.error_message if profile else ''}",
                    )
                reason, detail, iterations = self._iterate(baseline)
            except _Stop as stop:
                reason, detail, iterations = stop.reason, stop.detail, 0
            except BudgetExhausted as spent:
                reason, detail = "budget", spent.reason
                iterations = max(self._record.index.beams, default=0)
            self._finish(reason, detail, iterations)
        return self.outcome()

    def outcome(self) -> SearchOutcome:
        """The outcome of the finished search (after `run`)."""
        return search_outcome(
            task=self.task.name,
            record=self._record,
            profiles=self._profiles,
            promotion=self._promotion,
        )
