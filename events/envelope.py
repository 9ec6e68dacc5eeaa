"""The shapes events take around the store: to append, as stored, and decoded."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Generic, Literal, NamedTuple, TypeVar

from events.base import Event

__all__ = ["Envelope", "ExpectedVersion", "NewEvent", "StoredEvent"]

JSONObject = dict[str, Any]
E_co = TypeVar("E_co", bound=Event, covariant=True)


@dataclass(frozen=True, slots=True)
class ExpectedVersion:
    """What the appender believes about the stream (EventStoreDB's four cases).

    `exact(n)` means the stream's last event has version n (versions start at 1).
    """

    kind: Literal["any", "no_stream", "stream_exists", "exact"]
    version: int | None = None

    @staticmethod
    def exact(version: int) -> ExpectedVersion:
        if version < 1:
            raise ValueError("an exact expected version is ≥ 1; use ExpectedVersion.NO_STREAM")
        return ExpectedVersion("exact", version)

    def describe(self) -> str:
        return f"version {self.version}" if self.kind == "exact" else self.kind.replace("_", " ")

    def admits(self, current: int) -> bool:
        """Whether a stream whose last version is `current` (0: no stream) satisfies this."""
        if self.kind == "any":
            return True
        if self.kind == "no_stream":
            return current == 0
        if self.kind == "stream_exists":
            return current > 0
        return current == self.version

    ANY: ClassVar[ExpectedVersion]
    NO_STREAM: ClassVar[ExpectedVersion]
    STREAM_EXISTS: ClassVar[ExpectedVersion]


ExpectedVersion.ANY = ExpectedVersion("any")
ExpectedVersion.NO_STREAM = ExpectedVersion("no_stream")
ExpectedVersion.STREAM_EXISTS = ExpectedVersion("stream_exists")


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event ready to append: a type, its schema version and a JSON payload."""

    type: str
    schema_version: int
    data: JSONObject
    metadata: JSONObject = field(default_factory=dict)
    idempotency_key: str | None = None
    event_id: str | None = None
    """Left None, the store assigns a fresh UUID."""


class StoredEvent(NamedTuple):
    """An event as the log holds it: raw payload, not yet upcast or decoded.

    A NamedTuple because replays build one per event: it is the cheapest immutable record.
    """

    position: int
    event_id: str
    stream_id: str
    stream_version: int
    type: str
    schema_version: int
    data: JSONObject
    metadata: JSONObject
    idempotency_key: str | None
    recorded_at: datetime


class Envelope(NamedTuple, Generic[E_co]):
    """A decoded event with the facts of its recording: what projections fold."""

    position: int
    stream_id: str
    stream_version: int
    recorded_at: datetime
    metadata: JSONObject
    event: E_co
