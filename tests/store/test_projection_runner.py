"""The projection runner: following the log, rebuilding, snapshots, one runner per projection."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable

import pytest

from events.codec import canonical_json, encode
from store.base import EventStore
from store.errors import StoreBusy, StoreError
from store.projections.library import LibraryProjection
from store.projections.runner import ProjectionRunner, fold_steps, replay, resolve_until
from store.sql import SqlEventStore
from tests.support import factories


def add_task(store: EventStore, name: str) -> None:
    store.append(f"task:{name}", [encode(factories.source_changed(name, "h"))])


def test_run_follows_the_log_until_stopped(store: EventStore) -> None:
    add_task(store, "a")
    runner = ProjectionRunner(store, LibraryProjection())
    stop = threading.Event()
    thread = threading.Thread(target=runner.run, args=(stop,), kwargs={"poll_interval": 0.2})
    thread.start()
    try:
        for name in ("b", "c"):
            add_task(store, name)
        deadline = time.monotonic() + 10
        while runner.position < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert runner.position == 3
        assert set(runner.state.tasks) == {"a", "b", "c"}
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive()
    saved = store.load_checkpoint("library")
    assert saved is not None
    assert saved.position == 3  # what it folded, it saved


def test_rebuild_folds_everything_again(store: EventStore) -> None:
    for name in ("a", "b"):
        add_task(store, name)
    runner = ProjectionRunner(store, LibraryProjection())
    runner.catch_up()
    before = canonical_json(runner.projection.dump(runner.state))
    assert runner.rebuild() == 2
    assert canonical_json(runner.projection.dump(runner.state)) == before


def test_snapshots_serve_replays_as_of_later_positions(store: EventStore) -> None:
    for name in ("a", "b", "c", "d"):
        add_task(store, name)
    runner = ProjectionRunner(store, LibraryProjection())
    runner.catch_up(until=2)
    assert runner.snapshot().position == 2
    later = replay(store, LibraryProjection(), until=3)
    assert later.started_from == "snapshot@2"
    assert set(later.state.tasks) == {"a", "b", "c"}
    earlier = replay(store, LibraryProjection(), until=1)
    assert earlier.started_from == "zero"
    assert set(earlier.state.tasks) == {"a"}
    assert resolve_until(store, 99) == 4


def test_fold_steps_yields_the_state_after_each_event_and_ignores_snapshots(
    store: EventStore,
) -> None:
    for name in ("a", "b", "c"):
        add_task(store, name)
    runner = ProjectionRunner(store, LibraryProjection())
    runner.catch_up(until=2)
    runner.snapshot()  # a reader of every step starts from zero all the same
    seen = [sorted(state.tasks) for state in fold_steps(store, LibraryProjection(), until=2)]
    assert seen == [["a"], ["a", "b"]]
    *_, last = fold_steps(store, LibraryProjection())
    whole = replay(store, LibraryProjection(), use_snapshots=False).state
    assert LibraryProjection().dump(last) == LibraryProjection().dump(whole)


def test_two_runners_of_one_projection_cannot_both_save(store: EventStore) -> None:
    add_task(store, "a")
    first = ProjectionRunner(store, LibraryProjection())
    second = ProjectionRunner(store, LibraryProjection())
    first.catch_up()
    add_task(store, "b")
    with pytest.raises(StoreError, match="another runner"):
        second.catch_up()


def test_driver_errors_become_store_errors_naming_the_database(
    fresh_sqlite_url: Callable[[], str], open_stores: Callable[[str], SqlEventStore]
) -> None:
    url = fresh_sqlite_url()
    store = open_stores(url)
    add_task(store, "a")
    with store.engine.begin() as connection:
        connection.exec_driver_sql("DROP TABLE events")  # damage from outside accelopt
    with pytest.raises(StoreError, match=r"\.db: read failed: no such table: events"):
        list(store.read_all())
    with pytest.raises(StoreError, match="append failed: no such table: events"):
        add_task(store, "b")


def test_a_writer_that_holds_sqlite_too_long_gives_store_busy(
    fresh_sqlite_url: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("store.engine.SQLITE_BUSY_TIMEOUT_MS", 200)
    url = fresh_sqlite_url()
    store = SqlEventStore.open(url)
    holder = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # another process's writer, mid-transaction
        started = time.monotonic()
        with pytest.raises(StoreBusy, match="another writer held the log too long"):
            add_task(store, "a")
        assert time.monotonic() - started < 5
        holder.execute("ROLLBACK")
        add_task(store, "a")
        assert store.head() == 1
    finally:
        holder.close()
        store.close()


def test_a_runner_that_saves_at_intervals_keeps_each_event_once(store: EventStore) -> None:
    """save_every_s: events folded since the last save stay unsaved (the state is written
    whole, so not once per event); a runner that dies before saving leaves a checkpoint from
    which the next one folds them again, and flush saves them at a clean stop."""
    add_task(store, "a")
    runner = ProjectionRunner(store, LibraryProjection(), save_every_s=3600)
    runner.catch_up()
    assert store.load_checkpoint("library") is None
    runner.flush()
    for name in ("b", "c"):
        add_task(store, name)
        runner.catch_up()
    assert runner.position == 3
    saved = store.load_checkpoint("library")
    assert saved is not None
    assert saved.position == 1
    successor = ProjectionRunner(store, LibraryProjection(), save_every_s=3600)
    assert successor.position == 1  # as if the first runner had been killed here
    successor.catch_up()
    assert canonical_json(successor.projection.dump(successor.state)) == canonical_json(
        runner.projection.dump(runner.state)
    )
    successor.flush()
    saved = store.load_checkpoint("library")
    assert saved is not None
    assert saved.position == 3
    assert set(LibraryProjection().load(saved.state).tasks) == {"a", "b", "c"}
