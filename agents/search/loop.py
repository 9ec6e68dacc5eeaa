"""The AccelOpt loop for one task, recorded event by event.

Every step first looks for its own result in the log (by an id that says what the step is
for) and does the work only if it is missing, so the same code runs a fresh search and
resumes one killed at any point: recorded plans, kernels, profiles and LLM answers are read
back, never asked for or measured again.

One iteration: plans for every beam candidate (planner, N per candidate, in parallel), K
implementations per plan (executor), tunable variants of the incumbent (no LLM), each new
kernel deduplicated by hash and profiled, failures repaired by the fixer (at most F times),
the next beam (elitist), lessons from the iteration's slow/fast pairs (summarizer), and the
incumbent promoted once re-verified.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any, TypeVar

from agents.config import SearchConfig
from agents.llm import BudgetExhausted, Completion, LLMClient, LLMError
from agents.memory import MemoryProjection, MemoryState, shown_to_planner
from agents.prompts import Prompts
from agents.roles import (
    NoCode,
    executor_messages,
    extract_code,
    fixer_messages,
    parse_lesson,
    planner_messages,
    summarizer_messages,
)
from agents.search import ids
from agents.search.index import SearchIndex
from agents.search.profiling import Profiler, profile_event
from agents.search.selection import Measured, Pair, select_beam, select_lessons
from agents.search.tunables import variants
from events.base import Event
from events.catalog import (
    BeamEntry,
    BeamSelected,
    CandidateGenerated,
    CandidateOrigin,
    CandidateRejected,
    ExperienceSummarized,
    KernelPromoted,
    LatencyKind,
    LLMCallCompleted,
    PlanProposed,
    ProfilePurpose,
    ProfileRecorded,
    RejectReason,
    SearchEnd,
    SearchFinished,
    SearchStarted,
)
from events.codec import decode
from events.projection import fold
from nkibench.dialects import get_dialect
from nkibench.task.operators import operators as task_operators
from nkibench.task.spec import TaskSpec
from store.recorder import Recorder

__all__ = ["IDLE", "Interrupted", "Search", "SearchOutcome"]

T = TypeVar("T")
FIXABLE = frozenset({"compile", "runtime", "constraint", "unsupported", "incorrect", "rejected"})
REJECTION: dict[str, RejectReason] = {
    "rejected": "static_check",
    "compile": "compile_error",
    "runtime": "runtime_error",
    "constraint": "constraint",
    "unsupported": "unsupported",
    "incorrect": "incorrect",
    "timeout": "timeout",
    "resource": "resource",
    "cheat": "cheat",
}
PROFILE_FIELDS = (
    "hbm_read_bytes",
    "hbm_write_bytes",
    "sbuf_read_bytes",
    "sbuf_write_bytes",
    "psum_read_bytes",
    "psum_write_bytes",
    "hardware_flops",
    "transpose_flops",
    "mm_arithmetic_intensity",
    "peak_flops_bandwidth_ratio",
    "hfu_estimated_percent",
    "tensor_engine_active_time_percent",
    "vector_engine_active_time_percent",
    "scalar_engine_active_time_percent",
    "gpsimd_engine_active_time_percent",
    "dma_active_time_percent",
    "dma_transfer_count",
    "dma_transfer_average_bytes",
    "dma_small_transfer_percent",
    # GPUs (the triton backend): the measured rates against the device's measured ceilings
    "achieved_bandwidth_gbps",
    "achieved_tflops",
    "bandwidth_ceiling_gbps",
    "matmul_ceiling_tflops",
)
"""The counters the planner sees (AccelOpt's displayed profile, plus DMA transfers)."""


@dataclass
class SearchOutcome:
    task: str
    search_id: str
    reason: str
    detail: str
    iterations: int
    baseline_latency_ms: float | None
    best_latency_ms: float | None
    speedup: float | None
    latency_kind: str | None
    best_candidate: str | None
    promoted_candidate: str | None
    llm_calls: int = 0
    failed_llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_models: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class _Kernel:
    """A candidate with its source and what it was measured at (None: not correct)."""

    event: CandidateGenerated
    source: str
    profile: ProfileRecorded | None

    @property
    def measured(self) -> Measured | None:
        p = self.profile
        if p is None or not p.correct or p.latency_ms is None:
            return None
        return Measured(self.event.candidate_id, p.latency_ms)


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
        log: Callable[[str], None] | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        """`llm=None` runs the search without agents: the baseline and the tunables only."""
        self.task = task
        self._llm = llm
        self.recorder = recorder
        self.store = recorder.store
        self.should_stop = should_stop or (lambda: False)
        self.profiler = profiler
        self.config = config
        language = get_dialect(task.dialect)
        self.prompts = prompts or Prompts(language.prompt_folder)
        self.entry_points = language.entry_points
        self.memory = MemoryProjection(capacity=memory_capacity)
        self.operators = task_operators(task.reference_source)
        self.say = log or (lambda _message: None)
        self.search_id = ""
        self.index = SearchIndex()
        self._profiles: dict[tuple[str, str], ProfileRecorded] = {}

    # --- recording -----------------------------------------------------------------------

    @property
    def stream(self) -> str:
        return f"search:{self.search_id}"

    def _record(self, event: Event, key: str) -> None:
        self.recorder.record(self.stream, event, key=ids.search_key(self.search_id, key))
        self.index.add(event)

    def _source(self, candidate: str) -> str:
        return self.recorder.text(self.index.candidates[candidate].source_blob)

    @property
    def llm(self) -> LLMClient:
        assert self._llm is not None, "an LLM step in a search without agents"
        return self._llm

    def _check_stop(self) -> None:
        if self.should_stop():
            raise Interrupted(f"{self.search_id} stopped; it resumes at the next start")

    def _parallel(self, work: Sequence[Callable[[], T]]) -> list[T | Exception]:
        """Run LLM steps concurrently; results (or their exceptions) in the given order."""
        self._check_stop()
        if not work:
            return []
        width = min(len(work), self.llm.config.max_concurrency)
        with ThreadPoolExecutor(max_workers=width) as pool:
            futures = [pool.submit(step) for step in work]
            results: list[T | Exception] = []
            for future in futures:
                try:
                    results.append(future.result())
                except (LLMError, NoCode) as e:
                    results.append(e)
        return results

    # --- the search's identity -------------------------------------------------------------

    def _open(self) -> None:
        """Resume this revision's unfinished search, or start a new one."""
        started: list[SearchStarted] = []
        finished: set[str] = set()
        for stored in self.store.read_all(types=["SearchStarted", "SearchFinished"]):
            event = decode(stored).event
            if isinstance(event, SearchStarted) and event.task == self.task.name:
                started.append(event)
            elif isinstance(event, SearchFinished) and event.task == self.task.name:
                finished.add(event.search_id)
        for earlier in started:
            if earlier.task_source_hash == self.task.content_hash and (
                earlier.search_id not in finished
            ):
                self.search_id = earlier.search_id
                self.index = SearchIndex.of(self.recorder.events(self.stream))
                self.config = _recorded_config(earlier.settings, self.config)
                self.say(f"{self.task.name}: resuming {self.search_id}")
                return
        self.search_id = ids.search_id(self.task.name, self.task.content_hash, len(started) + 1)
        self.index = SearchIndex()

    # --- profiling -------------------------------------------------------------------------

    def _profile(self, candidate: str, purpose: ProfilePurpose) -> ProfileRecorded:
        cached = self._profiles.get((candidate, purpose))
        if cached is not None:
            return cached
        job_id = ids.profile_job_id(self.search_id, candidate, purpose)
        stream = f"job:{job_id}"
        recorded = list(self.recorder.of_type(stream, ProfileRecorded))
        if recorded:
            profile = recorded[-1]
        else:
            self._check_stop()
            source = self._source(candidate)
            result = self.profiler.profile(self.task, source, job_id=job_id)
            profile = profile_event(
                result,
                job_id=job_id,
                purpose=purpose,
                candidate_id=None if purpose == "baseline" else candidate,
                kernel_hash=self.index.candidates[candidate].kernel_hash,
                task_source_hash=self.task.content_hash,
            )
            self.recorder.record(stream, profile, key=job_id)
        self._profiles[candidate, purpose] = profile
        return profile

    def _kernel(self, candidate: str) -> _Kernel:
        event = self.index.candidates[candidate]
        rejected = self.index.rejected.get(candidate)
        profile = None
        if rejected is None or rejected.reason not in ("duplicate", "no_code", "truncated"):
            purpose: ProfilePurpose = "baseline" if event.origin == "baseline" else "candidate"
            profile = self._profile(candidate, purpose)
        return _Kernel(event, self._source(candidate), profile)

    # --- generating candidates -------------------------------------------------------------

    def _generate(
        self,
        *,
        iteration: int,
        candidate: str,
        source: str,
        origin: CandidateOrigin,
        parent: str | None,
        plan: str | None,
        sample: int,
        call: str | None,
    ) -> str | None:
        """Record a new kernel; returns its id unless it is a duplicate of an earlier one."""
        if candidate not in self.index.candidates:
            kernel_hash = hashlib.sha256(source.encode("utf-8")).hexdigest()
            self._record(
                CandidateGenerated(
                    task=self.task.name,
                    search_id=self.search_id,
                    iteration=iteration,
                    candidate_id=candidate,
                    parent_candidate_id=parent,
                    plan_id=plan,
                    sample_index=sample,
                    origin=origin,
                    kernel_hash=kernel_hash,
                    source_blob=self.recorder.put(source),
                    llm_call_id=call,
                ),
                key=ids.candidate_key(candidate),
            )
        event = self.index.candidates[candidate]
        first = self.index.by_hash[event.kernel_hash]
        if first != candidate:
            if candidate not in self.index.rejected:
                self._reject(candidate, "duplicate", f"the same source as {first}", first)
            return None
        return candidate

    def _reject(
        self, candidate: str, reason: RejectReason, message: str, duplicate_of: str | None = None
    ) -> None:
        if candidate in self.index.rejected:
            return
        self._record(
            CandidateRejected(
                task=self.task.name,
                candidate_id=candidate,
                reason=reason,
                message=message[:2000],
                duplicate_of=duplicate_of,
            ),
            key=ids.rejected_key(candidate),
        )

    # --- the roles -------------------------------------------------------------------------

    def _planner_profile(self, profile: ProfileRecorded) -> dict[str, Any]:
        shown: dict[str, Any] = {
            "latency": profile.latency_ms,
            "latency_kind": profile.latency_kind,
            "pct_of_peak": profile.pct_of_peak,
            "bound_by": profile.bound_by,
            "hot_lines": profile.hot_lines,
        }
        shown.update({k: profile.counters[k] for k in PROFILE_FIELDS if k in profile.counters})
        return shown

    def _memory(self) -> MemoryState:
        events = (decode(s) for s in self.store.read_all(types=["ExperienceSummarized"]))
        return fold(self.memory, events, self.memory.initial())

    def _experiences(self) -> list[tuple[str, str]]:
        target = self.profiler.target
        state = self._memory()
        items = shown_to_planner(
            state,
            task=self.task.name,
            operators=self.operators,
            target=target,
            limit=self.config.memory_shown,
        )
        return [(item.title, self.recorder.text(item.summary_blob)) for item in items]

    def _plan(
        self, iteration: int, parent: _Kernel, index: int, experiences: list[tuple[str, str]]
    ) -> Completion:
        assert parent.profile is not None
        messages = planner_messages(
            self.prompts,
            kernel=parent.source,
            reference=self.task.reference_source,
            profile=self._planner_profile(parent.profile),
            experiences=experiences,
        )
        return self.llm.complete(
            call_id=ids.planner_call_id(
                self.search_id, iteration, parent.event.candidate_id, index
            ),
            role="planner",
            messages=messages,
            task=self.task.name,
            seed=index,
        )

    def _plans(self, iteration: int, beam: list[_Kernel]) -> list[PlanProposed]:
        wanted = [
            (parent, n, ids.plan_id(self.search_id, iteration, parent.event.candidate_id, n))
            for parent in beam
            for n in range(self.config.plans)
        ]
        missing = [(parent, n, pid) for parent, n, pid in wanted if pid not in self.index.plans]
        if missing:
            experiences = self._experiences()
            answers = self._parallel(
                [partial(self._plan, iteration, parent, n, experiences) for parent, n, _ in missing]
            )
            for (parent, n, pid), answer in zip(missing, answers, strict=True):
                if isinstance(answer, Exception):
                    self.say(f"{self.task.name}: planner call failed: {answer}")
                    continue
                self._record(
                    PlanProposed(
                        task=self.task.name,
                        search_id=self.search_id,
                        iteration=iteration,
                        plan_id=pid,
                        plan_index=n,
                        parent_candidate_id=parent.event.candidate_id,
                        plan_blob=self.recorder.put(answer.text),
                        llm_call_id=answer.call_id,
                    ),
                    key=ids.plan_key(pid),
                )
        return [self.index.plans[pid] for _, _, pid in wanted if pid in self.index.plans]

    def _execute(self, plan: PlanProposed, sample: int) -> tuple[Completion, str]:
        parent_source = self._source(plan.parent_candidate_id)
        messages = executor_messages(
            self.prompts,
            kernel=parent_source,
            reference=self.task.reference_source,
            plan=self.recorder.text(plan.plan_blob),
        )
        answer = self.llm.complete(
            call_id=ids.executor_call_id(self.search_id, plan.plan_id, sample),
            role="executor",
            messages=messages,
            task=self.task.name,
            seed=sample,
        )
        return answer, parent_source

    def _implement(self, iteration: int, plans: list[PlanProposed]) -> list[str]:
        slots = [
            (plan, k, ids.executor_candidate_id(self.search_id, plan.plan_id, k))
            for plan in plans
            for k in range(self.config.samples)
        ]
        missing = [
            (plan, k, cid)
            for plan, k, cid in slots
            if cid not in self.index.candidates and cid not in self.index.rejected
        ]
        answers = self._parallel([partial(self._execute, plan, k) for plan, k, _ in missing])
        for (plan, k, cid), answer in zip(missing, answers, strict=True):
            if isinstance(answer, LLMError):
                self._reject(cid, "llm_error", answer.message)
                continue
            assert not isinstance(answer, Exception)
            completion, parent_source = answer
            try:
                code = extract_code(
                    completion.text, completion.finish_reason, parent_source, self.entry_points
                )
            except NoCode as e:
                self._reject(cid, e.reason, e.message)
                continue
            self._generate(
                iteration=iteration,
                candidate=cid,
                source=code,
                origin="executor",
                parent=plan.parent_candidate_id,
                plan=plan.plan_id,
                sample=k,
                call=completion.call_id,
            )
        return [cid for _, _, cid in slots if cid in self.index.candidates]

    def _tunables(self, iteration: int, incumbent: _Kernel) -> list[str]:
        if not self.task.tunables:
            return []
        made = []
        for n, (name, value, source) in enumerate(variants(incumbent.source, self.task.tunables)):
            cid = ids.tunable_candidate_id(
                self.search_id, incumbent.event.candidate_id, name, value
            )
            made.append(cid)
            self._generate(
                iteration=iteration,
                candidate=cid,
                source=source,
                origin="tunable",
                parent=incumbent.event.candidate_id,
                plan=None,
                sample=n,
                call=None,
            )
        return made

    def _fix(self, iteration: int, failed: _Kernel, attempt: int) -> str | None:
        """A repaired version of a failing candidate, or None (no code, or the LLM failed)."""
        profile = failed.profile
        assert profile is not None
        cid = ids.fixer_candidate_id(self.search_id, failed.event.candidate_id, attempt)
        if cid in self.index.candidates or cid in self.index.rejected:
            return cid if cid in self.index.candidates else None
        messages = fixer_messages(
            self.prompts,
            kernel=failed.source,
            reference=self.task.reference_source,
            error_kind=profile.error_kind or "failed",
            error=profile.error_message or "",
        )
        try:
            answer = self.llm.complete(
                call_id=ids.fixer_call_id(self.search_id, failed.event.candidate_id, attempt),
                role="fixer",
                messages=messages,
                task=self.task.name,
            )
            code = extract_code(answer.text, answer.finish_reason, failed.source, self.entry_points)
        except LLMError as e:
            self._reject(cid, "llm_error", e.message)
            return None
        except NoCode as e:
            self._reject(cid, e.reason, e.message)
            return None
        return self._generate(
            iteration=iteration,
            candidate=cid,
            source=code,
            origin="fixer",
            parent=failed.event.parent_candidate_id,
            plan=failed.event.plan_id,
            sample=attempt,
            call=answer.call_id,
        )

    def _measure(self, iteration: int, candidates: list[str]) -> None:
        """Profile new candidates in order; repair the failures the fixer may mend."""
        for first in candidates:
            current: str | None = first
            for attempt in range(1 + self.config.fixer_attempts):
                if (
                    current is None
                    or self.index.by_hash.get(self.index.candidates[current].kernel_hash) != current
                ):
                    break
                kernel = self._kernel(current)
                profile = kernel.profile
                assert profile is not None
                if profile.correct:
                    break
                kind = profile.error_kind or "runtime"
                self._reject(
                    current,
                    REJECTION.get(kind, "crashed"),
                    f"{kind}: {profile.error_message or 'no message'}",
                )
                if kind not in FIXABLE or attempt == self.config.fixer_attempts:
                    break
                current = self._fix(iteration, kernel, attempt + 1)

    # --- selection, lessons, promotion -----------------------------------------------------

    def _pairs(self, iteration: int) -> list[Pair]:
        pairs = []
        for event in self.index.of_iteration(iteration):
            if event.origin not in ("executor", "fixer") or event.parent_candidate_id is None:
                continue
            if event.candidate_id in self.index.rejected:
                continue
            child = self._kernel(event.candidate_id).measured
            parent = self._kernel(event.parent_candidate_id).measured
            if child is None or parent is None:
                continue
            pairs.append(Pair(parent, child, f"{event.parent_candidate_id}|{event.plan_id}"))
        return pairs

    def _summarize(self, pair: Pair) -> None:
        positive = pair.speedup > 1.0
        slow, fast = (pair.parent, pair.child) if positive else (pair.child, pair.parent)
        call_id = ids.summarizer_call_id(self.search_id, slow.candidate_id, fast.candidate_id)
        item_id = ids.memory_item_id(call_id)
        if item_id in self.index.lessons:
            return
        profile = self._kernel(fast.candidate_id).profile
        assert profile is not None
        messages = summarizer_messages(
            self.prompts,
            reference=self.task.reference_source,
            slow_kernel=self._source(slow.candidate_id),
            fast_kernel=self._source(fast.candidate_id),
            speedup=slow.latency_ms / fast.latency_ms,
            latency_kind=profile.latency_kind or "estimated",
        )
        try:
            answer = self.llm.complete(
                call_id=call_id, role="summarizer", messages=messages, task=self.task.name
            )
        except LLMError as e:
            self.say(f"{self.task.name}: summarizer call failed: {e}")
            return
        lesson = parse_lesson(answer.text)
        self._record(
            ExperienceSummarized(
                task=self.task.name,
                search_id=self.search_id,
                operators=self.operators,
                item_id=item_id,
                polarity="positive" if positive else "negative",
                slow_candidate_id=slow.candidate_id,
                fast_candidate_id=fast.candidate_id,
                speedup=slow.latency_ms / fast.latency_ms,
                title=lesson.title,
                summary_blob=self.recorder.put(lesson.summary),
                llm_call_id=answer.call_id,
                model=answer.model,
                backend=profile.backend,
                target=profile.target,
                fingerprint=profile.fingerprint,
            ),
            key=ids.lesson_key(item_id),
        )

    def _lessons(self, iteration: int) -> None:
        chosen = select_lessons(
            self._pairs(iteration),
            limit=self.config.experiences_per_iteration,
            positive=self.config.positive_speedup,
            negative=self.config.negative_slowdown,
        )
        self._parallel([partial(self._summarize, pair) for pair in chosen])

    def _promoted(self) -> tuple[str | None, float | None]:
        """The latest promotion of this search, if any."""
        found: tuple[str | None, float | None] = (None, None)
        for event in self.recorder.of_type(f"task:{self.task.name}", KernelPromoted):
            if event.task_source_hash == self.task.content_hash and (
                event.candidate_id in self.index.candidates
            ):
                found = (event.candidate_id, event.latency_ms)
        return found

    def _promote(self, incumbent: Measured, baseline: _Kernel) -> None:
        assert baseline.profile is not None
        assert baseline.profile.latency_ms is not None
        if incumbent.candidate_id == baseline.event.candidate_id:
            return
        promoted, promoted_ms = self._promoted()
        reference = promoted_ms or baseline.profile.latency_ms
        if promoted == incumbent.candidate_id or (
            incumbent.latency_ms * self.config.min_gain > reference
        ):
            return
        check = self._profile(incumbent.candidate_id, "reverify")
        if not check.correct or check.latency_ms is None:
            self.say(f"{self.task.name}: {incumbent.candidate_id} failed re-verification")
            return
        if check.latency_ms > incumbent.latency_ms * self.config.min_gain:
            self.say(f"{self.task.name}: {incumbent.candidate_id} was slower when re-measured")
            return
        event = self.index.candidates[incumbent.candidate_id]
        self.recorder.record(
            f"task:{self.task.name}",
            KernelPromoted(
                task=self.task.name,
                candidate_id=incumbent.candidate_id,
                kernel_hash=event.kernel_hash,
                task_source_hash=self.task.content_hash,
                backend=check.backend,
                target=check.target,
                latency_ms=check.latency_ms,
                latency_kind=check.latency_kind or "estimated",
                baseline_latency_ms=baseline.profile.latency_ms,
                speedup=baseline.profile.latency_ms / check.latency_ms,
            ),
            key=ids.promotion_key(self.search_id, incumbent.candidate_id),
        )

    # --- the loop --------------------------------------------------------------------------

    def _baseline(self) -> _Kernel:
        cid = ids.baseline_id(self.search_id)
        self._generate(
            iteration=0,
            candidate=cid,
            source=self.task.kernel_source,
            origin="baseline",
            parent=None,
            plan=None,
            sample=0,
            call=None,
        )
        return self._kernel(cid)

    def _select(self, iteration: int, beam: list[_Kernel], incumbent: Measured) -> BeamSelected:
        if iteration in self.index.beams:
            return self.index.beams[iteration]
        current = [m for k in beam if (m := k.measured) is not None]
        new = [
            m
            for c in self.index.of_iteration(iteration)
            if c.candidate_id not in self.index.rejected
            and (m := self._kernel(c.candidate_id).measured) is not None
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
        self._record(event, key=ids.beam_key(iteration))
        return event

    def _iterate(self, baseline: _Kernel) -> tuple[SearchEnd, str, int]:
        assert baseline.measured is not None
        beam = [baseline]
        incumbent = baseline.measured
        history = [incumbent.latency_ms]
        for iteration in range(1, self.config.iterations + 1):
            self._check_stop()
            if iteration not in self.index.beams:
                planned = self._plans(iteration, beam) if self._llm is not None else []
                tuned = self._tunables(iteration, self._kernel(incumbent.candidate_id))
                implemented = self._implement(iteration, planned)
                self._measure(iteration, tuned + implemented)
            if self._llm is None and not self.index.of_iteration(iteration):
                return "completed", IDLE, iteration - 1
            selected = self._select(iteration, beam, incumbent)
            beam = [self._kernel(entry.candidate_id) for entry in selected.selected]
            incumbent = next(
                m for k in beam if (m := k.measured) and (m.candidate_id == selected.incumbent_id)
            )
            if self._llm is not None:
                self._lessons(iteration)
            self._promote(incumbent, baseline)
            history.append(incumbent.latency_ms)
            self.say(
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
        best: tuple[str, float, LatencyKind | None] | None = None
        if self.index.beams:
            entry = self.index.beams[max(self.index.beams)].selected[0]
            best = (entry.candidate_id, entry.latency_ms, entry.latency_kind)
        else:  # no iteration completed: the best is the baseline, if it ran
            baseline = ids.baseline_id(self.search_id)
            if baseline in self.index.candidates:
                kernel = self._kernel(baseline)
                if kernel.measured is not None and kernel.profile is not None:
                    best = (baseline, kernel.measured.latency_ms, kernel.profile.latency_kind)
        self._record(
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

    def run(self) -> SearchOutcome:
        self._open()
        if self.index.finished is None:
            self._record(
                SearchStarted(
                    task=self.task.name,
                    search_id=self.search_id,
                    task_source_hash=self.task.content_hash,
                    baseline_candidate_id=ids.baseline_id(self.search_id),
                    backend=self.profiler.backend_name,
                    target=self.profiler.target,
                    shapes=self.profiler.shapes,
                    settings=self.config.as_event_settings(),
                    models=(
                        {role: c.model for role, c in self._llm.config.roles.items()}
                        if self._llm is not None
                        else {}
                    ),
                ),
                key=ids.STARTED_KEY,
            )
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
                iterations = max(self.index.beams, default=0)
            self._finish(reason, detail, iterations)
        return self.outcome()

    def outcome(self) -> SearchOutcome:
        finished = self.index.finished
        assert finished is not None
        baseline_id = ids.baseline_id(self.search_id)
        baseline = (
            self._profile(baseline_id, "baseline") if baseline_id in self.index.candidates else None
        )
        base_ms = baseline.latency_ms if baseline and baseline.correct else None
        best_ms = finished.best_latency_ms
        outcome = SearchOutcome(
            task=self.task.name,
            search_id=self.search_id,
            reason=finished.reason,
            detail=finished.detail,
            iterations=finished.iterations,
            baseline_latency_ms=base_ms,
            best_latency_ms=best_ms,
            speedup=base_ms / best_ms if base_ms and best_ms else None,
            latency_kind=finished.latency_kind or (baseline.latency_kind if baseline else None),
            best_candidate=finished.best_candidate_id,
            promoted_candidate=self._promoted()[0],
        )
        unpriced: set[str] = set()
        for stored in self.store.read_all(types=["LLMCallCompleted"]):
            call = decode(stored).event
            assert isinstance(call, LLMCallCompleted)
            if not ids.is_call_of(call.call_id, self.search_id):
                continue
            if call.error is not None:
                outcome.failed_llm_calls += 1
                continue
            outcome.llm_calls += 1
            outcome.prompt_tokens += call.prompt_tokens
            outcome.completion_tokens += call.completion_tokens
            outcome.cost_usd += call.cost_usd
            if call.parameters.get("priced") is False:
                unpriced.add(call.model)
        outcome.unpriced_models = sorted(unpriced)
        return outcome


def _recorded_config(settings: dict[str, Any], current: SearchConfig) -> SearchConfig:
    """The configuration a resumed search started with (it does not change midway)."""
    return current.model_validate(settings)
