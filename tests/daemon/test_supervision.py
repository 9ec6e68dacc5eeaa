"""No daemon thread dies silently: a real daemon in this process (SQLite file, nkisim, the task
folders of the NKI suite at small shapes), its parts broken on purpose.

A worker whose profiling raises is restarted and its job runs again; a worker killed by the
database while it finishes a job likewise; a dead watcher is noticed within one tick and
restarted; a part that keeps dying stops the daemon with a non-zero exit; the clock and the
main loop share the projections without a race; the signal handlers are the caller's again
after a run; a daemon whose memory passes its ceiling drains and exits for a fresh one.
"""

from __future__ import annotations

import signal
import threading
import time
import traceback
from collections.abc import MutableMapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from structlog.testing import capture_logs

import daemon.workers.worker as worker_module
from daemon.coordinator.service import RECYCLE_EXIT, Daemon, DaemonOptions
from daemon.process.allocator import resident_bytes
from daemon.settings import Settings
from events.catalog import DaemonStopped, ProfileRecorded, SearchFinished
from events.codec import decode
from store.engine import make_engine
from store.errors import StoreBusy
from store.jobs.sql import SqlJobQueue
from store.projections.library import LibraryProjection
from store.projections.runner import replay
from store.schema import jobs, projection_snapshots
from store.sql import SqlEventStore
from tests.support.inprocess_daemon import TICK_S, Running, wait_for


def running_jobs(url: str) -> int:
    engine = make_engine(url)
    try:
        return SqlJobQueue(engine).counts().get("running", 0)
    finally:
        engine.dispose()


def fail_once(
    monkeypatch: pytest.MonkeyPatch, target: Any, name: str, error: Exception
) -> list[int]:
    """`target.name` raises `error` at its first call, then works; the calls are counted."""
    original = getattr(target, name)
    calls: list[int] = []

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise error
        return original(*args, **kwargs)

    monkeypatch.setattr(target, name, flaky)
    return calls


