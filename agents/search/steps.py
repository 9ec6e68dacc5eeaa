"""The steps of one iteration that make and repair candidates, and learn from them.

- plans: the planner, N per beam candidate, shown the parent's profile and the memory;
- implementations: the executor, K per plan;
- tunables: one variant per other choice of each declared tunable of the incumbent (no LLM);
- measure and fix: profile new candidates, and let the fixer repair failures (at most F times);
- lessons: the summarizer on the iteration's slow/fast pairs, as AccelOpt chooses them.

Each step first looks for its own results in the search's index (under ids that say what they
are for, agents/search/ids.py) and asks only for what is missing, so a resumed search asks
nothing twice. LLM calls of one step run in parallel; their results are recorded in a fixed
order, so the log does not depend on which answer came first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from types import MappingProxyType
from typing import Any, TypeVar

from agents.calls import stoppable
from agents.config import SearchConfig
from agents.llm import Completion, LLMClient, LLMError
from agents.memory import MemoryProjection, MemoryState, lesson_as_shown, shown_to_planner
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
from agents.search.profiling import Kernel, Profiles
from agents.search.record import SearchRecord
from agents.search.selection import Pair, select_lessons
from agents.search.tunables import variants
from events.catalog import ExperienceSummarized, PlanProposed, ProfileRecorded, RejectReason
from events.codec import decode
from events.projection import fold
from nkibench.cost.caveats import caveats
from nkibench.result import GPU_RUN_COUNTERS
from nkibench.sandbox.isolation import Isolation
from nkibench.task.spec import TaskSpec

__all__ = [
    "Context",
    "fix",
    "implementations",
    "lessons",
    "measure",
    "plans",
    "tunables",
]

T = TypeVar("T")
FIXABLE = frozenset({"compile", "runtime", "constraint", "unsupported", "incorrect", "rejected"})
"""Failures a repaired source may mend; a timeout, a resource limit or a cheat is not sent to
the fixer."""
REJECTION: Mapping[str, RejectReason] = MappingProxyType(
    {
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
)
"""A profile's error kind → the reason its candidate is rejected (any other: "crashed")."""
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
    "spill_save_bytes",
    "spill_reload_bytes",
    "sbuf_buffers_per_tile",
    # GPUs (the triton backend): the measured rates against the device's measured ceilings
    "achieved_bandwidth_gbps",
    "achieved_tflops",
    "bandwidth_ceiling_gbps",
    "matmul_ceiling_tflops",
    # GPUs, where Nsight Compute is: one run's hardware counters over its kernels
    *GPU_RUN_COUNTERS,
)
"""The counters the planner sees (AccelOpt's displayed profile, plus DMA transfers)."""
GPU_KERNELS_SHOWN = 8
"""Kernels of a GPU profile whose counters the planner sees (in launch order)."""


@dataclass(frozen=True)
class Context:
    """What the steps share: the task, the search's record and profiles, and the agents."""

    task: TaskSpec
    record: SearchRecord
    profiles: Profiles
    llm: LLMClient | None
    """None in a search without agents, which runs only the tunables."""
    prompts: Prompts
    config: SearchConfig
    memory: MemoryProjection
    operators: list[str]
    entry_points: tuple[str, ...]
    """The functions a generated kernel must define (the dialect's)."""
    say: Callable[[str], None]
    check_stop: Callable[[], None]
    isolation: Isolation
    """The sandbox of the parse child, which reads the kernels' constants (the tunables)."""

    @property
    def client(self) -> LLMClient:
        assert self.llm is not None, "an LLM step in a search without agents"
        return self.llm


class LLMUnavailable(Exception):
    """Every planner call of an iteration failed for good (after its retries): the endpoint is
    down, rate-limited or refusing. That is no verdict on the kernel, so the search is not
    finished ("plateau" would rest the task for hours): it stops unfinished, and its next run
    resumes at the same iteration."""


def _parallel(ctx: Context, work: Sequence[Callable[[], T]]) -> list[T | Exception]:
    """Run LLM steps concurrently, at most max_concurrency at a time; results (or their
    exceptions) in the given order. A search asked to stop (the daemon draining) leaves at
    once, even with a call that hangs or trickles (agents/calls.py). With no step, nothing
    asks for the client: a search without agents has none."""
    ctx.check_stop()
    if not work:
        return []
    return stoppable(work, check_stop=ctx.check_stop, width=ctx.client.config.max_concurrency)


