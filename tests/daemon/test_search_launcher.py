"""The search launcher without a daemon: it starts what the portfolio chooses, up to its slots,
forgets the searches that ended, records a crashed search as a failure (its task cools down),
and keeps the tasks' weights whole while search threads write them and others read them.

The search itself is replaced: `materialize` and `Search` are stubs, or `_search` is a thread
body that waits for its stop event."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import daemon.coordinator.searches as searches_module
from agents.search import Interrupted, LLMUnavailable
from daemon.coordinator.health import StoreHealth
from daemon.coordinator.options import DaemonOptions
from daemon.coordinator.portfolio import PortfolioView, TaskView
from daemon.coordinator.searches import SearchLauncher
from events.catalog import KernelSourceChanged
from nkibench.backend import OpenedBackend
from store.errors import StoreError
from store.jobs.memory import MemoryJobQueue
from store.projections.library import LibraryState, Revision
from store.recorder import Recorder
from store.sql import SqlEventStore

WAIT_S = 10.0


def unavailable() -> Any:
    raise AssertionError("no backend is opened in these tests")


def opened(devices: int) -> OpenedBackend:
    return OpenedBackend(
        "nkisim",
        "trn2",
        frozenset({"nki"}),
        devices=[(f"cpu{i}", unavailable) for i in range(devices)],
    )


def portfolio(*names: str, **tasks: TaskView) -> PortfolioView:
    """Fresh tasks (no search yet) by name, and tasks given in full."""
    view = PortfolioView(tasks={n: TaskView(n, revision=f"h-{n}") for n in names})
    view.tasks.update(tasks)
    return view


def library(*names: str) -> LibraryState:
    return LibraryState(
        revisions={
            n: Revision(task=n, task_dir=f"/kernels/{n}", content_hash=f"h-{n}", files={})
            for n in names
        }
    )


def wait_until(condition: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


class Launchers:
    """Builds launchers over one SQLite store and a memory queue; at the end, stops and joins
    every search thread they started."""

    def __init__(self, store: SqlEventStore, tmp_path: Path) -> None:
        self.store = store
        self.tmp_path = tmp_path
        self.built: list[SearchLauncher] = []
        self.view = PortfolioView()
        self.stopping = threading.Event()
        self.wake = threading.Event()
        self.health = StoreHealth(patience_s=60.0)

    def __call__(self, *, devices: int = 2, **options: Any) -> SearchLauncher:
        launcher = SearchLauncher(
            DaemonOptions(watch=self.tmp_path / "kernels", **options),
            store=self.store,
            recorder=Recorder(self.store, correlation_id="test"),
            queue=MemoryJobQueue(),
            llm=None,
            opened=opened(devices),
            isolation=SimpleNamespace(),  # type: ignore[arg-type]  # only porting would use it
            health=self.health,
            view=lambda: self.view,
            revisions=self.tmp_path / "revisions",
            stopping=self.stopping,
            wake=self.wake,
        )
        self.built.append(launcher)
        return launcher

    def close(self) -> None:
        self.stopping.set()
        for launcher in self.built:
            for running in launcher.running.values():
                running.stop.set()
                running.thread.join(timeout=WAIT_S)


@pytest.fixture
def launchers(
    tmp_path: Path,
    fresh_sqlite_url: Callable[[], str],
    open_stores: Callable[[str], SqlEventStore],
) -> Iterator[Launchers]:
    made = Launchers(open_stores(fresh_sqlite_url()), tmp_path)
    yield made
    made.close()


def waiting_searches(launcher: SearchLauncher) -> list[tuple[str, str]]:
    """Replace the launcher's search with one that waits for its stop event; the (task, hash)
    of each search started."""
    started: list[tuple[str, str]] = []

    def search(revision: KernelSourceChanged, stop: threading.Event) -> None:
        started.append((revision.task, revision.content_hash))
        stop.wait(WAIT_S)

    launcher._search = search  # type: ignore[method-assign]
    return started


def test_it_starts_what_the_portfolio_chooses_up_to_its_devices_plus_one(
    launchers: Launchers,
) -> None:
    launcher = launchers(devices=2)
    started = waiting_searches(launcher)
    names = ("a", "b", "c", "d", "e")
    launcher.start(portfolio(*names), library(*names))
    assert sorted(launcher.running) == ["a", "b", "c"]  # two devices, one more search
    running = launcher.running["b"]
    assert running.revision == "h-b"
    assert running.thread.name == "search:b"
    assert running.thread.is_alive()
    wait_until(lambda: len(started) == 3, "the searches to start")
    assert sorted(started) == [("a", "h-a"), ("b", "h-b"), ("c", "h-c")]

    launcher.start(portfolio(*names), library(*names))  # no slot free: nothing new
    assert sorted(launcher.running) == ["a", "b", "c"]
    assert len(started) == 3


def test_max_searches_overrides_the_devices(launchers: Launchers) -> None:
    launcher = launchers(devices=2, max_searches=1)
    waiting_searches(launcher)
    launcher.start(portfolio("a", "b"), library("a", "b"))
    assert list(launcher.running) == ["a"]


def test_an_ended_search_frees_its_slot_and_a_moot_one_is_stopped(launchers: Launchers) -> None:
    launcher = launchers(devices=1)
    waiting_searches(launcher)
    names = ("a", "b", "c")
    launcher.start(portfolio(*names), library(*names))
    assert sorted(launcher.running) == ["a", "b"]
    assert launcher.ended() == []

    launcher.running["a"].stop.set()
    launcher.running["a"].thread.join(WAIT_S)
    ended = launcher.ended()
    assert ended == ["a"]
    done = portfolio("b", "c", a=TaskView("a", revision="h-a", removed=True))
    launcher.start(done, library(*names), ended)
    assert sorted(launcher.running) == ["b", "c"]

    changed = library(*names)
    changed.revisions["b"].content_hash = "h-b2"  # b's folder changed while it was searched
    launcher.stop_outdated(changed)
    assert launcher.running["b"].stop.is_set()
    assert not launcher.running["c"].stop.is_set()


def test_a_chosen_task_without_a_current_revision_is_not_started(launchers: Launchers) -> None:
    launcher = launchers(devices=4)
    started = waiting_searches(launcher)
    launcher.start(portfolio("a", "b"), library("b"))
    assert list(launcher.running) == ["b"]
    wait_until(lambda: started, "the search to start")
    assert started == [("b", "h-b")]


@pytest.mark.parametrize("cooldown_s", [60.0, 0.0])
def test_a_crashed_search_is_a_failure_and_its_task_cools_down(
    launchers: Launchers, monkeypatch: pytest.MonkeyPatch, cooldown_s: float
) -> None:
    def broken(*_args: Any) -> Any:
        raise StoreError("accelopt.db: read failed (injected)")

    monkeypatch.setattr(searches_module, "materialize", broken)
    launcher = launchers(devices=1, cooldown_s=cooldown_s)
    before = time.monotonic()
    launcher.start(portfolio("a"), library("a"))
    launcher.running["a"].thread.join(WAIT_S)
    failures = launcher.failures()
    assert list(failures) == ["a"]
    assert before <= failures["a"] <= time.monotonic()
    assert launchers.health.failing  # the database's error reached its health
    assert launchers.wake.is_set()  # the main loop is woken to start the next

    ended = launcher.ended()
    assert ended == ["a"]
    launcher.start(portfolio("a"), library("a"), ended)
    if cooldown_s:
        assert launcher.running == {}  # cooling down
    else:
        assert list(launcher.running) == ["a"]  # cooled down at once: retried


def test_a_stopped_search_is_no_failure(
    launchers: Launchers, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*_args: Any) -> Any:
        raise Interrupted("the daemon is stopping")

    monkeypatch.setattr(searches_module, "materialize", interrupted)
    launcher = launchers(devices=1)
    launcher.start(portfolio("a"), library("a"))
    launcher.running["a"].thread.join(WAIT_S)
    assert launcher.failures() == {}
    assert not launchers.health.failing


def test_an_llm_outage_cools_the_task_down_without_blaming_the_database(
    launchers: Launchers, monkeypatch: pytest.MonkeyPatch
) -> None:
    def outage(*_args: Any) -> Any:
        raise LLMUnavailable("a: iteration 1: all 4 planner calls failed; the last: HTTP 429")

    monkeypatch.setattr(searches_module, "materialize", outage)
    launcher = launchers(devices=1, cooldown_s=60.0)
    launcher.start(portfolio("a"), library("a"))
    launcher.running["a"].thread.join(WAIT_S)
    assert list(launcher.failures()) == ["a"]  # retried after the cooldown, resumed
    assert not launchers.health.failing
    launcher.start(portfolio("a"), library("a"), launcher.ended())
    assert launcher.running == {}  # cooling down


class FakeSearch:
    """Stands for agents.search.Search: its run asks the profiler for its task's priority."""

    priorities: dict[str, float]

    def __init__(self, *, task: Any, profiler: Any, **_kwargs: Any) -> None:
        self.task = task
        self.profiler = profiler

    def run(self) -> Any:
        FakeSearch.priorities[self.task.name] = self.profiler.priority(self.task.name)
        return SimpleNamespace(
            search_id="s", reason="completed", detail="", speedup=1.0, latency_kind="measured"
        )