def test_a_worker_whose_profiling_raises_is_restarted_and_its_job_runs_again(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = fail_once(monkeypatch, worker_module, "profile_kernel", RuntimeError("injected"))
    with capture_logs() as logs:
        running = Running(home)
        try:
            running.drop("silu")
            finished = wait_for(
                lambda: running.events(SearchFinished, "silu"), 120, "the search to finish"
            )
            profiles = running.events(ProfileRecorded, "silu")
        finally:
            code = running.stop()
    assert code == 0
    assert finished[0].reason == "completed"
    assert profiles[0].purpose == "baseline"
    assert profiles[0].correct
    assert len(calls) >= 2  # the failed attempt, then the job again
    died = [e for e in logs if e["event"] == "thread died; it is restarted"]
    assert [e["part"] for e in died] == ["cpu0"]
    assert "RuntimeError: injected" in died[0]["error"]
    assert any(e["event"] == "restarting" and e["part"] == "cpu0" for e in logs)
    assert running_jobs(running.url) == 0


def test_a_worker_killed_by_the_database_while_finishing_a_job_is_restarted(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """StoreBusy from the queue when the result is recorded (a lock held too long): the job
    goes back to pending, a new worker runs it, the search finishes, no job stays running."""
    busy = StoreBusy("accelopt.db: complete: another writer held the log too long (injected)")
    fail_once(monkeypatch, SqlJobQueue, "_complete", busy)
    with capture_logs() as logs:
        running = Running(home)
        try:
            running.drop("silu")
            wait_for(lambda: running.events(SearchFinished, "silu"), 120, "the search to finish")
        finally:
            code = running.stop()
    assert code == 0
    assert running_jobs(running.url) == 0
    died = [e for e in logs if e["event"] == "thread died; it is restarted"]
    assert [e["part"] for e in died] == ["cpu0"]
    assert any(e["event"] == "database trouble; retrying" for e in logs)


def test_a_dead_watcher_is_noticed_within_one_tick_and_restarted(home: Path) -> None:
    with capture_logs() as logs:
        running = Running(home)
        try:
            watcher = wait_for(
                lambda: next(
                    (p for p in running.daemon.supervisor.parts() if p.name == "watcher"), None
                ),
                30,
                "the watcher to run",
            )
            died_at = time.monotonic()
            watcher._failure = RuntimeError("injected")  # type: ignore[attr-defined]
            watcher._stop.set()  # type: ignore[attr-defined]
            watcher._hinted.set()  # type: ignore[attr-defined]
            noticed = wait_for(
                lambda: [e for e in logs if e["event"] == "thread died; it is restarted"],
                5,
                "the supervisor to notice",
            )
            noticed_after = time.monotonic() - died_at
            wait_for(watcher.alive, 10, "the watcher to run again")
            running.drop("silu")  # the new watcher records folders
            wait_for(lambda: running.events(ProfileRecorded, "silu"), 60, "a baseline")
        finally:
            code = running.stop()
    assert code == 0
    assert noticed[0]["part"] == "watcher"
    assert noticed_after < TICK_S + 0.5


def test_a_part_that_keeps_dying_stops_the_daemon_with_a_non_zero_exit(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("the backend is broken for good")

    monkeypatch.setattr(worker_module, "profile_kernel", broken)
    # its one job is given up after 3 deaths otherwise: this shows the supervisor's own limit
    monkeypatch.setenv("ACCELOPT_JOB_FAILED_RUNS", "10")
    running = Running(home)
    running.daemon.supervisor.backoff_s = 0.01  # let it die six times quickly
    running.drop("silu")
    running.thread.join(timeout=120)
    assert not running.thread.is_alive()
    assert running.code == 1
    assert "cpu0 thread died 6 times in a row" in running.daemon.reason
    assert running_jobs(running.url) == 0


def test_a_job_that_kills_the_worker_on_every_run_fails_and_its_search_finishes(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One host, one device (cpu0): every device there is; the job is given up after
    ACCELOPT_JOB_FAILED_RUNS runs there, before the supervisor's limit (6 deaths) is reached."""

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("the device is gone")

    monkeypatch.setattr(worker_module, "profile_kernel", broken)
    running = Running(home)
    running.daemon.supervisor.backoff_s = 0.01
    try:
        running.drop("silu")
        wait_for(lambda: running.events(SearchFinished, "silu"), 120, "the search to finish")
        assert job_states(running.url) == ["failed"]
        (profile,) = running.events(ProfileRecorded, "silu")
        assert (profile.correct, profile.error_kind) == (False, "job_failed")
        assert "3 runs on cpu0" in (profile.error_message or "")
        assert running.thread.is_alive()  # the daemon goes on
    finally:
        code = running.stop()
    assert code == 0
    store = SqlEventStore.open(running.url)
    try:
        library = LibraryProjection()
        live = replay(store, library, use_snapshots=False, use_checkpoint=True)
        rebuilt = replay(store, library, use_snapshots=False)
    finally:
        store.close()
    assert live.started_from.startswith("checkpoint@")  # what the daemon folded as it ran
    assert rebuilt.started_from == "zero"
    assert library.dump(rebuilt.state) == library.dump(live.state)
    silu = rebuilt.state.tasks["silu"]
    assert (silu.state, (silu.error or "").split(":")[0]) == ("failing", "job_failed")


def test_the_clock_and_the_main_loop_share_the_projections_without_a_race(home: Path) -> None:
    """Snapshots every 0.3 s while tasks come in (with the old code the daemon crashed in 1
    run of 4: 'projection ... saved by another runner'); the snapshot job also keeps the
    newest snapshots only, and drops finished jobs past their retention."""
    with capture_logs() as logs:
        running = Running(home, snapshot_s=0.3, checkpoint_s=0.5, snapshots_kept=2)
        try:
            for name in ("silu", "rmsnorm_matmul", "adamw"):
                running.drop(name)
            wait_for(
                lambda: all(running.events(SearchFinished, t) for t in ("silu", "adamw")),
                120,
                "the searches to finish",
            )
            time.sleep(2.0)  # more snapshots while idle
            wait_for(lambda: set(job_states(running.url)) == {"done"}, 120, "every job to finish")
            done = job_states(running.url).count("done")
            assert done > 0
            age_finished_jobs(running.url, timedelta(days=8))
            wait_for(lambda: "done" not in job_states(running.url), 10, "old jobs pruned")
            snapshots = snapshot_counts(running.url)
        finally:
            code = running.stop()
    assert code == 0
    errors = [e for e in logs if e.get("log_level") in ("error", "critical")]
    assert not errors, "\n".join(map(with_traceback, errors))
    assert snapshots
    assert max(snapshots.values()) <= 2
    pruned = [e for e in logs if e.get("event") == "pruned"]
    assert sum(e["snapshots"] for e in pruned) > 0
    assert sum(e["finished_jobs"] for e in pruned) == done


def with_traceback(entry: MutableMapping[str, Any]) -> str:
    """A captured log entry, with the traceback of the exception it carries."""
    error = entry.get("exc_info")
    if isinstance(error, BaseException):
        return f"{entry}\n{''.join(traceback.format_exception(error))}"
    return str(entry)


def job_states(url: str) -> list[str]:
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            return list(connection.execute(sa.select(jobs.c.state)).scalars())
    finally:
        engine.dispose()


def age_finished_jobs(url: str, by: timedelta) -> None:
    engine = make_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(
                jobs.update()
                .where(jobs.c.state == "done")
                .values(updated_at=datetime.now(UTC) - by)
            )
    finally:
        engine.dispose()


def snapshot_counts(url: str) -> dict[str, int]:
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                sa.select(projection_snapshots.c.name, sa.func.count()).group_by(
                    projection_snapshots.c.name
                )
            ).all()
        return {name: count for name, count in rows}
    finally:
        engine.dispose()


def test_the_signal_handlers_are_the_callers_again_after_a_run(home: Path) -> None:
    """Run in the main thread (only it handles signals): SIGTERM stops the daemon with exit 0,
    and the handlers after the run are those before it."""
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    (home / "kernels").mkdir()
    daemon = Daemon.open(
        Settings.load(),
        f"sqlite:///{home / 'state' / 'accelopt.db'}",
        DaemonOptions(watch=home / "kernels", shapes="small", tick_s=TICK_S),
    )
    during: list[Any] = []

    def terminate() -> None:
        wait_for(lambda: daemon.position > 0, 30, "the daemon to run")  # DaemonStarted
        during.append(signal.getsignal(signal.SIGTERM))
        signal.raise_signal(signal.SIGTERM)

    threading.Thread(target=terminate).start()
    assert daemon.run() == 0
    assert daemon.reason == "SIGTERM"
    assert during
    assert during[0] != before[signal.SIGTERM]
    assert {s: signal.getsignal(s) for s in before} == before


def test_a_daemon_past_its_memory_ceiling_drains_and_exits_for_a_fresh_one(home: Path) -> None:
    """The daemon runs in this process, so memory the test takes is the daemon's: under the
    ceiling it serves; 300 MB more and it stops within a few ticks, with the recycle status,
    a DaemonStopped that says why, and no job left running."""
    before = resident_bytes()
    assert before is not None
    running = Running(home, max_resident_mb=before / 1e6 + 150)
    running.drop("silu")
    wait_for(lambda: running.events(ProfileRecorded, "silu"), 120, "the baseline")
    assert running.thread.is_alive(), running.daemon.reason
    held = b"\x01" * 300_000_000  # resident: every page written
    running.thread.join(timeout=60)
    assert not running.thread.is_alive()
    assert len(held) == 300_000_000
    assert running.code == RECYCLE_EXIT
    assert "over the ceiling" in running.daemon.reason
    stopped = [decode(s).event for s in running.daemon.store.read_all(types=["DaemonStopped"])]
    assert isinstance(stopped[-1], DaemonStopped)
    assert "over the ceiling" in stopped[-1].reason
    assert running_jobs(running.url) == 0
