"""Starting the searches the portfolio chooses, one thread each, and what they leave behind.

`SearchLauncher.start` is called by the daemon's main loop after each fold: it forgets the
searches whose threads ended, and starts what `portfolio.choose` picks for the free slots
(`max_searches`; by default the devices, its own or the fleet's leased ones, plus one). Each
search runs in its thread: the task rebuilt from the log, ported to current NKI first where
the daemon's target runs only that, then the agents' loop with a profiler that queues jobs. A
search that crashes is recorded as a failure (its task cools down before the next) and
reported to the database's health. The tasks' weights, written by the search threads, and the
failures are read by the main loop and by the profilers' priorities: both are guarded by one
lock.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import structlog

from agents.llm import LLMClient
from agents.port import Porter
from agents.search import Interrupted, LLMUnavailable, Search
from daemon.coordinator.health import StoreHealth
from daemon.coordinator.options import DaemonOptions
from daemon.coordinator.portfolio import PortfolioView, choose
from daemon.process.allocator import return_free_memory
from daemon.revisions import materialize
from daemon.workers.worker import QueuedProfiler
from events.catalog import KernelSourceChanged
from nkibench.backend import OpenedBackend
from nkibench.backends.open import open_backend
from nkibench.dialects import NKI, needs_port
from nkibench.errors import TaskError
from nkibench.sandbox.isolation import Isolation
from nkibench.task.spec import TaskSpec
from store.jobs.base import JobQueue
from store.projections.library import LibraryState
from store.recorder import Recorder
from store.sql import SqlEventStore

__all__ = ["Running", "SearchLauncher"]

log = structlog.get_logger("accelopt.daemon")


@dataclass
class Running:
    thread: threading.Thread
    stop: threading.Event
    revision: str


class SearchLauncher:
    def __init__(
        self,
        options: DaemonOptions,
        *,
        store: SqlEventStore,
        recorder: Recorder,
        queue: JobQueue,
        llm: LLMClient | None,
        opened: OpenedBackend,
        isolation: Isolation,
        health: StoreHealth,
        view: Callable[[], PortfolioView],
        revisions: Path,
        stopping: threading.Event,
        wake: threading.Event,
    ) -> None:
        """`view` is the portfolio as last folded (the profilers' priorities read it);
        `revisions` is where the tasks are rebuilt from the log; `wake` is set when a search
        ends."""
        self.options = options
        self.store = store
        self.recorder = recorder
        self.queue = queue
        self.llm = llm
        self.opened = opened
        self.isolation = isolation
        self.health = health
        self.view = view
        self.revisions = revisions
        self.stopping = stopping
        self.wake = wake
        self.running: dict[str, Running] = {}
        """Task → its search; the main loop alone reads and changes it."""
        self._lock = threading.Lock()
        """Guards `_weights` and `_failures`: search threads write them while the main loop
        and the profilers read them."""
        self._weights: dict[str, float] = {}
        self._failures: dict[str, float] = {}
        """Task → when a search of it last crashed (it waits `cooldown_s` before the next)."""

    @property
    def dialects(self) -> tuple[str, ...]:
        return tuple(sorted(self.opened.dialects))

    def weights(self) -> dict[str, float]:
        """Task → its weight, as its last search read it from the task (a copy)."""
        with self._lock:
            return dict(self._weights)

    def failures(self) -> dict[str, float]:
        """Task → when a search of it last crashed, in time.monotonic() (a copy)."""
        with self._lock:
            return dict(self._failures)

    def ended(self) -> list[str]:
        """The tasks whose search threads have ended (taken before a fold, so that their last
        events are folded when `start` forgets them)."""
        return [name for name, r in self.running.items() if not r.thread.is_alive()]

    def stop_outdated(self, library: LibraryState) -> None:
        """Stop the searches of a revision that is no longer the task's current one."""
        for name, running in self.running.items():
            current = library.revisions.get(name)
            if current is not None and current.content_hash != running.revision:
                running.stop.set()  # a search of an older revision is moot

    def join(self, deadline: float) -> None:
        """Wait for the search threads until `deadline` (time.monotonic()), each at least a
        moment."""
        for running in self.running.values():
            running.thread.join(timeout=max(0.1, deadline - time.monotonic()))

    def start(self, view: PortfolioView, library: LibraryState, ended: Sequence[str] = ()) -> None:
        """Start what the portfolio chooses; `ended` are searches whose threads had ended
        before the last fold (so their last events are in the view)."""
        for name in ended:
            del self.running[name]
        if ended:
            # A finished search's objects form cycles (its steps point back at it), which
            # only a full collection frees; in a heap this size those come rarely, and what
            # waits for them scatters the allocator's pages. What the collection freed stays
            # resident until glibc is asked to return it.
            gc.collect()
            returned = return_free_memory()
            if returned:
                log.debug("free memory returned", mb=round(returned / 1e6, 1))
        now = time.monotonic()
        cooling = frozenset(
            t for t, at in self.failures().items() if now - at < self.options.cooldown_s
        )
        for task in choose(
            view,
            running=set(self.running),
            cooling=cooling,
            slots=self.options.max_searches or self._devices() + 1,
            now=datetime.now(UTC),
            rest_s=self.options.rest_s,
            agents=self.llm is not None,
            weights=self.weights(),
        ):
            current = library.revisions.get(task)
            if current is None:
                continue
            revision = current.source_changed()
            stop = threading.Event()
            thread = threading.Thread(
                target=self._search, args=(revision, stop), name=f"search:{task}", daemon=True
            )
            self.running[task] = Running(thread, stop, revision.content_hash)
            thread.start()

    def profiler(
        self, stop: threading.Event, seeds: tuple[int, ...] | None = None
    ) -> QueuedProfiler:
        return QueuedProfiler(
            self.queue,
            backend_name=self.opened.name,
            target=self.opened.target,
            shapes=self.options.shapes,
            priority=self._priority,
            should_stop=lambda: stop.is_set() or self.stopping.is_set(),
            seeds=seeds,
        )

    def _devices(self) -> int:
        """The devices the searches' jobs can run on: this daemon's, or the fleet's leased
        ones (workers that come and go change it)."""
        devices = self.queue.devices()
        return devices if devices is not None else len(self.opened.devices)

    def _search(self, revision: KernelSourceChanged, stop: threading.Event) -> None:
        with structlog.contextvars.bound_contextvars(task=revision.task):
            try:
                task = materialize(self.store, revision, self.revisions)
                with self._lock:
                    self._weights[task.name] = task.weight
                if needs_port(task.dialect, self.opened.target, self.dialects):
                    task = self._ported(task, stop)
                search = Search(
                    task=task,
                    recorder=self.recorder,
                    llm=self.llm,
                    profiler=self.profiler(stop),
                    config=self.options.search,
                    isolation=self.isolation,
                    log=log.info,
                    should_stop=lambda: stop.is_set() or self.stopping.is_set(),
                )
                outcome = search.run()
                log.info(
                    "search finished",
                    search=outcome.search_id,
                    reason=outcome.reason,
                    detail=outcome.detail,
                    speedup=outcome.speedup,
                    latency_kind=outcome.latency_kind,
                )
            except Interrupted as e:
                log.info("search stopped", detail=str(e))
            except LLMUnavailable as e:  # the endpoint's failure, not the search's: no traceback
                with self._lock:
                    self._failures[revision.task] = time.monotonic()
                log.warning(
                    "the LLM endpoint failed; the search resumes later",
                    detail=str(e),
                    in_s=self.options.cooldown_s,
                )
            except Exception as e:
                with self._lock:
                    self._failures[revision.task] = time.monotonic()
                # the exception itself, not True: a captured log (the tests') keeps its traceback
                log.exception(
                    "search failed; it is retried", in_s=self.options.cooldown_s, exc_info=e
                )
                self.health.report(e, f"the search of {revision.task}")
            finally:
                self.wake.set()

    def _ported(self, task: TaskSpec, stop: threading.Event) -> TaskSpec:
        """A legacy-NKI task moved to current NKI (verified by nkisim on every seed) before its
        search, where this daemon's backend and target run only current NKI."""
        if self.llm is None:
            raise TaskError(f"{task.path}: a legacy NKI task needs a port, and the agents are off")
        reason = f"the {self.opened.name} backend on {self.opened.target} runs only current NKI"
        log.info("porting a legacy NKI task before optimizing it", reason=reason)

        def check_stop() -> None:  # the search's own stop, so that a drain leaves the port too
            if stop.is_set() or self.stopping.is_set():
                raise Interrupted(f"the port of {task.name} stopped; it resumes at the next start")

        verifier = open_backend("nkisim", target=self.opened.target, isolation=self.isolation)
        porter = Porter(
            llm=self.llm,
            recorder=self.recorder,
            backend=verifier.first(),
            target=self.opened.target,
            shapes=self.options.shapes,
            say=log.info,
            check_stop=check_stop,
        )
        outcome = porter.run(task, reason)
        if outcome.source is None:
            raise TaskError(f"{task.path}: {outcome.message}")
        return task.with_kernel(outcome.source, NKI.name)

    def _priority(self, task: str) -> float:
        """Device slots go first to tasks with the most headroom to peak, by weight."""
        view = self.view().tasks.get(task)
        headroom = 1.0 - min((view.pct_of_peak or 0.0) if view else 0.0, 100.0) / 100.0
        with self._lock:
            weight = self._weights.get(task, 1.0)
        return headroom * weight
