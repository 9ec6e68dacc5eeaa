"""What the kernel tools do, without MCP: checks in the sandboxed harness on this host, and an
agent's kernels through the daemon's own machinery (the reading tools: reading.py).

An agent's work on one task revision is a session (`agent:<session id>`, agents/search/ids.py):
a search's stream without a SearchStarted, so no daemon ever resumes it. Each kernel it profiles
or submits is a `CandidateGenerated` of origin `agent`, naming the MCP client and the model it
declared, profiled by a job on the route's queue and recorded as `ProfileRecorded` under the
job's id; a failing one is rejected as the search rejects its own. A submission is promoted by
the search's rule (agents.search.promotion): faster than the library's kernel, or the task's
own, by more than `min_gain`, then re-verified on every seed of the task by a second profile.
A promoted kernel stands until the daemon's re-verification demotes it. A lesson that comes
with a promoted submission becomes an `ExperienceSummarized` naming the agent; a rejected
submission teaches nothing.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path

from agents.config import SearchConfig
from agents.search import ids
from agents.search.profiling import Profiles
from agents.search.promotion import promote_if_verified
from agents.search.record import SearchRecord
from agents.search.steps import REJECTION
from daemon.mcp.budget import DeviceBudget
from daemon.mcp.errors import Refusal
from daemon.mcp.models import CheckOutcome, ProfileOutcome, SubmitOutcome
from daemon.mcp.reading import TaskReader, latency, profile_caveats
from daemon.mcp.route import JobRoute
from events.catalog import AgentOrigin, ExperienceSummarized, ProfilePurpose, ProfileRecorded
from nkibench.errors import TaskError
from nkibench.harness import check_kernel
from nkibench.sandbox.parse_child import size_refusal
from nkibench.task.operators import operators as task_operators
from nkibench.task.spec import TaskSpec
from store.recorder import Recorder
from store.sql import SqlEventStore

__all__ = ["LESSON_LIMIT", "PLAN_LIMIT", "AgentDesk", "Caller"]

PLAN_LIMIT = 16 * 1024
"""Characters of a plan kept; an agent's plan is prose, not a second kernel."""
LESSON_LIMIT = 8 * 1024
"""Characters of a lesson; the planner is shown it whole, in every prompt of its task."""
TITLE_LIMIT = 200


@dataclass(frozen=True)
class Caller:
    """Who calls a tool: `key` is the client's name made safe for ids (budget and sessions are
    per key), `origin` what the log records."""

    key: str
    origin: AgentOrigin

    def as_model(self, model: str | None) -> Caller:
        """The same client, declaring `model` for this call."""
        if not model:
            return self
        return Caller(self.key, self.origin.model_copy(update={"model": model[:TITLE_LIMIT]}))


