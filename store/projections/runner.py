"""Running projections over the log: persisted with exactly-once checkpoints, replayed to
any position or time from the best snapshot, or followed step by step by a reader that acts
as the fold goes (`fold_steps`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

from events.codec import DEFAULT_CODEC, Codec
from events.envelope import StoredEvent
from events.errors import EventDecodeError
from events.projection import Fold, Projection
from store.base import Checkpoint, EventStore, Snapshot

__all__ = [
    "ProjectionRunner",
    "Replay",
    "SkippedEvent",
    "fold_steps",
    "replay",
    "resolve_until",
]

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class SkippedEvent:
    """An event a tolerant replay could not decode, reported instead of folded."""

    position: int
    type: str
    reason: str


def _steps(
    projection: Fold[S],
    state: S,
    stored_events: Iterable[StoredEvent],
    codec: Codec,
    skipped: list[SkippedEvent] | None,
) -> Iterator[tuple[S, int]]:
    """Decode and fold, yielding the state after each event and the event's position; a bad
    event halts (poison) unless `skipped` collects it."""
    decode, apply = codec.decode, projection.apply
    for stored in stored_events:
        try:
            envelope = decode(stored)
        except EventDecodeError as e:
            if skipped is None:
                raise
            skipped.append(SkippedEvent(stored.position, stored.type, e.reason))
        else:
            state = apply(state, envelope)
        yield state, stored.position


def _fold_stored(
    projection: Fold[S],
    state: S,
    stored_events: Iterable[StoredEvent],
    codec: Codec,
    skipped: list[SkippedEvent] | None,
) -> tuple[S, int | None]:
    """The state after the last event, and that event's position (None: no event)."""
    result: tuple[S, int | None] = (state, None)
    for step in _steps(projection, state, stored_events, codec, skipped):
        result = step
    return result


class ProjectionRunner(Generic[S]):
    """Keeps one projection's persisted state in step with the log.

    State and checkpoint are one row written in one transaction, so a crash between folding
    and saving replays the unsaved events into the saved state: each event counts once.

    `save_every_s`: how long folded events may stay unsaved (0: saved after every batch). A
    save writes the whole state, so a process that folds a few events at a time, as the daemon
    does, would otherwise write its state once per event: time that grows with the state
    (2,000 new task folders took the daemon 170 s on a 2-core host, 44% of it saving). What is
    not saved yet is folded again from the log after a crash; `flush` saves it at a clean stop.
    """

    def __init__(
        self,
        store: EventStore,
        projection: Projection[S],
        *,
        codec: Codec = DEFAULT_CODEC,
        commit_every: int = 1000,
        save_every_s: float = 0.0,
    ) -> None:
        self.store = store
        self.projection = projection
        self.codec = codec
        self.commit_every = commit_every
        self.save_every_s = save_every_s
        self._saved_at = time.monotonic()
        self.state: S = projection.initial()
        self.position = 0
        self._saved: Checkpoint | None = None
        self.load()

    def load(self) -> None:
        """Take the persisted state; another code version's state is discarded, not reused."""
        saved = self.store.load_checkpoint(self.projection.name)
        self._saved = saved
        if saved is not None and saved.code_version == self.projection.version:
            self.state = self.projection.load(saved.state)
            self.position = saved.position
            return
        snapshot = self.store.latest_snapshot(
            self.projection.name, self.projection.version, at_most=self.store.head()
        )
        if snapshot is not None:
            self.state = self.projection.load(snapshot.state)
            self.position = snapshot.position
        else:
            self.state = self.projection.initial()
            self.position = 0

    def process(self, stored_events: list[StoredEvent]) -> None:
        """Fold events that follow `position` and commit them with the checkpoint."""
        if not stored_events:
            return
        if stored_events[0].position <= self.position:
            raise ValueError(
                f"projection {self.projection.name} is at {self.position}; "
                f"got event {stored_events[0].position} again"
            )
        self.state, last = _fold_stored(
            self.projection, self.state, stored_events, self.codec, None
        )
        assert last is not None
        self.position = last
        if self._unsaved() >= self.commit_every or (
            time.monotonic() - self._saved_at >= self.save_every_s
        ):
            self.commit()

    def _unsaved(self) -> int:
        return self.position - (self._saved.position if self._saved is not None else 0)

    def flush(self) -> None:
        """Save what was folded since the last save, if anything was."""
        saved = self._saved
        if saved is None or self._unsaved() or saved.code_version != self.projection.version:
            self.commit()

    def catch_up(self, *, until: int | None = None) -> int:
        """Fold everything up to `until` (default: the head), saving as `save_every_s` says."""
        batch: list[StoredEvent] = []
        for stored in self.store.read_all(after=self.position, until=until):
            batch.append(stored)
            if len(batch) >= self.commit_every:
                self.process(batch)
                batch = []
        self.process(batch)
        return self.position

    def rebuild(self) -> int:
        """Forget the state and fold the whole log again."""
        self.state = self.projection.initial()
        self.position = 0
        self.commit()
        return self.catch_up()

    def commit(self) -> None:
        checkpoint = Checkpoint(
            self.projection.name,
            self.position,
            self.projection.version,
            self.projection.dump(self.state),
        )
        self.store.save_checkpoint(checkpoint, previous=self._saved)
        self._saved = checkpoint
        self._saved_at = time.monotonic()

    def snapshot(self) -> Snapshot:
        """Cache the current state for replays "as of" later positions."""
        snapshot = Snapshot(
            self.projection.name,
            self.projection.version,
            self.position,
            self.projection.dump(self.state),
        )
        self.store.save_snapshot(snapshot)
        return snapshot

    def run(self, stop: threading.Event, *, poll_interval: float = 1.0) -> None:
        """Catch up, then follow the log until `stop` is set."""
        self.catch_up()
        with self.store.subscribe(
            after=self.position, batch_size=self.commit_every, poll_interval=poll_interval
        ) as subscription:
            while not stop.is_set():
                self.process(subscription.poll(poll_interval))
        self.flush()


