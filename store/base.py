"""The event store port: what every adapter (SQL, in-memory) promises.

The contract tests in tests/store/test_store_contract.py run against every adapter.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import uuid
import zlib
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol, Self

from events.codec import storage_json
from events.envelope import ExpectedVersion, NewEvent, StoredEvent
from store.errors import BlobNotFound, IdempotencyConflict, InvalidPayload, StoreError
from store.scrub import Scrubber

__all__ = [
    "AppendResult",
    "Checkpoint",
    "EventStore",
    "LocalWakeup",
    "Snapshot",
    "Subscription",
    "Waiter",
    "blob_hash",
    "compress_blob",
    "decompress_blob",
    "new_event_id",
    "resolve_duplicate",
    "validate_batch",
]

BLOB_COMPRESS_FROM = 1024
"""Blobs at least this large are stored zlib-compressed when that makes them smaller."""


@dataclass(frozen=True, slots=True)
class AppendResult:
    """Where an append landed. `duplicate`: its idempotency keys were used before and
    nothing was written; the positions are those of the original append."""

    first_position: int
    last_position: int
    stream_version: int
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """A projection's persisted state and the last position folded into it."""

    name: str
    position: int
    code_version: str
    state: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Snapshot:
    name: str
    code_version: str
    position: int
    state: dict[str, Any]


class Waiter(Protocol):
    """Blocks until the log may have grown past a position (a hint: callers re-read)."""

    def wait(self, after: int, timeout: float) -> bool: ...

    def close(self) -> None: ...


class LocalWakeup:
    """In-process wake-up: appenders in this process notify, subscribers wait."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._head = 0
        self._closed = False

    def notify(self, head: int) -> None:
        with self._condition:
            self._head = max(self._head, head)
            self._condition.notify_all()

    def wait(self, after: int, timeout: float, cancel: threading.Event | None = None) -> bool:
        """Until an append past `after` in this process, `cancel`, close, or the timeout."""
        with self._condition:
            return self._condition.wait_for(
                lambda: (
                    self._closed or self._head > after or (cancel is not None and cancel.is_set())
                ),
                timeout=timeout,
            )

    def close(self) -> None:
        with self._condition:
            self._closed = True
            self._condition.notify_all()

    def subscriber(self) -> Waiter:
        return _SubscriberWaiter(self)

    def _wake_all(self) -> None:
        with self._condition:
            self._condition.notify_all()


class _SubscriberWaiter:
    """One subscriber's view of a shared LocalWakeup: closing it wakes only this one."""

    def __init__(self, wakeup: LocalWakeup) -> None:
        self._wakeup = wakeup
        self._closed = threading.Event()

    def wait(self, after: int, timeout: float) -> bool:
        return self._wakeup.wait(after, timeout, self._closed)

    def close(self) -> None:
        self._closed.set()
        self._wakeup._wake_all()  # the waits re-check; this one now sees its cancel


class Subscription:
    """Catches up from a position, then waits for new events; yields each event once, in order.

    Notifications are only hints: after every wake-up or `poll_interval`, the subscription
    re-reads from its own position, so a missed hint (another process appending to SQLite,
    a dropped PostgreSQL connection) delays an event but never loses it.
    """

    def __init__(
        self,
        store: EventStore,
        waiter: Waiter,
        *,
        after: int,
        batch_size: int,
        poll_interval: float,
    ) -> None:
        self.position = after
        self._store = store
        self._waiter = waiter
        self._batch_size = batch_size
        self._poll_interval = poll_interval
        self._buffer: deque[StoredEvent] = deque()
        self._closed = False

    def poll(self, timeout: float) -> list[StoredEvent]:
        """The next events after `position` (at most one batch), waiting up to `timeout`."""
        if not self._buffer:
            self._fill()
            if not self._buffer and not self._closed and timeout > 0:
                self._waiter.wait(self.position, timeout)
                self._fill()
        batch = list(self._buffer)
        self._buffer.clear()
        if batch:
            self.position = batch[-1].position
        return batch

    def _fill(self) -> None:
        if self._closed:
            return
        last = self._buffer[-1].position if self._buffer else self.position
        self._buffer.extend(self._store.read_all(after=last, limit=self._batch_size))

    def __iter__(self) -> Iterator[StoredEvent]:
        while not self._closed:
            yield from self.poll(self._poll_interval)

    def close(self) -> None:
        self._closed = True
        self._waiter.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def compress_blob(content: bytes) -> tuple[str, bytes]:
    if len(content) >= BLOB_COMPRESS_FROM:
        packed = zlib.compress(content, 6)
        if len(packed) < len(content):
            return "zlib", packed
    return "identity", content