# --- the planner ------------------------------------------------------------------------


def _planner_profile(profile: ProfileRecorded) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "latency": profile.latency_ms,
        "latency_kind": profile.latency_kind,
        "pct_of_peak": profile.pct_of_peak,
        "bound_by": profile.bound_by,
        "hot_lines": profile.hot_lines,
    }
    shown.update({k: profile.counters[k] for k in PROFILE_FIELDS if k in profile.counters})
    if profile.autotuned:  # the config each autotuned kernel was timed with (Triton)
        shown["autotuned"] = profile.autotuned
    if profile.workloads:  # the latency is their geometric mean: which sizes are slow
        shown["workloads"] = [
            {"name": w.name, "uuid": w.uuid, "latency": w.latency_ms} for w in profile.workloads
        ]
    if profile.gpu_kernels:  # the GPU's counters, per kernel of one run (Nsight Compute)
        shown["gpu_kernels"] = profile.gpu_kernels[:GPU_KERNELS_SHOWN]
    if profile.counters_unavailable:
        shown["gpu_counters_caveat"] = (
            f"no hardware counters for this profile: {profile.counters_unavailable}"
        )
    if profile.latency_kind == "estimated" and profile.backend == "nkisim":
        shown["estimate_caveats"] = caveats(profile.counters)  # the Trainium cost model's
    return shown


def _memory(ctx: Context) -> MemoryState:
    store = ctx.record.recorder.store
    events = (decode(s) for s in store.read_all(types=["ExperienceSummarized"]))
    return fold(ctx.memory, events, ctx.memory.initial())


def _experiences(ctx: Context) -> list[tuple[str, str]]:
    """The memory as of now, as this task's planner sees it: (title, summary) pairs, the code
    of lessons learnt in another dialect left out."""
    target = ctx.profiles.profiler.target
    state = _memory(ctx)
    dialect = ctx.task.dialect
    items = shown_to_planner(
        state,
        task=ctx.task.name,
        operators=ctx.operators,
        target=target,
        dialect=dialect,
        limit=ctx.config.memory_shown,
    )
    return [
        (item.title, lesson_as_shown(item, ctx.record.text(item.summary_blob), dialect=dialect))
        for item in items
    ]


def _plan(
    ctx: Context, iteration: int, parent: Kernel, index: int, experiences: list[tuple[str, str]]
) -> Completion:
    assert parent.profile is not None
    messages = planner_messages(
        ctx.prompts,
        kernel=parent.source,
        reference=ctx.task.reference_source,
        profile=_planner_profile(parent.profile),
        experiences=experiences,
    )
    return ctx.client.complete(
        call_id=ids.planner_call_id(
            ctx.record.search_id, iteration, parent.event.candidate_id, index
        ),
        role="planner",
        messages=messages,
        task=ctx.task.name,
        seed=index,
    )


def plans(ctx: Context, iteration: int, beam: list[Kernel]) -> list[PlanProposed]:
    """N plans for every kernel of the beam; a failed planner call leaves its plan out."""
    search_id = ctx.record.search_id
    index = ctx.record.index
    wanted = [
        (parent, n, ids.plan_id(search_id, iteration, parent.event.candidate_id, n))
        for parent in beam
        for n in range(ctx.config.plans)
    ]
    missing = [(parent, n, pid) for parent, n, pid in wanted if pid not in index.plans]
    if missing:
        experiences = _experiences(ctx)
        answers = _parallel(
            ctx,
            [partial(_plan, ctx, iteration, parent, n, experiences) for parent, n, _ in missing],
        )
        failed = [a for a in answers if isinstance(a, LLMError)]
        if len(failed) == len(wanted):  # every plan of the iteration was asked for, and lost
            raise LLMUnavailable(
                f"{ctx.task.name}: iteration {iteration}: all {len(failed)} planner calls "
                f"failed; the last: {failed[-1].message}"
            )
        for (parent, n, pid), answer in zip(missing, answers, strict=True):
            if isinstance(answer, Exception):
                ctx.say(f"{ctx.task.name}: planner call failed: {answer}")
                continue
            ctx.record.record(
                PlanProposed(
                    task=ctx.task.name,
                    search_id=search_id,
                    iteration=iteration,
                    plan_id=pid,
                    plan_index=n,
                    parent_candidate_id=parent.event.candidate_id,
                    plan_blob=ctx.record.put(answer.text),
                    llm_call_id=answer.call_id,
                ),
                key=ids.plan_key(pid),
            )
    return [index.plans[pid] for _, _, pid in wanted if pid in index.plans]


