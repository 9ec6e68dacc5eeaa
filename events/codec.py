"""Encoding typed events to stored payloads and back, and the canonical JSON form.

Canonical JSON (sorted keys, no spaces, UTF-8, no NaN) is the one text form of a payload:
stored in the log, hashed for idempotency and compared in determinism tests.
"""

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
from pydantic import ValidationError

from events.base import Event
from events.catalog import EVENT_TYPES
from events.envelope import Envelope, NewEvent, StoredEvent
from events.errors import EventDecodeError, SchemaVersionTooNew, UnknownEventType
from events.upcasting import SHIPPED_UPCASTERS, Upcasters

__all__ = ["Codec", "canonical_json", "decode", "encode", "storage_json"]


def canonical_json(value: Any) -> str:
    """The canonical text of a JSON value; ValueError on NaN/inf or non-JSON types."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def _any_leaf(value: Any, bad: Callable[[Any], bool]) -> bool:
    if isinstance(value, dict):
        return any(bad(k) or _any_leaf(v, bad) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_any_leaf(v, bad) for v in value)
    return bad(value)


def _non_finite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def _has_nul(value: Any) -> bool:
    return isinstance(value, str) and "\x00" in value


def storage_json(value: Any) -> str:
    """The text a payload is stored as: sorted keys, compact, UTF-8.

    Ten times faster than `canonical_json` on the append path. Raises ValueError for what
    some database cannot keep, so that every backend accepts exactly the same events: NaN and
    infinities (orjson would silently write null) and NUL characters (PostgreSQL's jsonb
    refuses them). Both are rare, so they are looked for only when the text hints at them.
    """
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    if b"null" in text and _any_leaf(value, _non_finite):
        raise ValueError("NaN and infinities have no JSON form; record None instead")
    if b"\\u0000" in text and _any_leaf(value, _has_nul):
        raise ValueError("NUL characters cannot be stored; replace them (e.g. by U+FFFD)")
    return text.decode("utf-8")


def _validation_reason(error: ValidationError) -> str:
    parts = []
    for item in error.errors()[:5]:
        where = ".".join(str(p) for p in item["loc"]) or "payload"
        parts.append(f"{where}: {item['msg']}")
    more = error.error_count() - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


@dataclass(frozen=True)
class Codec:
    """Turns typed events into `NewEvent`s and stored events into typed `Envelope`s."""

    types: Mapping[str, type[Event]] = field(default_factory=lambda: EVENT_TYPES)
    upcasters: Upcasters = SHIPPED_UPCASTERS

    def encode(
        self,
        event: Event,
        *,
        metadata: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
        event_id: str | None = None,
    ) -> NewEvent:
        cls = type(event)
        if self.types.get(cls.type_name()) is not cls:
            raise TypeError(f"{cls.__name__} is not in this codec's vocabulary")
        return NewEvent(
            type=cls.type_name(),
            schema_version=cls.schema_version,
            data=event.model_dump(mode="json"),
            metadata=metadata or {},
            idempotency_key=idempotency_key,
            event_id=event_id,
        )

    def decode_payload(
        self, type_name: str, schema_version: int, data: Any, *, position: int | None = None
    ) -> Event:
        """Upcast and validate one payload; every failure is an `EventDecodeError`."""
        cls = self.types.get(type_name)
        if cls is None:
            raise UnknownEventType(position, type_name)
        if schema_version > cls.schema_version:
            raise SchemaVersionTooNew(position, type_name, schema_version, cls.schema_version)
        if not isinstance(data, dict):
            raise EventDecodeError(
                position, type_name, f"payload is {type(data).__name__}, not an object"
            )
        if schema_version < cls.schema_version:
            try:
                data = self.upcasters.upcast(type_name, schema_version, data, cls.schema_version)
            except KeyError as e:
                raise EventDecodeError(position, type_name, str(e.args[0])) from e
            except Exception as e:  # an upcaster meeting a payload it cannot read
                raise EventDecodeError(
                    position, type_name, f"upcasting from v{schema_version} failed: {e!r}"
                ) from e
        try:  # the validator itself: replays decode millions of events
            event: Event = cls.__pydantic_validator__.validate_python(data)
        except ValidationError as e:
            raise EventDecodeError(position, type_name, _validation_reason(e)) from e
        return event

    def decode(self, stored: StoredEvent) -> Envelope[Event]:
        event = self.decode_payload(
            stored.type, stored.schema_version, stored.data, position=stored.position
        )
        return Envelope(
            stored.position,
            stored.stream_id,
            stored.stream_version,
            stored.recorded_at,
            stored.metadata,
            event,
        )


DEFAULT_CODEC = Codec()
encode = DEFAULT_CODEC.encode
decode = DEFAULT_CODEC.decode