def decompress_blob(compression: str, stored: bytes) -> bytes:
    if compression == "identity":
        return stored
    if compression == "zlib":
        return zlib.decompress(stored)
    raise StoreError(f"blob stored with unknown compression {compression!r}")


def validate_batch(stream_id: str, events: Sequence[NewEvent]) -> list[str]:
    """Check a batch before it is written; returns its idempotency keys.

    Every adapter refuses the same things, so a log written on one database can be moved
    to the other: payloads that do not store as JSON (see `storage_json`), and a key used
    twice inside one append.
    """
    if not events:
        raise ValueError("an append needs at least one event")
    for index, new in enumerate(events):
        try:
            storage_json(new.data)
            storage_json(new.metadata)
        except (TypeError, ValueError) as e:
            raise InvalidPayload(
                f"event {index} ({new.type}) of an append to {stream_id!r} cannot be stored: {e}"
            ) from e
    keys = [e.idempotency_key for e in events if e.idempotency_key is not None]
    if len(set(keys)) != len(keys):
        raise IdempotencyConflict("the same idempotency key appears twice in one append")
    return keys


def resolve_duplicate(
    stream_id: str, events: Sequence[NewEvent], existing: Sequence[StoredEvent]
) -> AppendResult:
    """The result of re-appending a batch whose keys are (partly) recorded already.

    An append is atomic, so if any of its keys is recorded, the whole batch was: every keyed
    event must be there, in this stream, with the same type. Anything else means the key was
    reused for something different, which is refused rather than silently ignored.
    """
    by_key = {e.idempotency_key: e for e in existing}
    for new in events:
        if new.idempotency_key is None:
            continue
        old = by_key.get(new.idempotency_key)
        if old is None:
            raise IdempotencyConflict(
                f"idempotency key {new.idempotency_key!r} is new but other keys of the same "
                "append were recorded before: keys were reused for a different append"
            )
        if old.stream_id != stream_id or old.type != new.type:
            raise IdempotencyConflict(
                f"idempotency key {new.idempotency_key!r} was used at position {old.position} "
                f"for a {old.type} in stream {old.stream_id!r}, not a {new.type} in "
                f"{stream_id!r}"
            )
    return AppendResult(
        first_position=min(e.position for e in existing),
        last_position=max(e.position for e in existing),
        stream_version=max(e.stream_version for e in existing),
        duplicate=True,
    )


def new_event_id() -> str:
    """A UUIDv7 (RFC 9562): time-ordered, so the unique index on event ids grows at its end
    instead of taking random inserts all over a B-tree of millions of ids."""
    millis = time.time_ns() // 1_000_000
    value = (millis & (1 << 48) - 1) << 80 | int.from_bytes(os.urandom(10), "big")
    value = value & ~(0xF << 76) | 0x7 << 76  # version 7
    value = value & ~(0x3 << 62) | 0x2 << 62  # RFC variant
    return str(uuid.UUID(int=value))


