"""Concurrent writers and readers on real databases (SQLite file and PostgreSQL)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable

import pytest
import sqlalchemy as sa

from events.codec import encode
from events.envelope import ExpectedVersion, NewEvent
from store.base import AppendResult
from store.errors import WrongExpectedVersion
from store.sql import SqlEventStore
from tests.support import factories

OpenStore = Callable[[str], SqlEventStore]


def event(n: int = 0, key: str | None = None) -> NewEvent:
    return encode(factories.removed(f"t{n}"), idempotency_key=key)


def run_threads(count: int, target: Callable[[int], None]) -> None:
    errors: list[BaseException] = []

    def guarded(i: int) -> None:
        try:
            target(i)
        except BaseException as e:  # reported below, with the thread's own traceback
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a writer hung"
    if errors:
        raise errors[0]


def test_racing_writers_exactly_one_wins_each_version(
    db_url: Callable[[], str], open_stores: OpenStore
) -> None:
    url = db_url()
    writers, rounds = 8, 12
    stores = [open_stores(url) for _ in range(writers)]
    barrier = threading.Barrier(writers)
    outcomes: list[list[str]] = [[] for _ in range(rounds)]
    lock = threading.Lock()

    def writer(i: int) -> None:
        for version in range(rounds):
            expected = ExpectedVersion.NO_STREAM if version == 0 else ExpectedVersion.exact(version)
            barrier.wait()
            try:
                stores[i].append("race", [event(i)], expected_version=expected)
                outcome = f"won:{i}"
            except WrongExpectedVersion as e:
                outcome = f"lost at {e.actual}"
            with lock:
                outcomes[version].append(outcome)
            barrier.wait()  # nobody starts the next round before everyone finished this one

    run_threads(writers, writer)
    for version, results in enumerate(outcomes):
        won = [r for r in results if r.startswith("won")]
        assert len(won) == 1, f"version {version + 1}: {results}"
        assert results.count(f"lost at {version + 1}") == writers - 1
    stream = stores[0].read_stream("race")
    assert [s.stream_version for s in stream] == list(range(1, rounds + 1))
    winners = [f"won:{int(s.data['task'][1:])}" for s in stream]
    assert winners == [next(r for r in results if r.startswith("won")) for results in outcomes]
    assert [s.position for s in stores[0].read_all()] == list(range(1, rounds + 1))


def test_concurrent_appends_with_one_idempotency_key_write_one_event(
    db_url: Callable[[], str], open_stores: OpenStore
) -> None:
    url = db_url()
    writers = 8
    stores = [open_stores(url) for _ in range(writers)]
    barrier = threading.Barrier(writers)
    results: list[AppendResult] = []

    def writer(i: int) -> None:
        barrier.wait()
        results.append(stores[i].append("job:42", [event(key="profile:42")]))

    run_threads(writers, writer)
    assert Counter(r.duplicate for r in results) == {False: 1, True: writers - 1}
    assert {r.first_position for r in results} == {1}
    assert stores[0].head() == 1


def test_tailing_reader_sees_every_event_once_in_order(
    db_url: Callable[[], str], open_stores: OpenStore
) -> None:
    """4 writers append concurrently while a subscription tails the log; the reader must see
    every committed event exactly once with no position skipped at any moment."""
    url = db_url()
    store = open_stores(url)  # writers share it: SQLite's in-process wake-up is exercised
    writers, per_writer = 4, 150
    sizes = [1 + n % 3 for n in range(per_writer)]  # batches of 1, 2 and 3 events
    total = writers * sum(sizes)
    seen: list[int] = []
    written: list[int] = []
    lock = threading.Lock()

    def read() -> None:
        with store.subscribe(poll_interval=1.0) as subscription:
            deadline = time.monotonic() + 120
            while len(seen) < total and time.monotonic() < deadline:
                for stored in subscription.poll(1.0):
                    # Dense and commit-ordered: the next event is always the next position.
                    assert stored.position == (seen[-1] if seen else 0) + 1, (
                        f"reader jumped from {seen[-1] if seen else 0} to {stored.position}"
                    )
                    seen.append(stored.position)

    reader = threading.Thread(target=read)
    reader.start()

    def writer(i: int) -> None:
        for size in sizes:
            result = store.append(f"writer:{i}", [event(i)] * size)
            with lock:
                written.extend(range(result.first_position, result.last_position + 1))

    run_threads(writers, writer)
    reader.join(timeout=120)
    assert not reader.is_alive()
    assert seen == list(range(1, total + 1))
    assert sorted(written) == seen


@pytest.mark.postgres
def test_postgres_append_waits_for_an_open_appender(
    fresh_pg_url: Callable[[], str], open_stores: OpenStore
) -> None:
    """An appender holding the lock with an uncommitted event makes the next one wait; the
    reader never sees the later event before the earlier one."""
    url = fresh_pg_url()
    store = open_stores(url)
    store.append("s", [event()])
    blocker = sa.create_engine(store.engine.url)
    connection = blocker.connect()
    transaction = connection.begin()
    connection.exec_driver_sql("LOCK TABLE events IN EXCLUSIVE MODE")
    encoded = event(99)
    connection.execute(
        sa.text(
            "INSERT INTO events (position, event_id, stream_id, stream_version, type, "
            "schema_version, data, metadata, recorded_at) VALUES (2, :id, 'held', 1, :type, 1, "
            "CAST(:data AS jsonb), '{}', now())"
        ),
        {
            "id": "00000000-0000-7000-8000-000000000002",
            "type": encoded.type,
            "data": '{"task":"t99","task_dir":"/k"}',
        },
    )
    results: list[AppendResult] = []
    appender = threading.Thread(target=lambda: results.append(store.append("late", [event(7)])))
    appender.start()
    time.sleep(1.0)
    assert appender.is_alive(), "the append did not wait for the open appender"
    assert [s.position for s in store.read_all()] == [1]  # the open append is invisible
    transaction.commit()
    appender.join(timeout=30)
    connection.close()
    blocker.dispose()
    assert results[0].first_position == 3
    assert [(s.position, s.stream_id) for s in store.read_all()] == [
        (1, "s"),
        (2, "held"),
        (3, "late"),
    ]


WRITER_SCRIPT = """
import sys
from events.codec import encode
from store.sql import SqlEventStore
from tests.support import factories
store = SqlEventStore.open(sys.argv[1])
for i in range(int(sys.argv[2])):
    store.append("other-process", [encode(factories.removed(f"p{i}"))])
store.close()
"""


def test_subscription_sees_events_of_another_process(
    fresh_sqlite_url: Callable[[], str], open_stores: OpenStore
) -> None:
    """SQLite cannot notify across processes; the subscription's polling must find them."""
    url = fresh_sqlite_url()
    store = open_stores(url)
    count = 40
    seen: list[int] = []
    with store.subscribe(poll_interval=0.1) as subscription:
        process = subprocess.Popen([sys.executable, "-c", WRITER_SCRIPT, url, str(count)])
        deadline = time.monotonic() + 60
        while len(seen) < count and time.monotonic() < deadline:
            seen.extend(s.position for s in subscription.poll(0.1))
        assert process.wait(timeout=60) == 0
    assert seen == list(range(1, count + 1))
