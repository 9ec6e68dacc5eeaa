"""A synthetic but realistic event workload: the mix a daemon optimizing many tasks writes.

Used by the store benchmark and the crash tests. Deterministic for a seed.
"""

from __future__ import annotations

import hashlib
import random
import uuid
from dataclasses import dataclass, field

from events.base import Event
from events.catalog import (
    BeamEntry,
    BeamSelected,
    CandidateGenerated,
    ExperienceSummarized,
    KernelPromoted,
    KernelSourceChanged,
    LLMCallCompleted,
    PlanProposed,
    ProfileRecorded,
    TaskInvalid,
)
from events.codec import encode
from events.envelope import NewEvent

__all__ = ["SyntheticWorkload"]

_COUNTERS = (
    "hbm_read_bytes",
    "hbm_write_bytes",
    "sbuf_read_bytes",
    "sbuf_write_bytes",
    "psum_read_bytes",
    "hardware_flops",
    "vector_engine_active_percent",
    "scalar_engine_active_percent",
)


@dataclass
class _Task:
    name: str
    revision: int = 0
    source_hash: str = ""
    best_ms: float = 0.0
    iteration: int = 0
    candidates: list[str] = field(default_factory=list)


class SyntheticWorkload:
    """Yields batches of events for tasks that get sources, baselines, plans, candidates,
    profiles, beams, experiences and promotions, with occasional edits and invalid saves."""

    def __init__(self, *, seed: int = 0, tasks: int = 100) -> None:
        self._random = random.Random(seed)
        self._tasks = [_Task(f"task{i:04d}") for i in range(tasks)]

    def _id(self) -> str:
        return str(uuid.UUID(int=self._random.getrandbits(128), version=4))

    def _hash(self) -> str:
        return hashlib.sha256(self._random.randbytes(16)).hexdigest()

    def batch(self, size: int) -> tuple[str, list[NewEvent]]:
        """One append's worth: (stream id, events) for one task."""
        task = self._random.choice(self._tasks)
        out: list[Event] = []
        while len(out) < size:
            out.extend(self._step(task))
        # streams as the agents name them: search:<task>@<revision hash[:12]>#<n>
        stream = f"search:{task.name}@{task.source_hash[:12]}#{task.revision}"
        return stream, [encode(e) for e in out[:size]]

    def _step(self, task: _Task) -> list[Event]:
        r = self._random
        if task.revision == 0 or r.random() < 0.002:
            return self._new_revision(task)
        roll = r.random()
        if roll < 0.05:
            return [self._beam(task)]
        if roll < 0.08:
            return [self._experience(task)]
        if roll < 0.09 and task.candidates:
            return [self._promotion(task)]
        return self._candidate(task)

    def _new_revision(self, task: _Task) -> list[Event]:
        task.revision += 1
        task.source_hash = self._hash()
        task.candidates.clear()
        task.iteration = 0
        task.best_ms = self._random.uniform(0.05, 20.0)
        task_dir = f"/srv/kernels/{task.name}"
        if self._random.random() < 0.05:
            return [
                TaskInvalid(
                    task=task.name,
                    task_dir=task_dir,
                    content_hash=task.source_hash,
                    file="kernel.py",
                    message="line 12: SyntaxError: invalid syntax",
                )
            ]
        files = {"kernel.py": self._hash(), "reference.py": self._hash()}
        return [
            KernelSourceChanged(
                task=task.name,
                task_dir=task_dir,
                content_hash=task.source_hash,
                files=files,
                dialect="nki-legacy",
            ),
            self._profile(task, None, "baseline", task.best_ms),
        ]

    def _profile(
        self, task: _Task, candidate: str | None, purpose: str, latency: float | None
    ) -> ProfileRecorded:
        r = self._random
        return ProfileRecorded.model_validate(
            {
                "job_id": self._id(),
                "task": task.name,
                "purpose": purpose,
                "candidate_id": candidate,
                "kernel_hash": self._hash(),
                "task_source_hash": task.source_hash,
                "backend": "nkisim",
                "target": "trn1",
                "compiled": True,
                "correct": latency is not None,
                "error_kind": None if latency is not None else "incorrect",
                "error_message": None if latency is not None else "relative L2 error 3.1e-2",
                "latency_ms": latency,
                "latency_kind": "estimated" if latency is not None else None,
                "latency_stats": {"n": 1.0} if latency is not None else {},
                "counters": {k: round(r.uniform(0, 1e9), 1) for k in _COUNTERS},
                "fingerprint": {"model": "nkisim-cost/1", "target": "trn1"},
                "model_version": "trn-cost-1",
                "pct_of_peak": round(r.uniform(10, 90), 2) if latency is not None else None,
                "roofline_ms": round(r.uniform(0.1, 10), 3) if latency is not None else None,
                "bound_by": r.choice(["tensor", "vector", "dma"]) if latency is not None else None,
                "hot_lines": [],
                "estimate_ms": None,
                "dialect": "nki-legacy",
            }
        )

    def _llm(self, task: _Task, role: str) -> LLMCallCompleted:
        r = self._random
        return LLMCallCompleted.model_validate(
            {
                "call_id": self._id(),
                "role": role,
                "model": "gpt-oss-120b",
                "base_url": "http://localhost:31001/v1",
                "parameters": {"temperature": 1.0, "max_tokens": 10000},
                "prompt_blob": self._hash(),
                "response_blob": self._hash(),
                "prompt_tokens": r.randint(2000, 9000),
                "completion_tokens": r.randint(200, 4000),
                "latency_s": round(r.uniform(2, 60), 3),
                "cost_usd": round(r.uniform(0.0001, 0.01), 6),
                "task": task.name,
            }
        )

    def _candidate(self, task: _Task) -> list[Event]:
        r = self._random
        plan_call, exec_call = self._llm(task, "planner"), self._llm(task, "executor")
        plan_id, candidate = self._id(), self._id()
        parent = r.choice(task.candidates) if task.candidates else candidate
        latency = task.best_ms * r.uniform(0.85, 1.6) if r.random() < 0.7 else None
        if latency is not None:
            task.best_ms = min(task.best_ms, latency)
        task.candidates = [*task.candidates[-5:], candidate]
        search_id = f"{task.name}:{task.revision}"
        return [
            plan_call,
            PlanProposed(
                task=task.name,
                search_id=search_id,
                iteration=task.iteration,
                plan_id=plan_id,
                plan_index=r.randrange(12),
                parent_candidate_id=parent,
                plan_blob=self._hash(),
                llm_call_id=plan_call.call_id,
            ),
            exec_call,
            CandidateGenerated(
                task=task.name,
                search_id=search_id,
                iteration=task.iteration,
                candidate_id=candidate,
                parent_candidate_id=parent,
                plan_id=plan_id,
                sample_index=r.randrange(2),
                origin="executor",
                kernel_hash=self._hash(),
                source_blob=self._hash(),
                llm_call_id=exec_call.call_id,
            ),
            self._profile(task, candidate, "candidate", latency),
        ]

    def _beam(self, task: _Task) -> BeamSelected:
        task.iteration += 1
        kept = task.candidates[-6:] or [self._id()]
        return BeamSelected(
            task=task.name,
            search_id=f"{task.name}:{task.revision}",
            iteration=task.iteration,
            selected=[
                BeamEntry(candidate_id=c, latency_ms=task.best_ms, latency_kind="estimated")
                for c in kept
            ],
            incumbent_id=kept[0],
        )

    def _experience(self, task: _Task) -> ExperienceSummarized:
        r = self._random
        slow, fast = self._id(), self._id()
        return ExperienceSummarized(
            task=task.name,
            search_id=f"{task.name}:{task.revision}",
            operators=["matmul", "sum"],
            item_id=self._id(),
            polarity="positive" if r.random() < 0.6 else "negative",
            slow_candidate_id=slow,
            fast_candidate_id=fast,
            speedup=round(r.uniform(1.05, 3.0), 4),
            title="Hoist loads out of the innermost loop",
            summary_blob=self._hash(),
            llm_call_id=self._id(),
            model="gpt-oss-120b",
            backend="nkisim",
            target="trn1",
            dialect="nki-legacy",
        )

    def _promotion(self, task: _Task) -> KernelPromoted:
        baseline = task.best_ms * self._random.uniform(1.0, 2.5)
        return KernelPromoted(
            task=task.name,
            candidate_id=task.candidates[-1],
            kernel_hash=self._hash(),
            task_source_hash=task.source_hash,
            backend="nkisim",
            target="trn1",
            latency_ms=task.best_ms,
            latency_kind="estimated",
            baseline_latency_ms=baseline,
            speedup=baseline / task.best_ms,
        )
