"""The daemon's pure parts: the portfolio's choice, device lists, structured logs."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import structlog

from daemon.backends import DeviceListError, parse_devices
from daemon.coordinator.portfolio import PortfolioView, TaskView, choose
from daemon.process.logs import configure_logging

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def view(**tasks: TaskView) -> PortfolioView:
    return PortfolioView(tasks=dict(tasks))


def pick(v: PortfolioView, **kwargs: object) -> list[str]:
    options: dict[str, object] = {
        "running": set(),
        "slots": 10,
        "now": NOW,
        "rest_s": 3600.0,
        "agents": True,
        "weights": {},
    }
    options.update(kwargs)
    return choose(v, **options)  # type: ignore[arg-type]


def test_resumes_first_then_changed_tasks_then_expected_gain() -> None:
    rested = NOW - timedelta(hours=2)
    v = view(
        fresh=TaskView("fresh", revision="h1"),
        resuming=TaskView("resuming", revision="h2", searches=1, running_search="s"),
        low_headroom=TaskView(
            "low_headroom",
            revision="h3",
            searches=1,
            last_reason="plateau",
            last_finished_at=rested,
            pct_of_peak=90.0,
        ),
        high_headroom=TaskView(
            "high_headroom",
            revision="h4",
            searches=1,
            last_reason="plateau",
            last_finished_at=rested,
            pct_of_peak=20.0,
        ),
        resting=TaskView(
            "resting",
            revision="h5",
            searches=1,
            last_reason="plateau",
            last_finished_at=NOW - timedelta(minutes=5),
        ),
        spent=TaskView(
            "spent", revision="h6", searches=1, last_reason="budget", last_finished_at=rested
        ),
        broken=TaskView("broken", revision="h7", invalid=True),
        gone=TaskView("gone", revision="h8", removed=True),
    )
    assert pick(v) == ["resuming", "fresh", "high_headroom", "low_headroom"]
    assert pick(v, slots=2) == ["resuming", "fresh"]
    assert pick(v, slots=3, running={"resuming"}) == ["fresh", "high_headroom"]
    # the weight of a task multiplies its expected gain
    assert pick(v, weights={"low_headroom": 10.0})[2] == "low_headroom"


def test_without_agents_only_new_revisions_run_and_idle_searches_are_redone_later() -> None:
    idle_done = TaskView(
        "idle_done",
        revision="h",
        searches=1,
        last_reason="completed",
        last_finished_at=NOW,
        last_with_agents=False,
    )
    plateaued = TaskView(
        "plateaued",
        revision="p",
        searches=1,
        last_reason="plateau",
        last_finished_at=NOW - timedelta(days=1),
    )
    v = view(idle_done=idle_done, plateaued=plateaued, new=TaskView("new", revision="n"))
    assert pick(v, agents=False) == ["new"]
    assert pick(v, agents=True) == ["idle_done", "new", "plateaued"]


def test_a_task_cooling_down_after_a_crash_takes_no_search_slot() -> None:
    """(The daemon once passed cooling tasks as running, so a crashed task that was not
    running still took one of the slots for a minute.)"""
    tasks = view(
        crashed=TaskView("crashed", revision="h1"),
        a=TaskView("a", revision="h2"),
        b=TaskView("b", revision="h3"),
    )
    chosen = choose(
        tasks,
        running=set(),
        cooling=frozenset({"crashed"}),
        slots=2,
        now=NOW,
        rest_s=3600,
        agents=True,
        weights={},
    )
    assert chosen == ["a", "b"]
    busy = choose(tasks, running={"a"}, slots=2, now=NOW, rest_s=3600, agents=True, weights={})
    assert busy == ["b"]  # a running search does take one


def test_parse_devices() -> None:
    assert parse_devices(None, "nkisim") == ["0"]
    assert parse_devices("3", "nkisim") == ["0", "1", "2"]
    assert parse_devices("0,2", "nkisim") == ["0", "2"]
    assert parse_devices("4-6,9", "neuron") == ["4", "5", "6", "9"]
    assert parse_devices("3", "neuron") == ["3"]  # a NeuronCore, not a count
    for backend in ("nkisim", "neuron", "triton"):  # the documented default, on every backend
        assert parse_devices("0", backend) == ["0"]
    assert parse_devices("00,1", "triton") == ["0", "1"]
    for bad in ("a", "3-1", "1,1", "0,00", ""):
        with pytest.raises(DeviceListError):
            parse_devices(bad, "neuron")


@pytest.fixture
def logging_configured() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.reset_defaults()
    root.handlers, root.level = handlers, level


@pytest.mark.usefixtures("logging_configured")
def test_log_lines_are_json_with_the_journald_priority(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging(json_lines=True, level="info")
    log = structlog.get_logger("test")
    with structlog.contextvars.bound_contextvars(task="silu"):
        log.warning("slow", api_key="sk-secret", latency_ms=2.5)
    log.debug("hidden")
    line = capsys.readouterr().out.strip()
    assert line.startswith("<4>{")
    record = json.loads(line[3:])
    assert record["event"] == "slow"
    assert record["task"] == "silu"
    assert record["api_key"] == "***"
    assert record["level"] == "warning"
    assert "hidden" not in line


def test_a_daemon_leaves_tasks_of_another_language_alone(tmp_path: Path) -> None:
    """A Triton task dropped where an nkisim daemon watches is recorded as not its own, with
    the backend that would take it; an NKI task is recorded as a revision."""
    import shutil

    from daemon.coordinator.watcher import TaskWatcher
    from events.catalog import KernelSourceChanged, TaskInvalid
    from events.codec import decode
    from nkibench.suites import GPU_SUITE as SUITE_GPU
    from nkibench.suites import NKI_LEGACY_SUITE as SUITE
    from store.memory import MemoryEventStore
    from store.recorder import Recorder

    root = tmp_path / "kernels"
    shutil.copytree(SUITE_GPU / "silu", root / "gpu_silu")
    shutil.copytree(SUITE / "silu", root / "silu")
    store = MemoryEventStore()
    watcher = TaskWatcher(root, Recorder(store), dialects=("nki", "nki-legacy"))
    watcher.rescan()
    events = [decode(s).event for s in store.read_all()]
    invalid = [e for e in events if isinstance(e, TaskInvalid)]
    assert [e.task for e in invalid] == ["gpu_silu"]
    assert "a triton task, and this daemon runs nki, nki-legacy kernels" in invalid[0].message
    assert "--backend triton" in invalid[0].message
    assert invalid[0].file == "task.toml"
    assert [e.task for e in events if isinstance(e, KernelSourceChanged)] == ["silu"]