# --- the executor -----------------------------------------------------------------------


def _execute(ctx: Context, plan: PlanProposed, sample: int) -> tuple[Completion, str]:
    parent_source = ctx.record.source(plan.parent_candidate_id)
    messages = executor_messages(
        ctx.prompts,
        kernel=parent_source,
        reference=ctx.task.reference_source,
        plan=ctx.record.text(plan.plan_blob),
    )
    answer = ctx.client.complete(
        call_id=ids.executor_call_id(ctx.record.search_id, plan.plan_id, sample),
        role="executor",
        messages=messages,
        task=ctx.task.name,
        seed=sample,
    )
    return answer, parent_source


def implementations(ctx: Context, iteration: int, plans: list[PlanProposed]) -> list[str]:
    """K kernels for every plan: the ids of those recorded (duplicates included)."""
    search_id = ctx.record.search_id
    index = ctx.record.index
    slots = [
        (plan, k, ids.executor_candidate_id(search_id, plan.plan_id, k))
        for plan in plans
        for k in range(ctx.config.samples)
    ]
    missing = [
        (plan, k, cid)
        for plan, k, cid in slots
        if cid not in index.candidates and cid not in index.rejected
    ]
    answers = _parallel(ctx, [partial(_execute, ctx, plan, k) for plan, k, _ in missing])
    for (plan, k, cid), answer in zip(missing, answers, strict=True):
        if isinstance(answer, LLMError):
            ctx.record.reject(cid, "llm_error", answer.message)
            continue
        assert not isinstance(answer, Exception)
        completion, parent_source = answer
        try:
            code = extract_code(
                completion.text, completion.finish_reason, parent_source, ctx.entry_points
            )
        except NoCode as e:
            ctx.record.reject(cid, e.reason, e.message)
            continue
        ctx.record.candidate(
            iteration=iteration,
            candidate=cid,
            source=code,
            origin="executor",
            parent=plan.parent_candidate_id,
            plan=plan.plan_id,
            sample=k,
            call=completion.call_id,
        )
    return [cid for _, _, cid in slots if cid in index.candidates]


# --- the tunables (no LLM) --------------------------------------------------------------


