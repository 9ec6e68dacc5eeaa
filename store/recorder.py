"""Writing and reading typed events: typed events in, typed events out, large texts as blobs.
Every append carries an idempotency key derived from what the event is about, so a step redone
after a crash records nothing twice; every event's metadata names the host and the code
version that wrote it."""

from __future__ import annotations

import platform
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from typing import Any, TypeVar

from events.base import Event
from events.codec import decode, encode
from store.base import AppendResult, EventStore

__all__ = ["Recorder", "code_version"]

E = TypeVar("E", bound=Event)


def code_version() -> str:
    """accelopt's installed version, or "source checkout" when it runs from a checkout that was
    never installed."""
    try:
        return version("accelopt")
    except PackageNotFoundError:
        return "source checkout"


class Recorder:
    def __init__(self, store: EventStore, *, correlation_id: str | None = None) -> None:
        self.store = store
        self.metadata: dict[str, Any] = {
            "host": platform.node(),
            "code_version": code_version(),
        }
        if correlation_id:
            self.metadata["correlation_id"] = correlation_id

    def record(self, stream_id: str, event: Event, key: str) -> bool:
        """Append `event` unless an event with this key was recorded; True if it is new."""
        return not self.append(stream_id, event, key).duplicate

    def append(self, stream_id: str, event: Event, key: str) -> AppendResult:
        """`record`, telling where the event is (or, for a key recorded before, where the
        first one was): for records that the next one must name (daemon/revisions.py)."""
        return self.store.append(
            stream_id, [encode(event, metadata=self.metadata, idempotency_key=key)]
        )

    def events(self, stream_id: str) -> list[Event]:
        return [decode(stored).event for stored in self.store.read_stream(stream_id)]

    def of_type(self, stream_id: str, kind: type[E]) -> Iterator[E]:
        for event in self.events(stream_id):
            if isinstance(event, kind):
                yield event

    def put(self, text: str) -> str:
        return self.store.put_blob(text)

    def text(self, sha256: str) -> str:
        return self.store.get_text(sha256)
