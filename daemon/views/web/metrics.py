"""Prometheus metrics, computed at each scrape from the log's projections and the job queue:
nothing is counted twice or kept apart from the log, so /metrics and `accelopt status` agree.
Latencies carry their kind as a label: measured and estimated never share a series. The state
disk is this host's, looked at each scrape, as `accelopt status` looks at it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector, CollectorRegistry
from sqlalchemy.engine import Engine

from daemon.views.web.follow import Follower
from store.jobs import JobState, open_queue
from store.sql import SqlEventStore

__all__ = ["StateDisk", "metrics_registry"]

DAEMON_PROJECTIONS = ("library", "memory", "portfolio")


class StateDisk(Protocol):
    """What the metrics read of the state disk (the coordinator's DiskSpace, which the views
    do not import)."""

    @property
    def free_bytes(self) -> int: ...
    @property
    def floor_bytes(self) -> int: ...
    @property
    def low(self) -> bool: ...


class _LogCollector(Collector):
    def __init__(self, follower: Follower, store: SqlEventStore) -> None:
        self.follower = follower
        self.store = store

    def collect(self) -> Iterator[Any]:
        with self.follower.lock:  # the states stay as folded while they are read
            yield from self._collect()

    def _collect(self) -> Iterator[Any]:
        head = self.store.head()
        folded = self.follower.catch_up()
        library, report = self.follower.library, self.follower.report
        yield GaugeMetricFamily("accelopt_log_events", "Events in the log (its head).", head)

        lag = GaugeMetricFamily(
            "accelopt_projection_lag_events",
            "How many events a projection's saved state is behind the log's head.",
            labels=["projection"],
        )
        lag.add_metric(["live_pages"], head - folded)
        for name in DAEMON_PROJECTIONS:
            saved = self.store.load_checkpoint(name)
            lag.add_metric([name], head - (saved.position if saved else 0))
        yield lag

        states = GaugeMetricFamily("accelopt_tasks", "Tasks by state.", labels=["state"])
        for state, count in sorted(Counter(t.state for t in library.tasks.values()).items()):
            states.add_metric([state], count)
        yield states

        labels = ["task", "platform", "latency_kind"]
        profiles = CounterMetricFamily(
            "accelopt_profiles", "Profiles of a task's current revision.", labels=labels[:2]
        )
        failed = CounterMetricFamily(
            "accelopt_failed_profiles", "Profiles that failed.", labels=labels[:2]
        )
        baseline = GaugeMetricFamily("accelopt_baseline_ms", "Baseline latency.", labels=labels)
        best = GaugeMetricFamily("accelopt_best_ms", "Best latency so far.", labels=labels)
        speedup = GaugeMetricFamily("accelopt_best_speedup", "Baseline over best.", labels=labels)
        for name, task in sorted(library.tasks.items()):
            for platform, record in sorted(task.platforms.items()):
                profiles.add_metric([name, platform], record.profiles)
                failed.add_metric([name, platform], record.failed_profiles)
                timed = [name, platform, record.latency_kind or "unknown"]
                if record.baseline_ms is not None:
                    baseline.add_metric(timed, record.baseline_ms)
                if record.best_ms is not None:
                    best.add_metric(timed, record.best_ms)
                if record.speedup is not None:
                    speedup.add_metric(timed, record.speedup)
        yield from (profiles, failed, baseline, best, speedup)

        peak = GaugeMetricFamily(
            "accelopt_best_pct_of_peak", "The best kernel's % of peak.", labels=["task"]
        )
        for name, task_report in sorted(report.tasks.items()):
            if task_report.best_pct is not None:
                peak.add_metric([name], task_report.best_pct)
        yield peak

        failures = CounterMetricFamily(
            "accelopt_profile_failures", "Failed profiles by error kind.", labels=["kind"]
        )
        for error_kind, count in sorted(report.failures.items()):
            failures.add_metric([error_kind], count)
        yield failures

        yield CounterMetricFamily("accelopt_llm_calls", "Answered LLM calls.", len(report.spend))
        yield CounterMetricFamily(
            "accelopt_llm_tokens", "LLM tokens.", sum(row[4] for row in report.spend)
        )
        yield CounterMetricFamily(
            "accelopt_llm_cost_usd", "LLM spend in dollars.", sum(row[3] for row in report.spend)
        )

        jobs = GaugeMetricFamily("accelopt_jobs", "Jobs by state.", labels=["state"])
        counts = _job_counts(self.store.engine)
        for job_state, count in counts.items():
            jobs.add_metric([job_state], count)
        yield jobs
        yield GaugeMetricFamily("accelopt_queue_depth", "Jobs waiting.", counts["pending"])

        running = GaugeMetricFamily(
            "accelopt_daemon_running", "1 while the host's daemon runs.", labels=["host"]
        )
        for host, daemon in sorted(library.daemons.items()):
            running.add_metric([host], 1 if daemon.stopped_at is None else 0)
        yield running


class _StateDiskCollector(Collector):
    def __init__(self, look: Callable[[], StateDisk]) -> None:
        self.look = look

    def collect(self) -> Iterator[Any]:
        disk = self.look()
        yield GaugeMetricFamily(
            "accelopt_state_disk_free_bytes", "Free space on the state directory's disk.",
            disk.free_bytes,
        )  # fmt: skip
        yield GaugeMetricFamily(
            "accelopt_state_disk_floor_bytes",
            "The state disk's floor (ACCELOPT_MIN_FREE_MB): under it new jobs pause.",
            disk.floor_bytes,
        )
        yield GaugeMetricFamily(
            "accelopt_state_disk_new_jobs_paused",
            "1 while this host's daemon takes no new job: its state disk is under the floor.",
            1 if disk.low else 0,
        )


def _job_counts(engine: Engine) -> dict[JobState, int]:
    queue = open_queue(engine)
    try:
        return queue.counts()
    finally:
        queue.close()


def metrics_registry(
    follower: Follower, store: SqlEventStore, state_disk: Callable[[], StateDisk]
) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_LogCollector(follower, store))
    registry.register(_StateDiskCollector(state_disk))
    return registry
