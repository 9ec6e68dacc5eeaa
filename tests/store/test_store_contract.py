"""The EventStore contract, run against every adapter: memory, SQLite file, PostgreSQL."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from events.codec import encode
from events.envelope import ExpectedVersion, NewEvent
from store.base import BLOB_COMPRESS_FROM, Checkpoint, EventStore, Snapshot
from store.errors import IdempotencyConflict, InvalidPayload, StoreError, WrongExpectedVersion
from store.sql import SqlEventStore
from tests.support import factories


def event(task: str = "t", key: str | None = None) -> NewEvent:
    return encode(factories.removed(task), idempotency_key=key, metadata={"actor": "test"})


def test_append_then_read_back(store: EventStore) -> None:
    result = store.append("task:a", [event("a"), event("b")])
    assert (result.first_position, result.last_position, result.stream_version) == (1, 2, 2)
    assert not result.duplicate
    stored = list(store.read_all())
    assert [s.position for s in stored] == [1, 2]
    assert [s.stream_version for s in stored] == [1, 2]
    assert [s.data["task"] for s in stored] == ["a", "b"]
    assert stored[0].metadata == {"actor": "test"}
    assert stored[0].type == "KernelRemoved"
    assert stored[0].recorded_at.tzinfo is not None
    assert len({s.event_id for s in stored}) == 2
    assert store.head() == 2


def test_positions_are_dense_across_streams(store: EventStore) -> None:
    for i in range(5):
        store.append(f"s{i % 2}", [event()] * (i + 1))
    positions = [s.position for s in store.read_all()]
    assert positions == list(range(1, 16))
    assert store.stream_version("s0") == 1 + 3 + 5
    assert store.stream_version("s1") == 2 + 4
    assert store.stream_version("nothing") == 0


@pytest.mark.parametrize(
    ("expected", "current", "ok"),
    [
        (ExpectedVersion.ANY, 0, True),
        (ExpectedVersion.ANY, 2, True),
        (ExpectedVersion.NO_STREAM, 0, True),
        (ExpectedVersion.NO_STREAM, 2, False),
        (ExpectedVersion.STREAM_EXISTS, 0, False),
        (ExpectedVersion.STREAM_EXISTS, 2, True),
        (ExpectedVersion.exact(2), 2, True),
        (ExpectedVersion.exact(1), 2, False),
        (ExpectedVersion.exact(3), 2, False),
        (ExpectedVersion.exact(1), 0, False),
    ],
)
def test_expected_version_cases(
    store: EventStore, expected: ExpectedVersion, current: int, ok: bool
) -> None:
    if current:
        store.append("s", [event()] * current)
    before = store.head()
    if ok:
        assert store.append("s", [event()], expected_version=expected).stream_version == current + 1
    else:
        with pytest.raises(WrongExpectedVersion) as info:
            store.append("s", [event()], expected_version=expected)
        assert info.value.actual == current
        assert store.head() == before


def test_exact_version_must_be_positive() -> None:
    with pytest.raises(ValueError, match="NO_STREAM"):
        ExpectedVersion.exact(0)


def test_reused_idempotency_key_writes_nothing_and_returns_the_original(store: EventStore) -> None:
    first = store.append("job:1", [event(key="profile:1")])
    store.append("other", [event()])
    again = store.append(
        "job:1", [event(key="profile:1")], expected_version=ExpectedVersion.NO_STREAM
    )
    assert again.duplicate
    assert (again.first_position, again.last_position) == (
        first.first_position,
        first.last_position,
    )
    assert store.head() == 2
    assert [s.idempotency_key for s in store.read_all()] == ["profile:1", None]


def test_batch_with_keys_is_a_duplicate_as_a_whole(store: EventStore) -> None:
    batch = [event(key="a"), event(), event(key="b")]
    first = store.append("s", batch)
    again = store.append("s", batch)
    assert again.duplicate
    assert (again.first_position, again.last_position) == (first.first_position, 3)
    assert store.head() == 3


def test_idempotency_key_reused_for_something_else_is_refused(store: EventStore) -> None:
    store.append("s", [event(key="k1"), event(key="k2")])
    with pytest.raises(IdempotencyConflict, match="reused"):
        store.append("s", [event(key="k1"), event(key="k3")])
    with pytest.raises(IdempotencyConflict, match="in stream 's'"):
        store.append("elsewhere", [event(key="k1")])
    other_type = encode(factories.source_changed("t", "h"), idempotency_key="k1")
    with pytest.raises(IdempotencyConflict, match="KernelRemoved"):
        store.append("s", [other_type])
    with pytest.raises(IdempotencyConflict, match="twice in one append"):
        store.append("s", [event(key="z"), event(key="z")])
    assert store.head() == 2


def test_empty_append_is_refused(store: EventStore) -> None:
    with pytest.raises(ValueError, match="at least one event"):
        store.append("s", [])


def test_read_all_filters(store: EventStore) -> None:
    store.append("a", [event()] * 3)
    store.append("b", [encode(factories.source_changed("t", "h"))])
    store.append("a", [event()] * 3)
    assert [s.position for s in store.read_all(after=2, until=5)] == [3, 4, 5]
    assert [s.position for s in store.read_all(types=["KernelSourceChanged"])] == [4]
    assert [s.position for s in store.read_all(after=1, limit=2)] == [2, 3]
    assert [s.position for s in store.read_all(types=["KernelRemoved"], limit=4)] == [1, 2, 3, 5]
    assert list(store.read_all(after=7)) == []


def test_read_stream(store: EventStore) -> None:
    store.append("a", [event("x")])
    store.append("b", [event("y")])
    store.append("a", [event("z")])
    assert [s.data["task"] for s in store.read_stream("a")] == ["x", "z"]
    assert [s.stream_version for s in store.read_stream("a", after_version=1)] == [2]
    assert store.read_stream("none") == []


def test_recording_times_never_decrease_and_position_at(store: EventStore) -> None:
    for _ in range(3):
        store.append("s", [event()])
    times = [s.recorded_at for s in store.read_all()]
    assert times == sorted(times)
    assert store.position_at(times[1]) >= 2
    assert store.position_at(times[0] - timedelta(seconds=1)) == 0
    assert store.position_at(datetime.now(UTC) + timedelta(days=1)) == 3


def test_blobs_are_content_addressed(store: EventStore) -> None:
    small = "print('hi')"
    large = "x = 1\n" * BLOB_COMPRESS_FROM
    digest = store.put_blob(small)
    assert store.put_blob(small.encode()) == digest
    assert store.get_text(digest) == small
    assert store.get_text(store.put_blob(large)) == large
    binary = bytes(range(256)) * 10
    assert store.get_blob(store.put_blob(binary)) == binary
    with pytest.raises(StoreError, match="no blob"):
        store.get_blob("0" * 64)
    several = store.put_blobs(["y = 2", small, binary, "y = 2"])  # one write, in order
    assert several[1:3] == [digest, store.put_blob(binary)]
    assert several[0] == several[3] != digest
    assert store.get_text(several[0]) == "y = 2"


def test_checkpoints_are_compare_and_set(store: EventStore) -> None:
    assert store.load_checkpoint("p") is None
    first = Checkpoint("p", 3, "1", {"n": 3})
    store.save_checkpoint(first, previous=None)
    assert store.load_checkpoint("p") == first
    second = Checkpoint("p", 5, "1", {"n": 5})
    store.save_checkpoint(second, previous=first)
    assert store.load_checkpoint("p") == second
    with pytest.raises(StoreError, match="another runner"):
        store.save_checkpoint(Checkpoint("p", 9, "1", {}), previous=first)
    with pytest.raises(StoreError, match="another runner"):
        store.save_checkpoint(Checkpoint("p", 9, "1", {}), previous=None)
    assert store.load_checkpoint("p") == second


def test_snapshots(store: EventStore) -> None:
    for position in (10, 20, 30):
        store.save_snapshot(Snapshot("p", "1", position, {"at": position}))
    store.save_snapshot(Snapshot("p", "1", 20, {"at": "ignored: already cached"}))
    store.save_snapshot(Snapshot("p", "0", 25, {"at": "old code"}))
    latest = store.latest_snapshot("p", "1", at_most=25)
    assert latest == Snapshot("p", "1", 20, {"at": 20})
    assert store.latest_snapshot("p", "1", at_most=9) is None
    assert store.latest_snapshot("p", "2", at_most=99) is None
    assert store.prune_snapshots("p", "1", keep=1) == 3
    assert store.latest_snapshot("p", "1", at_most=29) is None
    assert store.latest_snapshot("p", "1", at_most=30) == Snapshot("p", "1", 30, {"at": 30})
    assert store.latest_snapshot("p", "0", at_most=99) is None


def test_subscription_catches_up_then_wakes_on_append(store: EventStore) -> None:
    store.append("s", [event()] * 3)
    with store.subscribe(after=1, poll_interval=10.0) as subscription:
        assert [s.position for s in subscription.poll(0)] == [2, 3]
        appender = threading.Timer(0.2, lambda: store.append("s", [event()]))
        appender.start()
        started = time.monotonic()
        woken = subscription.poll(10.0)
        appender.join()  # never left to append after the test, into a dropped database
        assert [s.position for s in woken] == [4]
        # Woken by the append (in-process wake-up or LISTEN/NOTIFY), not by the poll interval.
        assert time.monotonic() - started < 5.0
        assert subscription.position == 4
        assert subscription.poll(0) == []


@pytest.mark.postgres
def test_appends_to_another_schema_wake_no_subscriber_here(
    fresh_pg_url: Callable[[], str], open_stores: Callable[[str], SqlEventStore]
) -> None:
    """The NOTIFY channel is the database's: another log in the same database (another
    accelopt, a benchmark) appending must not wake this log's subscribers, whose poll would
    return empty before its time."""
    mine, other = open_stores(fresh_pg_url()), open_stores(fresh_pg_url())
    with mine.subscribe(poll_interval=10.0) as subscription:
        assert subscription.poll(0) == []
        elsewhere = threading.Timer(0.2, lambda: other.append("s", [event()]))
        elsewhere.start()
        started = time.monotonic()
        assert subscription.poll(1.5) == []
        elsewhere.join()
        assert time.monotonic() - started >= 1.4
        here = threading.Timer(0.2, lambda: mine.append("s", [event()]))
        here.start()
        assert [s.position for s in subscription.poll(10.0)] == [1]
        here.join()


def test_closing_a_subscription_ends_its_iteration_promptly(store: EventStore) -> None:
    store.append("s", [event()])
    subscription = store.subscribe(poll_interval=30.0)
    other = store.subscribe(after=1, poll_interval=30.0)  # a second subscriber stays open
    seen: list[int] = []

    def consume() -> None:
        seen.extend(s.position for s in subscription)

    thread = threading.Thread(target=consume)
    thread.start()
    time.sleep(0.3)
    closed_at = time.monotonic()
    subscription.close()
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert time.monotonic() - closed_at < 2.0  # not after the 30 s poll interval
    assert seen == [1]
    store.append("s", [event()])
    assert [s.position for s in other.poll(5.0)] == [2]
    other.close()


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ({"latency_ms": math.nan}, "NaN"),
        ({"nested": [{"x": -math.inf}]}, "NaN"),
        ({"message": "bad\x00byte"}, "NUL"),
        ({"key\x00": 1}, "NUL"),
        ({"message": "half a pair \ud800"}, "surrogates"),
        ({"files": {1, 2}}, "not JSON serializable|Type is not JSON serializable"),
    ],
)
def test_payloads_no_database_could_store_are_refused_by_every_adapter(
    store: EventStore, data: dict[str, object], reason: str
) -> None:
    store.append("s", [event()])
    bad = NewEvent(type="KernelRemoved", schema_version=1, data=data)
    with pytest.raises(InvalidPayload, match=reason) as info:
        store.append("s", [event(), bad])
    assert "event 1 (KernelRemoved)" in str(info.value)
    assert [s.position for s in store.read_all()] == [1]  # nothing of the batch was written
    assert store.append("s", [event()]).first_position == 2


def test_a_literal_backslash_u0000_text_is_stored(store: EventStore) -> None:
    text = "the six characters \\u0000 are fine"
    store.append("s", [NewEvent(type="KernelRemoved", schema_version=1, data={"m": text})])
    assert next(store.read_all()).data == {"m": text}
