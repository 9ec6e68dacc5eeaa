"""A replay after pruning gives the library and memory the daemon's projections held, on a real
database (SQLite file and PostgreSQL): the daemon's runners fold weeks of searches with a small
retention, snapshot and prune as its clock does, and then every past moment replays (from a
snapshot kept, from position 0, through `accelopt replay --until`) to exactly the state they
held then; a replay with nothing pruned shows the same library and the same memory, and
`accelopt memory log` still lists every change."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from agents.memory import MemoryProjection, MemoryState
from daemon.projections import make_projection, present
from daemon.settings import Settings, SettingsError
from events.base import Event
from events.codec import canonical_json
from store.projections.library import LibraryProjection
from store.projections.runner import ProjectionRunner, replay
from store.recorder import Recorder
from store.sql import SqlEventStore
from tests.support import factories
from tests.support.cli import run_cli

DAEMON_PROJECTIONS = ("library", "memory", "portfolio")
SNAPSHOTS_KEPT = 2


def record_searches(recorder: Recorder, first: int, count: int) -> None:
    """`count` searches over two tasks, a new revision every third search of a task, three
    lessons each (one of them found nothing), a promotion for every other search."""
    for n in range(first, first + count):
        task = f"t{n % 2}"
        revision = f"{n // 6:02d}{n % 2}".ljust(64, "a")
        search = f"s{n}"
        events: list[Event] = []
        if n % 6 < 2:
            events += [
                factories.source_changed(task, revision),
                factories.profile(task, revision, latency_ms=2.0),
            ]
        events.append(factories.started(task, revision, search, agents=n % 3 != 0))
        candidate_ms = 2.0 / (1.1 + n % 5 / 10)
        events.append(
            factories.profile(
                task, revision, purpose="candidate", candidate_id=f"c{n}", latency_ms=candidate_ms
            )
        )
        for k in range(3):
            title = "No optimization found" if k == 2 else f"Lesson {n}.{k}"
            lesson = factories.lesson(f"x{n}-{k}", task, 1.05 + (n * 3 + k) % 7 / 5, title=title)
            summary = recorder.put(f"what search {n} learnt, {k}")
            events.append(lesson.model_copy(update={"summary_blob": summary, "search_id": search}))
        if n % 2 == 0:
            events.append(factories.promoted(task, revision, f"c{n}", candidate_ms, 2.0))
        events.append(factories.finished(task, search, best_ms=candidate_ms))
        for i, event in enumerate(events):
            recorder.record(f"task:{task}", event, key=f"{search}|{i}")


def dumped(projection_name: str, state: Any, settings: Settings) -> Any:
    """The state as the runner saves it."""
    projection = make_projection(projection_name, settings)
    return json.loads(canonical_json(projection.dump(state)))


@pytest.fixture
def retention(monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("ACCELOPT_MEMORY_RETIRED_KEPT", "2")
    monkeypatch.setenv("ACCELOPT_MEMORY_CHANGES_KEPT", "12")
    return Settings.load()


def test_a_replay_after_pruning_gives_the_library_and_memory_the_daemon_held(
    db_url: Callable[[], str],
    open_stores: Callable[[str], SqlEventStore],
    retention: Settings,
) -> None:
    url = db_url()
    store = open_stores(url)
    recorder = Recorder(store, correlation_id="test")
    runners = {
        name: ProjectionRunner(store, make_projection(name, retention), commit_every=7)
        for name in DAEMON_PROJECTIONS
    }
    held: dict[int, dict[str, Any]] = {}
    """Position → the daemon's states there, as saved."""
    for week in range(5):
        record_searches(recorder, first=week * 6, count=6)
        for name, runner in runners.items():
            runner.catch_up()
            runner.snapshot()  # the clock's snapshot job
            store.prune_snapshots(name, runner.projection.version, keep=SNAPSHOTS_KEPT)
        held[store.head()] = {
            name: dumped(name, runner.state, retention) for name, runner in runners.items()
        }
    memory: MemoryState = runners["memory"].state
    assert memory.dropped_items > 0
    assert memory.dropped_changes > 0

    positions = sorted(held)
    for position in positions:
        for name in DAEMON_PROJECTIONS:
            projection = make_projection(name, retention)
            for use_snapshots in (True, False):
                again = replay(store, projection, until=position, use_snapshots=use_snapshots)
                assert dumped(name, again.state, retention) == held[position][name], (
                    name,
                    position,
                    again.started_from,
                )
    restarted = ProjectionRunner(store, make_projection("memory", retention))
    assert restarted.position == store.head()
    assert restarted.state == memory

    # the command: the oldest moment's snapshot was pruned, so it folds from 0; the newest
    # starts from a snapshot; both show the state the daemon held there
    for position, started in ((positions[0], "zero"), (positions[-1], f"snapshot@{positions[-1]}")):
        run = run_cli(
            "--db", url, "replay", "--projection", "memory", "--until", str(position), "--json"
        )
        assert run.code == 0, run.err
        shown = run.json()
        assert shown["started_from"] == started
        projection = make_projection("memory", retention)
        state = projection.load(held[position]["memory"])
        assert shown["state"] == json.loads(canonical_json(present(projection, state, store)))

    # nothing pruned: the same library, and the same memory as it is shown
    everything = replay(store, MemoryProjection())
    assert present(MemoryProjection(), everything.state, store) == present(
        runners["memory"].projection, memory, store
    )
    assert len(everything.state.log) == memory.dropped_changes + len(memory.log)
    assert everything.state.log[-len(memory.log) :] == memory.log
    library = replay(store, LibraryProjection(), use_snapshots=False)
    assert dumped("library", library.state, retention) == held[positions[-1]]["library"]

    log = run_cli("--db", url, "memory", "log", "--json")
    assert log.code == 0, log.err
    assert log.lines() == everything.state.log


def test_a_retention_below_zero_is_refused_naming_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ACCELOPT_MEMORY_CHANGES_KEPT", "-1")
    with pytest.raises(SettingsError, match="ACCELOPT_MEMORY_CHANGES_KEPT"):
        Settings.load()