def blob_hash(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


class EventStore(ABC):
    """An append-only log with a dense global order, per-stream versions, blobs, and the
    persisted state of projections.

    Whatever is written passes through the store's scrubber first (store.scrub): the log is
    immutable, so a secret must be taken out before it is written, never after."""

    scrubber: Scrubber = Scrubber()

    # --- the log -------------------------------------------------------------------------

    def append(
        self,
        stream_id: str,
        events: Sequence[NewEvent],
        *,
        expected_version: ExpectedVersion = ExpectedVersion.ANY,
    ) -> AppendResult:
        """Append atomically at the end of the log and of the stream, or raise
        WrongExpectedVersion; an idempotency key seen before makes it a no-op."""
        if self.scrubber:
            events = [
                replace(
                    e, data=self.scrubber.value(e.data), metadata=self.scrubber.value(e.metadata)
                )
                for e in events
            ]
        return self._append(stream_id, events, expected_version=expected_version)

    @abstractmethod
    def _append(
        self,
        stream_id: str,
        events: Sequence[NewEvent],
        *,
        expected_version: ExpectedVersion,
    ) -> AppendResult:
        """append(), its events already scrubbed."""

    @abstractmethod
    def read_all(
        self,
        *,
        after: int = 0,
        until: int | None = None,
        types: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> Iterator[StoredEvent]:
        """Events with after < position ≤ until, in position order, optionally of some types."""

    @abstractmethod
    def read_stream(self, stream_id: str, *, after_version: int = 0) -> list[StoredEvent]:
        """One stream's events after a version, in version order."""

    @abstractmethod
    def head(self) -> int:
        """The last position (0 for an empty log); positions are dense, so also the count."""

    @abstractmethod
    def stream_version(self, stream_id: str) -> int:
        """The stream's last version, 0 when it has no events."""

    @abstractmethod
    def position_at(self, time: datetime) -> int:
        """The last position recorded at or before `time` (recording times never decrease)."""

    @abstractmethod
    def waiter(self) -> Waiter:
        """A fresh waiter for one subscriber."""

    def subscribe(
        self, *, after: int = 0, batch_size: int = 1000, poll_interval: float = 1.0
    ) -> Subscription:
        return Subscription(
            self, self.waiter(), after=after, batch_size=batch_size, poll_interval=poll_interval
        )

    # --- blobs -----------------------------------------------------------------------------

    def put_blob(self, content: bytes | str) -> str:
        """Store content once under its sha256 and return the hash (str is stored as UTF-8).
        Text is scrubbed first, so the hash is that of what is stored."""
        return self._put_blob(self._scrubbed(content))

    def put_blobs(self, contents: Iterable[bytes | str]) -> list[str]:
        """put_blob() of each, in one write where an adapter can (a task folder's files)."""
        return self._put_blobs([self._scrubbed(content) for content in contents])

    def _scrubbed(self, content: bytes | str) -> bytes:
        raw = content.encode("utf-8") if isinstance(content, str) else content
        if self.scrubber:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                return raw  # not text: nothing a secret could be read from
            raw = self.scrubber.text(text).encode("utf-8")
        return raw

    @abstractmethod
    def _put_blob(self, raw: bytes) -> str:
        """put_blob(), its content already scrubbed and encoded."""

    def _put_blobs(self, raws: list[bytes]) -> list[str]:
        return [self._put_blob(raw) for raw in raws]

    @abstractmethod
    def get_blob(self, sha256: str) -> bytes:
        """The content stored under the hash; BlobNotFound if absent."""

    def get_text(self, sha256: str) -> str:
        return self.get_blob(sha256).decode("utf-8")

    def get_texts(self, hashes: Iterable[str]) -> dict[str, str]:
        """The texts of those of `hashes` the log holds (absent ones are left out): one look
        for many, where an adapter can."""
        found = {}
        for sha256 in set(hashes):
            try:
                found[sha256] = self.get_text(sha256)
            except BlobNotFound:
                continue
        return found

    # --- projections -----------------------------------------------------------------------

    @abstractmethod
    def load_checkpoint(self, name: str) -> Checkpoint | None:
        """The projection's persisted state, if any."""

    @abstractmethod
    def save_checkpoint(self, checkpoint: Checkpoint, *, previous: Checkpoint | None) -> None:
        """Replace `previous` (what this runner loaded) by `checkpoint`, atomically; raise
        StoreError if another runner changed it meanwhile."""

    @abstractmethod
    def save_snapshot(self, snapshot: Snapshot) -> None:
        """Cache a state at a position (a no-op if that snapshot exists)."""

    @abstractmethod
    def latest_snapshot(self, name: str, code_version: str, *, at_most: int) -> Snapshot | None:
        """The newest snapshot of this code version at or before a position."""

    @abstractmethod
    def prune_snapshots(self, name: str, code_version: str, *, keep: int) -> int:
        """Drop snapshots of other code versions and all but the newest `keep`; returns count."""

    def close(self) -> None:  # noqa: B027 - adapters without resources need nothing here
        """Release connections and wake subscribers."""