def tunables(ctx: Context, iteration: int, incumbent: Kernel) -> list[str]:
    """The incumbent with one tunable changed, for every other choice of every tunable."""
    if not ctx.task.tunables:
        return []
    made = []
    for n, (name, value, source) in enumerate(
        variants(incumbent.source, ctx.task.tunables, isolation=ctx.isolation)
    ):
        cid = ids.tunable_candidate_id(
            ctx.record.search_id, incumbent.event.candidate_id, name, value
        )
        made.append(cid)
        ctx.record.candidate(
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


# --- measuring, and the fixer -----------------------------------------------------------


def fix(ctx: Context, iteration: int, failed: Kernel, attempt: int) -> str | None:
    """A repaired version of a failing candidate, or None (no code, or the LLM failed)."""
    profile = failed.profile
    assert profile is not None
    index = ctx.record.index
    cid = ids.fixer_candidate_id(ctx.record.search_id, failed.event.candidate_id, attempt)
    if cid in index.candidates or cid in index.rejected:
        return cid if cid in index.candidates else None
    messages = fixer_messages(
        ctx.prompts,
        kernel=failed.source,
        reference=ctx.task.reference_source,
        error_kind=profile.error_kind or "failed",
        error=profile.error_message or "",
    )
    call_id = ids.fixer_call_id(ctx.record.search_id, failed.event.candidate_id, attempt)

    def repair() -> str:
        answer = ctx.client.complete(
            call_id=call_id, role="fixer", messages=messages, task=ctx.task.name
        )
        return extract_code(answer.text, answer.finish_reason, failed.source, ctx.entry_points)

    # on a step thread, as every other role's call: a search asked to stop leaves at once.
    # Asked from the search's own thread, a fixer call that hung held a draining daemon past
    # DRAIN_LIMIT_S (the call is asked again, by its id, at the next start).
    (code,) = _parallel(ctx, [repair])
    if isinstance(code, LLMError):
        ctx.record.reject(cid, "llm_error", code.message)
        return None
    if isinstance(code, NoCode):
        ctx.record.reject(cid, code.reason, code.message)
        return None
    assert isinstance(code, str)  # _parallel returns no other exception
    return ctx.record.candidate(
        iteration=iteration,
        candidate=cid,
        source=code,
        origin="fixer",
        parent=failed.event.parent_candidate_id,
        plan=failed.event.plan_id,
        sample=attempt,
        call=call_id,
    )


def measure(ctx: Context, iteration: int, candidates: list[str]) -> None:
    """Profile new candidates in order; repair the failures the fixer may mend."""
    index = ctx.record.index
    attempts = ctx.config.fixer_attempts
    for first in candidates:
        current: str | None = first
        for attempt in range(1 + attempts):
            if (
                current is None
                or index.by_hash.get(index.candidates[current].kernel_hash) != current
            ):
                break
            kernel = ctx.profiles.kernel(current)
            profile = kernel.profile
            assert profile is not None
            if profile.correct:
                break
            kind = profile.error_kind or "runtime"
            ctx.record.reject(
                current,
                REJECTION.get(kind, "crashed"),
                f"{kind}: {profile.error_message or 'no message'}",
            )
            if kind not in FIXABLE or attempt == attempts or ctx.llm is None:
                break  # a search without agents has no fixer
            current = fix(ctx, iteration, kernel, attempt + 1)


# --- the summarizer ---------------------------------------------------------------------


def _pairs(ctx: Context, iteration: int) -> list[Pair]:
    """The iteration's correct children of the LLM, each measured against its parent."""
    index = ctx.record.index
    pairs = []
    for event in index.of_iteration(iteration):
        if event.origin not in ("executor", "fixer") or event.parent_candidate_id is None:
            continue
        if event.candidate_id in index.rejected:
            continue
        child = ctx.profiles.kernel(event.candidate_id).measured
        parent = ctx.profiles.kernel(event.parent_candidate_id).measured
        if child is None or parent is None:
            continue
        # grouped by branch (parent, plan): AccelOpt keeps one pair per branch
        pairs.append(Pair(parent, child, f"{event.parent_candidate_id}|{event.plan_id}"))
    return pairs


def _summarize(ctx: Context, pair: Pair) -> None:
    positive = pair.speedup > 1.0
    slow, fast = (pair.parent, pair.child) if positive else (pair.child, pair.parent)
    search_id = ctx.record.search_id
    call_id = ids.summarizer_call_id(search_id, slow.candidate_id, fast.candidate_id)
    item_id = ids.memory_item_id(call_id)
    if item_id in ctx.record.index.lessons:
        return
    profile = ctx.profiles.kernel(fast.candidate_id).profile
    assert profile is not None
    messages = summarizer_messages(
        ctx.prompts,
        reference=ctx.task.reference_source,
        slow_kernel=ctx.record.source(slow.candidate_id),
        fast_kernel=ctx.record.source(fast.candidate_id),
        speedup=slow.latency_ms / fast.latency_ms,
        latency_kind=profile.latency_kind or "estimated",
    )
    try:
        answer = ctx.client.complete(
            call_id=call_id, role="summarizer", messages=messages, task=ctx.task.name
        )
    except LLMError as e:
        ctx.say(f"{ctx.task.name}: summarizer call failed: {e}")
        return
    lesson = parse_lesson(answer.text)
    ctx.record.record(
        ExperienceSummarized(
            task=ctx.task.name,
            search_id=search_id,
            operators=ctx.operators,
            item_id=item_id,
            polarity="positive" if positive else "negative",
            slow_candidate_id=slow.candidate_id,
            fast_candidate_id=fast.candidate_id,
            speedup=slow.latency_ms / fast.latency_ms,
            title=lesson.title,
            summary_blob=ctx.record.put(lesson.summary),
            llm_call_id=answer.call_id,
            model=answer.model,
            backend=profile.backend,
            target=profile.target,
            fingerprint=profile.fingerprint,
            dialect=ctx.task.dialect,
        ),
        key=ids.lesson_key(item_id),
    )


def lessons(ctx: Context, iteration: int) -> None:
    """The memory's new items: lessons from the iteration's most telling pairs."""
    chosen = select_lessons(
        _pairs(ctx, iteration),
        limit=ctx.config.experiences_per_iteration,
        positive=ctx.config.positive_speedup,
        negative=ctx.config.negative_slowdown,
    )
    _parallel(ctx, [partial(_summarize, ctx, pair) for pair in chosen])