def fake_tasks(monkeypatch: pytest.MonkeyPatch, weight: Callable[[str], float]) -> None:
    """`materialize` gives a task of weight `weight(name)`; Search is FakeSearch."""

    def materialize(_store: Any, revision: KernelSourceChanged, _root: Path) -> Any:
        return SimpleNamespace(name=revision.task, weight=weight(revision.task), dialect="nki")

    monkeypatch.setattr(searches_module, "materialize", materialize)
    monkeypatch.setattr(searches_module, "Search", FakeSearch)
    FakeSearch.priorities = {}


def test_a_search_records_its_tasks_weight_and_the_priority_follows_it(
    launchers: Launchers, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_tasks(monkeypatch, lambda _name: 4.0)
    launcher = launchers(devices=1)
    launchers.view = portfolio(a=TaskView("a", revision="h-a", pct_of_peak=25.0))
    launcher.start(launchers.view, library("a"))
    launcher.running["a"].thread.join(WAIT_S)
    assert launcher.weights() == {"a": 4.0}
    assert FakeSearch.priorities == {"a": pytest.approx(0.75 * 4.0)}  # headroom x weight
    profiler = launcher.profiler(threading.Event())
    assert profiler.priority("a") == pytest.approx(3.0)
    assert profiler.priority("unknown") == 1.0  # full headroom, weight 1
    assert launcher.failures() == {}


def weight_of(name: str) -> float:
    """A weight of its own for each name "t...t-i": the t's count, plus i / 1000."""
    prefix, index = name.rsplit("-", 1)
    return len(prefix) + int(index) / 1000


def test_the_weights_stay_whole_under_concurrent_writes(
    launchers: Launchers, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eight search threads record 200 weights each while this thread reads them: every
    weight is there, with its value, and what a reader holds is a copy."""
    fake_tasks(monkeypatch, weight_of)
    launcher = launchers(devices=1)
    names = [f"{'t' * (writer + 1)}-{i}" for writer in range(8) for i in range(200)]
    go = threading.Event()

    def writer(index: int) -> None:
        go.wait(WAIT_S)
        for name in names[index * 200 : (index + 1) * 200]:
            revision = KernelSourceChanged(
                task=name,
                task_dir=f"/kernels/{name}",
                content_hash="0" * 64,
                files={},
                dialect="nki",
            )
            launcher._search(revision, threading.Event())

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    go.set()
    reads = 0
    while any(t.is_alive() for t in threads):
        snapshot = launcher.weights()
        assert all(weight == weight_of(name) for name, weight in snapshot.items())
        reads += 1
    for thread in threads:
        thread.join(WAIT_S)
    assert reads > 0
    weights = launcher.weights()
    assert sorted(weights) == sorted(names)
    assert all(weights[name] == weight_of(name) for name in names)
    assert sorted(FakeSearch.priorities) == sorted(names)
    weights.clear()  # a copy: the launcher's stay
    assert len(launcher.weights()) == len(names)
    assert launcher.failures() == {}
