"""One soak: the real daemon as a child process, its agents answered by the scripted LLM
server, its directory churned from a seed for the given minutes, sampled from outside every
few seconds, then stopped with SIGTERM as systemd stops it, and audited.

Everything lives in a temporary directory (the watched folder, the state directory and its
SQLite log, the daemon's own log lines), removed afterwards; `--save` keeps the samples.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from agents.config import SearchConfig
from daemon.bench.scripted_llm import running_llm
from daemon.bench.soak import script
from daemon.bench.soak.audit import Applied, Audit, audit_log, folder_state, log_messages
from daemon.bench.soak.churn import ChurnApplier, churn_plan
from daemon.bench.soak.report import growth_report
from daemon.bench.soak.sampler import (
    LogProbe,
    ProcessProbe,
    Sample,
    orphans_in,
    survivors,
    take_sample,
)
from nkibench.suites import NKI_LEGACY_SUITE

__all__ = ["SoakConfig", "run_soak_benchmark"]

SOAK_TASKS = ("silu", "swiglu", "adamw", "rope_single_freq_apply")
SOAK_TASK_WEIGHTS = (3.0, 1.0, 1.0, 1.0)
"""Small suite tasks (about a second each to profile at small shapes); SiLU most often, since
the scripted agents find it a faster kernel (promotions, lessons, re-verification)."""
SETTLE_S = 3.0
"""Quiet seconds after the last action before the stop, so the log can catch up with the
folders (the watcher's debounce is 0.4 s) before it is compared with them."""
STOP_TIMEOUT_S = 90.0
"""systemd's TimeoutStopSec for the unit is 60 s; past 90 s the drain has failed."""


@dataclass(frozen=True)
class SoakConfig:
    """A soak's size and pace. The defaults keep one nkisim worker busy part of the time on a
    small host (churn that outruns the worker would measure a growing backlog, not the
    daemon) and run every clock job many times in a few minutes."""

    minutes: float
    seed: int = 0
    churn_every_s: float = 10.0
    """Mean seconds between churn actions."""
    sample_every_s: float | None = None
    """Default: every 5 s, more often in runs shorter than 2.5 minutes (30 samples at least)."""
    warmup_minutes: float | None = None
    """Samples left out of the trends. Default: the first fifth of the run, at most 10 min,
    and at least a minute or half the run (a fresh daemon still imports and fills its caches
    for tens of seconds)."""
    slots: int = 6
    search: SearchConfig = field(
        default_factory=lambda: SearchConfig(
            iterations=2, beam=1, plans=2, samples=2, fixer_attempts=1
        )
    )
    rescan_s: float = 10.0
    reverify_s: float = 30.0
    snapshot_s: float = 20.0
    checkpoint_s: float = 15.0

    @property
    def duration_s(self) -> float:
        return self.minutes * 60.0

    @property
    def every_s(self) -> float:
        if self.sample_every_s is not None:
            return self.sample_every_s
        return min(5.0, max(1.0, self.duration_s / 30.0))

    @property
    def warmup_s(self) -> float:
        if self.warmup_minutes is not None:
            return self.warmup_minutes * 60.0
        return max(min(600.0, self.duration_s / 5.0), min(60.0, self.duration_s / 2.0))


def daemon_command(config: SoakConfig, watch: Path) -> list[str]:
    """`accelopt daemon` as a team runs it, with the soak's search size and its clock sped up
    (a run of minutes would otherwise never see a snapshot or a checkpoint)."""
    search = config.search
    return [
        sys.executable,
        "-m",
        "daemon",
        "daemon",
        "--watch",
        str(watch),
        "--backend",
        "nkisim",
        "--shapes",
        "small",
        "--devices",
        "1",  # nkisim: one CPU worker
        "--iterations",
        str(search.iterations),
        "--beam",
        str(search.beam),
        "--plans",
        str(search.plans),
        "--samples",
        str(search.samples),
        "--fixer-attempts",
        str(search.fixer_attempts),
        "--plateau",
        str(search.plateau),
        "--rescan-seconds",
        str(config.rescan_s),
        "--snapshot-seconds",
        str(config.snapshot_s),
        "--checkpoint-seconds",
        str(config.checkpoint_s),
        "--reverify-hours",
        str(config.reverify_s / 3600),
    ]


def _wait_ready(daemon: subprocess.Popen[bytes], log: Path, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while '"event": "ready"' not in log.read_text(errors="replace"):
        if daemon.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"the daemon did not become ready: {tail}")
        time.sleep(0.1)


@dataclass
class _Run:
    """What the churn loop saw."""

    samples: list[Sample] = field(default_factory=list)
    applied: list[Applied] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    last_children: dict[int, tuple[str, int]] = field(default_factory=dict)
    died_at_s: float | None = None


def _churn_and_sample(
    config: SoakConfig,
    daemon: subprocess.Popen[bytes],
    applier: ChurnApplier,
    log: LogProbe,
    progress: Callable[[str], None] | None,
) -> _Run:
    """Apply the plan's actions on time and sample on time, until the run and its settling
    period are over or the daemon dies."""
    actions = churn_plan(
        config.seed,
        duration_s=config.duration_s,
        mean_interval_s=config.churn_every_s,
        slots=config.slots,
        tasks=SOAK_TASKS,
        task_weights=SOAK_TASK_WEIGHTS,
    )
    process = ProcessProbe(daemon.pid)
    run = _Run()
    end_s = config.duration_s + SETTLE_S
    start = time.monotonic()
    next_sample_s, next_progress_s, pending = 0.0, 60.0, list(actions)
    while True:
        now_s = time.monotonic() - start
        if daemon.poll() is not None:
            run.died_at_s = now_s
            return run
        while pending and pending[0].at_s <= now_s:
            action = pending.pop(0)
            try:
                applier.apply(action)
                state, content_hash = folder_state(applier.watch / action.slot)
                run.applied.append(Applied(action, time.time(), state, content_hash))
            except OSError as e:
                run.errors.append(f"action {action.serial} ({action.kind} {action.slot}): {e}")
        if now_s >= next_sample_s or now_s >= end_s:
            try:
                sample, run.last_children = take_sample(now_s, process, log)
            except FileNotFoundError:  # the daemon is gone: the next poll says so
                time.sleep(0.05)
                continue
            run.samples.append(sample)
            next_sample_s += config.every_s
            if progress is not None and now_s >= next_progress_s:
                next_progress_s += 60.0
                progress(
                    f"soak: {now_s / 60:.0f} of {config.minutes:g} min: {sample.rss_mb:.1f} MB "
                    f"resident, {sample.open_fds} fds, {sample.threads} threads, "
                    f"{sample.children} children, {sample.events} events, "
                    f"{sample.jobs_pending} jobs pending"
                )
        if now_s >= end_s:
            return run
        wake_s = min(next_sample_s, end_s, pending[0].at_s if pending else end_s)
        time.sleep(max(0.0, min(wake_s - (time.monotonic() - start), 1.0)))


def _stop(daemon: subprocess.Popen[bytes]) -> tuple[int | None, float]:
    """SIGTERM, as systemd stops the unit; (exit status or None if it had to be killed,
    seconds it took)."""
    started = time.monotonic()
    if daemon.poll() is None:
        daemon.send_signal(signal.SIGTERM)
    try:
        code: int | None = daemon.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait()
        code = None
    return code, time.monotonic() - started


def _environment(home: Path, db: str, llm_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELOPT_")}
    return env | {
        "ACCELOPT_HOME": str(home),
        "ACCELOPT_DB": db,
        "ACCELOPT_LLM_BASE_URL": llm_url,
        "ACCELOPT_LLM_TIMEOUT_S": "30",
        "ACCELOPT_LLM_RETRY_BASE_S": "0.05",
        **script.MODELS,
    }


def run_soak_benchmark(
    config: SoakConfig, *, progress: Callable[[str], None] | None = None
) -> dict[str, Any]:
    """Run one soak and report it: one JSON-ready dict, `samples_raw` holding every sample."""
    with tempfile.TemporaryDirectory(prefix="accelopt-soak-") as tmp:
        root = Path(tmp)
        watch, staging, home = root / "kernels", root / "staging", root / "state"
        for folder in (watch, staging, home):
            folder.mkdir()
        db = f"sqlite:///{home / 'accelopt.db'}"
        daemon_log = root / "daemon.log"
        with running_llm(script.answer, keep=False) as llm:
            with daemon_log.open("wb") as out:
                daemon = subprocess.Popen(
                    daemon_command(config, watch),
                    env=_environment(home, db, llm.url),
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            try:
                _wait_ready(daemon, daemon_log)
                log = LogProbe(db)
                try:
                    run = _churn_and_sample(
                        config,
                        daemon,
                        ChurnApplier(watch, staging, NKI_LEGACY_SUITE),
                        log,
                        progress,
                    )
                finally:
                    log.close()
            finally:
                stopped_at = time.time()
                exit_code, stop_s = _stop(daemon)
            llm_calls = llm.answered
        left = survivors(run.last_children)
        orphans = orphans_in(home / "work")
        slots = [f"slot{i}" for i in range(config.slots)]
        audit = audit_log(db, watch, slots, run.applied, stopped_at)
        messages = log_messages(daemon_log)
    return _report(
        config=config,
        run=run,
        audit=audit,
        messages=messages,
        exit_code=exit_code,
        stop_s=stop_s,
        llm_calls=llm_calls,
        left=left,
        orphans=orphans,
    )


def _report(
    *,
    config: SoakConfig,
    run: _Run,
    audit: Audit,
    messages: dict[str, Counter[str]],
    exit_code: int | None,
    stop_s: float,
    llm_calls: int,
    left: list[int],
    orphans: list[int],
) -> dict[str, Any]:
    count = audit.by_type.get
    kinds = Counter(a.action.kind for a in run.applied)
    return {
        "minutes": config.minutes,
        "seed": config.seed,
        "warmup_s": config.warmup_s,
        "sample_every_s": config.every_s,
        "settings": {
            "churn_every_s": config.churn_every_s,
            "slots": config.slots,
            "tasks": list(SOAK_TASKS),
            "search": config.search.model_dump(),
            "clock_s": {
                "rescan": config.rescan_s,
                "reverify": config.reverify_s,
                "snapshot": config.snapshot_s,
                "wal_checkpoint": config.checkpoint_s,
            },
        },
        **growth_report(run.samples, config.warmup_s),
        "churn": {
            "actions": sum(kinds.values()),
            "by_kind": dict(sorted(kinds.items())),
            "breakages": dict(Counter(a.action.breakage for a in run.applied if a.action.breakage)),
            "errors": run.errors,
        },
        "jobs_completed": count("ProfileRecorded", 0),
        "searches_started": count("SearchStarted", 0),
        "searches_finished": count("SearchFinished", 0),
        "plans": count("PlanProposed", 0),
        "candidates": count("CandidateGenerated", 0),
        "lessons": count("ExperienceSummarized", 0),
        "promotions": count("KernelPromoted", 0),
        "demotions": count("KernelDemoted", 0),
        "llm_calls": count("LLMCallCompleted", 0),
        "llm_calls_answered": llm_calls,
        "revisions": count("KernelSourceChanged", 0),
        "invalid": count("TaskInvalid", 0),
        "removals": count("KernelRemoved", 0),
        "events_by_type": dict(sorted(audit.by_type.items())),
        "clock": {"snapshots": audit.snapshots, "reverify_jobs_done": audit.reverify_jobs_done},
        "jobs": audit.jobs,
        "jobs_left_running": audit.jobs.get("running", 0),
        "daemon_died_at_s": run.died_at_s,
        "exit_code": exit_code,
        "stop_s": stop_s,
        "children_left": left,
        "orphans": orphans,
        "disagreements": audit.disagreements,
        "missed_changes": audit.missed,
        "log_errors": dict(messages.get("error", Counter()).most_common()),
        "log_warnings": dict(messages.get("warning", Counter()).most_common()),
        "log_other": dict(messages.get("other", Counter()).most_common(10)),
        "host": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "samples_raw": [asdict(s) for s in run.samples],
    }
