"""Re-verification, a clock job: every promoted kernel is profiled again on fresh inputs, and
one that now fails is demoted (`KernelDemoted`), which takes it out of the library."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import structlog

from agents.search import Interrupted
from agents.search.ids import demotion_key, reverify_job_id
from agents.search.profiling import Profiler
from daemon.revisions import materialize
from events.catalog import KernelDemoted, KernelSourceChanged
from nkibench.errors import PhaseFailure, TaskError
from nkibench.sandbox.isolation import Isolation
from nkibench.sandbox.parse_child import written_dialect
from store.projections.library import Promotion
from store.recorder import Recorder

__all__ = ["REVERIFY_SEEDS", "Reverifier"]

log = structlog.get_logger("accelopt.reverify")
REVERIFY_SEEDS = 5
"""Fresh inputs per re-verification, as many as AccelOpt's correctness seeds."""


class Reverifier:
    def __init__(
        self,
        *,
        recorder: Recorder,
        promoted: Callable[[], list[tuple[Promotion, KernelSourceChanged]]],
        profiler: Callable[[tuple[int, ...]], Profiler],
        revisions: Path,
        every_s: float,
        stopping: threading.Event,
        on_demotion: Callable[[], None],
        isolation: Isolation,
    ) -> None:
        self.recorder = recorder
        self.promoted = promoted
        """The promotions of the tasks' current revisions, with those revisions."""
        self.profiler = profiler
        self.revisions = revisions
        self.every_s = every_s
        self.stopping = stopping
        self.on_demotion = on_demotion
        self.isolation = isolation
        """The parse child's sandbox: the kernel's source comes from the log, and a kernel is
        parsed in no process of the daemon's, even one it checked before."""

    def __call__(self) -> None:
        epoch = int(time.time() // max(self.every_s, 1))
        seeds = tuple(epoch % 100_000 * 10 + i for i in range(REVERIFY_SEEDS))
        store = self.recorder.store
        for e, revision in self.promoted():
            if self.stopping.is_set():
                return
            task = e.task
            spec = materialize(store, revision, self.revisions)
            source = store.get_text(e.kernel_hash)
            job_id = reverify_job_id(task, e.candidate_id, epoch)
            try:
                where = f"{task}'s promoted kernel"
                written = written_dialect(source, where, isolation=self.isolation)
                if written is not None and written != spec.dialect:  # a port's kernel
                    spec = spec.with_kernel(source, written)
                result = self.profiler(seeds).profile(spec, source, job_id=job_id)
            except Interrupted:
                return
            except TaskError as problem:  # not this daemon's to check (another --shapes)
                log.info("not re-verified", task=task, reason=problem.message)
                continue
            except PhaseFailure as problem:
                # it passed this check as a candidate: the parse child's failure now is no
                # verdict on the kernel (its profile would say what is wrong with it)
                log.warning("not re-verified", task=task, reason=problem.message)
                continue
            if result.correct:
                continue
            if result.error_kind == "job_failed":  # the infrastructure's, no verdict on it
                log.warning("not re-verified", task=task, reason=result.message)
                continue
            self.recorder.record(
                f"task:{task}",
                KernelDemoted(
                    task=task,
                    candidate_id=e.candidate_id,
                    backend=e.backend,
                    target=e.target,
                    reason=f"re-verification on seeds {list(seeds)}: {result.error_kind}: "
                    f"{result.message}",
                ),
                key=demotion_key(job_id),
            )
            log.warning("promoted kernel demoted", task=task, candidate=e.candidate_id)
            self.on_demotion()
