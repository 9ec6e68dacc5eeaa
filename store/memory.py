"""A complete event store in process memory: the same contract as the SQL store.

For tests and tools that need a real log without a database; it records everything and
forgets it when the process ends.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime

from events.envelope import ExpectedVersion, NewEvent, StoredEvent
from store.base import (
    AppendResult,
    Checkpoint,
    EventStore,
    LocalWakeup,
    Snapshot,
    Waiter,
    blob_hash,
    new_event_id,
    resolve_duplicate,
    validate_batch,
)
from store.errors import BlobNotFound, StoreError, WrongExpectedVersion
from store.scrub import Scrubber

__all__ = ["MemoryEventStore"]


class MemoryEventStore(EventStore):
    def __init__(
        self,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        scrubber: Scrubber | None = None,
    ) -> None:
        self._clock = clock
        if scrubber is not None:
            self.scrubber = scrubber
        self._lock = threading.RLock()
        self._wakeup = LocalWakeup()
        self.reset()

    def reset(self) -> None:
        """Forget everything, as a fresh store."""
        with self._lock:
            self._events: list[StoredEvent] = []
            self._streams: dict[str, list[StoredEvent]] = {}
            self._keys: dict[str, StoredEvent] = {}
            self._blobs: dict[str, bytes] = {}
            self._checkpoints: dict[str, Checkpoint] = {}
            self._snapshots: dict[tuple[str, str, int], Snapshot] = {}

    def close(self) -> None:
        self._wakeup.close()

    def _append(
        self,
        stream_id: str,
        events: Sequence[NewEvent],
        *,
        expected_version: ExpectedVersion,
    ) -> AppendResult:
        keys = validate_batch(stream_id, events)
        with self._lock:
            existing = [self._keys[k] for k in keys if k in self._keys]
            if existing:
                return resolve_duplicate(stream_id, events, existing)
            stream = self._streams.get(stream_id, [])
            current = len(stream)
            if not expected_version.admits(current):
                raise WrongExpectedVersion(stream_id, expected_version.describe(), current)
            now = self._clock()
            recorded_at = max(now, self._events[-1].recorded_at) if self._events else now
            head = len(self._events)
            stored = [
                StoredEvent(
                    position=head + i,
                    event_id=e.event_id or new_event_id(),
                    stream_id=stream_id,
                    stream_version=current + i,
                    type=e.type,
                    schema_version=e.schema_version,
                    data=e.data,
                    metadata=e.metadata,
                    idempotency_key=e.idempotency_key,
                    recorded_at=recorded_at,
                )
                for i, e in enumerate(events, start=1)
            ]
            self._events.extend(stored)
            self._streams[stream_id] = stream + stored
            self._keys.update({e.idempotency_key: e for e in stored if e.idempotency_key})
        self._wakeup.notify(stored[-1].position)
        return AppendResult(head + 1, stored[-1].position, stored[-1].stream_version)

    def read_all(
        self,
        *,
        after: int = 0,
        until: int | None = None,
        types: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> Iterator[StoredEvent]:
        with self._lock:
            selected = self._events[after : until if until is not None else None]
        wanted = set(types) if types is not None else None
        count = 0
        for event in selected:
            if limit is not None and count >= limit:
                return
            if wanted is None or event.type in wanted:
                count += 1
                yield event

    def read_stream(self, stream_id: str, *, after_version: int = 0) -> list[StoredEvent]:
        with self._lock:
            return list(self._streams.get(stream_id, [])[after_version:])

    def head(self) -> int:
        return len(self._events)

    def stream_version(self, stream_id: str) -> int:
        return len(self._streams.get(stream_id, []))

    def position_at(self, time: datetime) -> int:
        with self._lock:
            return bisect.bisect_right([e.recorded_at for e in self._events], time)

    def waiter(self) -> Waiter:
        return self._wakeup.subscriber()

    def _put_blob(self, raw: bytes) -> str:
        digest = blob_hash(raw)
        with self._lock:
            self._blobs.setdefault(digest, raw)
        return digest

    def get_blob(self, sha256: str) -> bytes:
        try:
            return self._blobs[sha256]
        except KeyError:
            raise BlobNotFound(f"memory store: no blob {sha256}") from None

    def load_checkpoint(self, name: str) -> Checkpoint | None:
        return self._checkpoints.get(name)

    def save_checkpoint(self, checkpoint: Checkpoint, *, previous: Checkpoint | None) -> None:
        with self._lock:
            stored = self._checkpoints.get(checkpoint.name)
            same = (stored is None and previous is None) or (
                stored is not None
                and previous is not None
                and (stored.position, stored.code_version)
                == (previous.position, previous.code_version)
            )
            if not same:
                raise StoreError(
                    f"projection {checkpoint.name!r} was saved by another runner meanwhile; "
                    "only one process may maintain a projection"
                )
            self._checkpoints[checkpoint.name] = checkpoint

    def save_snapshot(self, snapshot: Snapshot) -> None:
        key = (snapshot.name, snapshot.code_version, snapshot.position)
        with self._lock:
            self._snapshots.setdefault(key, snapshot)

    def latest_snapshot(self, name: str, code_version: str, *, at_most: int) -> Snapshot | None:
        with self._lock:
            found = [
                s
                for (n, v, p), s in self._snapshots.items()
                if n == name and v == code_version and p <= at_most
            ]
        return max(found, key=lambda s: s.position, default=None)

    def prune_snapshots(self, name: str, code_version: str, *, keep: int) -> int:
        with self._lock:
            mine = sorted(
                (k for k in self._snapshots if k[0] == name and k[1] == code_version),
                key=lambda k: k[2],
                reverse=True,
            )
            kept = set(mine[:keep])
            doomed = [k for k in self._snapshots if k[0] == name and k not in kept]
            for key in doomed:
                del self._snapshots[key]
        return len(doomed)