class AgentDesk:
    """The kernel tools: check, profile, submit."""

    def __init__(
        self,
        *,
        store: SqlEventStore,
        route: JobRoute,
        budget: DeviceBudget,
        revisions: Path,
        config: SearchConfig | None = None,
    ) -> None:
        """`config`: the search's rules (min_gain, the memory shown); `revisions`: where tasks
        are rebuilt from the log (the daemon's own folder: its workers on this host read the
        revisions an agent's jobs name)."""
        self.recorder = Recorder(store)
        self.route = route
        self.budget = budget
        self.config = config or SearchConfig()
        self.reader = TaskReader(
            store,
            platform=route.platform,
            target=route.target,
            revisions=revisions,
            config=self.config,
        )
        self.follower = self.reader.follower

    # --- kernels ---------------------------------------------------------------------------

    def check(self, caller: Caller, name: str, source: str) -> CheckOutcome:
        """Correctness only, in the sandbox, on this host; nothing recorded."""
        spec = self._runnable(name)
        _within_limits(source)
        self.budget.admit(caller.key)
        started = time.monotonic()
        try:
            result = check_kernel(
                spec,
                backend=self.route.opened.first(),
                kernel_source=source,
                shapes=self.route.shapes,
                target=self.route.target,
            )
        except TaskError as e:  # not this task's shapes, say: the task's problem, as check's
            raise Refusal("task", e.message) from None
        finally:
            self.budget.charge(caller.key, time.monotonic() - started)
        if not result.correct:
            raise Refusal(result.error_kind or "runtime", result.message or "no message")
        return CheckOutcome(
            task=name,
            correct=True,
            seeds=result.seeds,
            max_rel_l2=result.max_rel_l2,
            shapes=result.shapes,
            backend=result.backend,
            target=result.target,
        )

    def profile(
        self,
        caller: Caller,
        name: str,
        source: str,
        *,
        plan: str | None = None,
        parent: str | None = None,
    ) -> ProfileOutcome:
        """Record the kernel as the agent's candidate and profile it; a failing one is a
        Refusal of its verdict's kind (recorded, and rejected, all the same)."""
        spec = self._runnable(name)
        _within_limits(source)
        if parent is not None:
            self.reader.candidate_of(name, parent)
        self.route.check_available()
        self.budget.admit(caller.key)
        record, profiles = self._session(caller, spec)
        candidate = self._candidate(record, caller, source, plan, parent)
        profile = profiles.profile(candidate, "candidate")
        if not profile.correct:
            kind = profile.error_kind or "runtime"
            message = profile.error_message or "no message"
            record.reject(candidate, REJECTION.get(kind, "crashed"), f"{kind}: {message}")
            raise Refusal(kind, message, candidate_id=candidate)  # type: ignore[arg-type]
        return self._outcome(spec, candidate, profile)

    def submit(
        self,
        caller: Caller,
        name: str,
        *,
        source: str,
        plan: str,
        parent: str | None,
        lesson: str | None,
    ) -> SubmitOutcome:
        spec = self.reader.task(name)
        if lesson is not None and len(lesson) > LESSON_LIMIT:
            raise Refusal(
                "rejected", f"the lesson is {len(lesson)} characters, over {LESSON_LIMIT}"
            )
        outcome = self.profile(caller, name, source, plan=plan, parent=parent)
        assert outcome.latency is not None  # a failing kernel was refused
        record, profiles = self._session(caller, spec)
        candidate = outcome.candidate_id
        baseline_ms, reference_ms, reference_id = self._reference(record, profiles, spec)
        promoted_now = self._promoted_id(name)
        if promoted_now != candidate:
            min_gain = self.config.min_gain
            if outcome.latency.ms * min_gain > reference_ms:
                raise Refusal(
                    "not_promoted",
                    f"{outcome.latency.ms:.4f} ms ({outcome.latency.kind}) is not faster than "
                    f"the library's {reference_ms:.4f} ms by more than {min_gain:g}x",
                    candidate_id=candidate,
                    details={"profile": outcome.model_dump(mode="json")},
                )
            refused = promote_if_verified(
                record,
                task=spec,
                candidate=candidate,
                latency_ms=outcome.latency.ms,
                baseline_ms=baseline_ms,
                reverify=lambda: profiles.profile(candidate, "reverify"),
                min_gain=min_gain,
            )
            if refused is not None:
                raise Refusal("not_promoted", f"{candidate} {refused}", candidate_id=candidate)
        item = None
        if lesson:
            item = self._lesson(
                record,
                caller=caller,
                spec=spec,
                candidate=candidate,
                slow=reference_id,
                lesson=lesson,
                slow_ms=reference_ms,
            )
        self.follower.catch_up()
        return SubmitOutcome(
            profile=self._outcome(spec, candidate, profiles.profile(candidate, "candidate")),
            promoted=True,
            speedup=baseline_ms / outcome.latency.ms,
            lesson_item_id=item,
        )

    # --- the pieces ------------------------------------------------------------------------

    def _runnable(self, name: str) -> TaskSpec:
        """The task, if its kernel language runs on this server's backend and target."""
        spec = self.reader.task(name)
        dialects = self.route.opened.dialects
        if spec.dialect not in dialects:
            raise Refusal(
                "task",
                f"{name} is written in {spec.dialect}; this server runs "
                f"{self.route.backend_name} ({', '.join(sorted(dialects))}): start "
                "`accelopt mcp` with the task's --backend",
            )
        try:
            spec.overrides(self.route.shapes)
        except TaskError as e:
            raise Refusal("task", e.message) from None
        return spec

    def _session(self, caller: Caller, spec: TaskSpec) -> tuple[SearchRecord, Profiles]:
        record = SearchRecord(self.recorder, spec.name, kind="agent")
        record.resume(ids.agent_session_id(caller.key, spec.name, spec.content_hash))
        profiler = self.route.profiler(lambda seconds: self.budget.charge(caller.key, seconds))
        profiles = Profiles(task=spec, record=record, profiler=profiler, check_stop=lambda: None)
        return record, profiles

    @staticmethod
    def _candidate(
        record: SearchRecord, caller: Caller, source: str, plan: str | None, parent: str | None
    ) -> str:
        kernel_hash = hashlib.sha256(source.encode("utf-8")).hexdigest()
        candidate = ids.agent_candidate_id(record.search_id, kernel_hash)
        recorded = record.candidate(
            iteration=0,
            candidate=candidate,
            source=source,
            origin="agent",
            parent=parent,
            plan=None,
            sample=0,
            call=None,
            agent=caller.origin,
            plan_text=plan[:PLAN_LIMIT] if plan else None,
        )
        if recorded is None:
            first = record.index.by_hash[kernel_hash]
            raise Refusal(
                "duplicate", f"the same kernel as {first}, profiled before", candidate_id=first
            )
        return candidate

    def _reference(
        self, record: SearchRecord, profiles: Profiles, spec: TaskSpec
    ) -> tuple[float, float, str]:
        """(the task's own kernel's latency, the latency to beat, the candidate holding it):
        the library's kernel where one is promoted, else the task's own; a task the daemon
        never baselined on this platform is baselined in the session first."""
        self.follower.catch_up()
        with self.follower.lock:
            task = self.follower.library.tasks[spec.name]
            platform = task.platforms.get(self.route.platform)
            baseline_ms = platform.baseline_ms if platform else None
            promoted = (platform.promoted_candidate_id, platform.promoted_ms) if platform else None
        baseline_id = self._baseline_id(spec)
        if baseline_ms is None or baseline_id is None:
            baseline_id = ids.baseline_id(record.search_id)
            record.candidate(
                iteration=0,
                candidate=baseline_id,
                source=spec.kernel_source,
                origin="baseline",
                parent=None,
                plan=None,
                sample=0,
                call=None,
            )
            measured = profiles.kernel(baseline_id).measured
            if measured is None:
                raise Refusal("task", f"{spec.name}'s own kernel fails: nothing to compare with")
            baseline_ms = measured.latency_ms
        if promoted is not None and promoted[0] is not None and promoted[1] is not None:
            return baseline_ms, promoted[1], promoted[0]
        return baseline_ms, baseline_ms, baseline_id

    def _baseline_id(self, spec: TaskSpec) -> str | None:
        """The latest candidate of the task's own kernel for this revision: a search's or an
        agent session's (both ids end in `@<revision[:12]>`, then a search's `#<n>`)."""
        revision = f"@{spec.content_hash[:12]}"
        with self.follower.lock:
            found = [
                c
                for c in self.follower.report.candidates.values()
                if c.task == spec.name
                and c.origin == "baseline"
                and c.search_id is not None
                and c.search_id.partition("#")[0].endswith(revision)
            ]
        return max(found, key=lambda c: c.position).candidate_id if found else None

    def _promoted_id(self, name: str) -> str | None:
        with self.follower.lock:
            platform = self.follower.library.tasks[name].platforms.get(self.route.platform)
            return platform.promoted_candidate_id if platform else None

    def _lesson(
        self,
        record: SearchRecord,
        *,
        caller: Caller,
        spec: TaskSpec,
        candidate: str,
        slow: str,
        lesson: str,
        slow_ms: float,
    ) -> str:
        """The promoted submission's lesson as a memory entry naming the agent."""
        check = next(p for p in self._profiles_of(record, candidate) if p.purpose == "reverify")
        assert check.latency_ms is not None
        item = ids.agent_lesson_id(record.search_id, candidate)
        title = lesson.strip().splitlines()[0].strip("*# ")[:TITLE_LIMIT] or "a lesson"
        record.record(
            ExperienceSummarized(
                task=spec.name,
                search_id=record.search_id,
                operators=task_operators(spec.reference_source),
                item_id=item,
                polarity="positive",
                slow_candidate_id=slow,
                fast_candidate_id=candidate,
                speedup=slow_ms / check.latency_ms,
                title=title,
                summary_blob=record.put(lesson),
                llm_call_id=None,
                model=caller.origin.model,
                backend=check.backend,
                target=check.target,
                fingerprint=check.fingerprint,
                dialect=spec.dialect,
                agent=caller.origin,
            ),
            key=ids.lesson_key(item),
        )
        return item

    def _profiles_of(self, record: SearchRecord, candidate: str) -> list[ProfileRecorded]:
        found: list[ProfileRecorded] = []
        purposes: tuple[ProfilePurpose, ...] = ("candidate", "reverify")
        for purpose in purposes:
            job = ids.profile_job_id(record.search_id, candidate, purpose)
            found.extend(self.recorder.of_type(f"job:{job}", ProfileRecorded))
        return found

    def _outcome(self, spec: TaskSpec, candidate: str, profile: ProfileRecorded) -> ProfileOutcome:
        with self.follower.lock:
            record = self.follower.library.tasks.get(spec.name)
            platform = record.platforms.get(self.route.platform) if record else None
        kind = profile.latency_kind
        return ProfileOutcome(
            task=spec.name,
            candidate_id=candidate,
            correct=profile.correct,
            latency=latency(profile.latency_ms, kind),
            baseline=latency(platform.baseline_ms, platform.latency_kind) if platform else None,
            promoted=latency(platform.promoted_ms, platform.latency_kind) if platform else None,
            pct_of_peak=profile.pct_of_peak,
            roofline_ms=profile.roofline_ms,
            bound_by=profile.bound_by,
            counters=profile.counters,
            hot_lines=[dict(line) for line in profile.hot_lines],
            model_version=profile.model_version,
            caveats=profile_caveats(profile),
            shapes=self.route.shapes,
            platform=f"{profile.backend}:{profile.target}",
        )


def _within_limits(source: str) -> None:
    """The kernel file's size limit, before anything is recorded or run."""
    refusal = size_refusal(source)
    if refusal is not None:
        raise Refusal("rejected", refusal.message)