@dataclass
class Replay(Generic[S]):
    """A projection's state rebuilt from the log as of `position`."""

    state: S
    position: int
    started_from: str = "zero"
    """Where the fold began: "zero", "snapshot@<pos>" or "checkpoint@<pos>"."""
    skipped: list[SkippedEvent] = field(default_factory=list)


def resolve_until(store: EventStore, until: int | datetime | None) -> int:
    """A log position from a position, a time (the last event recorded by then), or None."""
    if until is None:
        return store.head()
    if isinstance(until, datetime):
        return store.position_at(until)
    if until < 0:
        raise ValueError("a position is ≥ 0")
    return min(until, store.head())


def fold_steps(
    store: EventStore,
    fold: Fold[S],
    *,
    until: int | datetime | None = None,
    codec: Codec = DEFAULT_CODEC,
) -> Iterator[S]:
    """The fold of the log from position 0 up to `until` (as `replay` takes it), one event at
    a time: the state after each event, for a reader that acts while the log is read (the
    dataset export writes each line as its event goes by) instead of on the end state. Pages
    of events are read as the steps are taken; nothing is cached or saved; a bad event halts.
    """
    target = resolve_until(store, until)
    events = store.read_all(after=0, until=target)
    for state, _position in _steps(fold, fold.initial(), events, codec, None):
        yield state


def replay(
    store: EventStore,
    projection: Projection[S],
    *,
    until: int | datetime | None = None,
    use_snapshots: bool = True,
    use_checkpoint: bool = False,
    skip_undecodable: bool = False,
    codec: Codec = DEFAULT_CODEC,
) -> Replay[S]:
    """Rebuild a projection as of a position or time, reading only (nothing is saved).

    Starts from the newest cached state of this projection version at or before the target
    (a snapshot, or the runner's checkpoint when `use_checkpoint`), else from zero.
    """
    target = resolve_until(store, until)
    starts: list[tuple[int, str, dict[str, Any]]] = []
    if use_checkpoint:
        saved = store.load_checkpoint(projection.name)
        if saved and saved.code_version == projection.version and saved.position <= target:
            starts.append((saved.position, "checkpoint", saved.state))
    if use_snapshots:
        snapshot = store.latest_snapshot(projection.name, projection.version, at_most=target)
        if snapshot is not None:
            starts.append((snapshot.position, "snapshot", snapshot.state))
    state, start, started_from = projection.initial(), 0, "zero"
    if starts:
        start, kind, data = max(starts, key=lambda s: s[0])
        state, started_from = projection.load(data), f"{kind}@{start}"
    skipped: list[SkippedEvent] | None = [] if skip_undecodable else None
    state, last = _fold_stored(
        projection, state, store.read_all(after=start, until=target), codec, skipped
    )
    return Replay(
        state=state,
        position=last if last is not None else start,
        started_from=started_from,
        skipped=skipped or [],
    )
