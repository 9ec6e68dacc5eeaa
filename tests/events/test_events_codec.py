"""The vocabulary and the codec: round trips, typed decode errors, upcasting, JSON forms."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from events import EVENT_TYPES, Event, EventDecodeError, SchemaVersionTooNew, UnknownEventType
from events.codec import Codec, canonical_json, decode, encode, storage_json
from events.envelope import StoredEvent
from events.upcasting import Upcasters
from tests.support import factories


def stored(type_name: str, data: Any, *, schema_version: int = 1, position: int = 7) -> StoredEvent:
    return StoredEvent(
        position=position,
        event_id="e",
        stream_id="s",
        stream_version=1,
        type=type_name,
        schema_version=schema_version,
        data=data,
        metadata={},
        idempotency_key=None,
        recorded_at=datetime(2026, 1, 1, tzinfo=UTC),
    )


def test_every_event_type_round_trips_through_json() -> None:
    samples: list[Event] = [
        factories.source_changed("rmsnorm", "h1"),
        factories.invalid("rmsnorm", "h2"),
        factories.removed("rmsnorm"),
        factories.profile("rmsnorm", "h1", counters={"hbm_read_bytes": 1e6}),
        factories.promoted("rmsnorm", "h1", "c1", 0.5, 1.0),
        factories.demoted("rmsnorm", "c1"),
        factories.llm_call(),
    ]
    for event in samples:
        new = encode(event, metadata={"host": "h"}, idempotency_key="k")
        text = storage_json(new.data)
        back = decode(stored(new.type, json.loads(text), schema_version=new.schema_version)).event
        assert back == event
        assert new.schema_version == type(event).schema_version


def test_unknown_type_names_position_and_type() -> None:
    with pytest.raises(UnknownEventType) as info:
        decode(stored("KernelTeleported", {}, position=41))
    assert info.value.position == 41
    assert "position 41" in str(info.value)
    assert "'KernelTeleported'" in str(info.value)
    assert "--skip-unknown" in str(info.value)


def test_bad_payload_names_position_type_and_field() -> None:
    data = encode(factories.removed("t")).data
    del data["task"]
    with pytest.raises(EventDecodeError) as info:
        decode(stored("KernelRemoved", data, position=3))
    message = str(info.value)
    assert "position 3" in message
    assert "'KernelRemoved'" in message
    assert "task: Field required" in message


def test_payload_that_is_not_an_object_is_a_decode_error() -> None:
    with pytest.raises(EventDecodeError, match="payload is list"):
        decode(stored("KernelRemoved", [1, 2]))


def test_a_newer_schema_version_asks_for_an_upgrade() -> None:
    data = encode(factories.removed("t")).data
    with pytest.raises(SchemaVersionTooNew, match="upgrade accelopt"):
        decode(stored("KernelRemoved", data, schema_version=2))


class Renamed(Event):
    """A test-only event at version 3: v1 had `name`, v2 renamed it `task`, v3 added `size`."""

    schema_version: ClassVar[int] = 3
    task: str
    size: int


def test_upcasters_chain_old_payloads_to_the_current_version() -> None:
    codec = Codec(
        types={"Renamed": Renamed},
        upcasters=Upcasters(
            {
                ("Renamed", 1): lambda d: {"task": d["name"]},
                ("Renamed", 2): lambda d: {**d, "size": 0},
            }
        ),
    )
    assert codec.decode(stored("Renamed", {"name": "x"}, schema_version=1)).event == Renamed(
        task="x", size=0
    )
    assert codec.decode(stored("Renamed", {"task": "y"}, schema_version=2)).event == Renamed(
        task="y", size=0
    )
    missing_step = Codec(types={"Renamed": Renamed}, upcasters=Upcasters({}))
    with pytest.raises(EventDecodeError, match="no upcaster for Renamed from schema version 1"):
        missing_step.decode(stored("Renamed", {"name": "x"}, schema_version=1))
    broken = Codec(types={"Renamed": Renamed}, upcasters=Upcasters({("Renamed", 2): lambda d: d}))
    with pytest.raises(EventDecodeError, match="size: Field required"):
        broken.decode(stored("Renamed", {"task": "x"}, schema_version=2))


def test_encode_refuses_events_outside_the_vocabulary() -> None:
    with pytest.raises(TypeError, match="not in this codec's vocabulary"):
        encode(Renamed(task="x", size=1))


def test_events_refuse_nan_and_infinity() -> None:
    with pytest.raises(ValidationError):
        factories.profile("t", "h", latency_ms=math.inf)
    with pytest.raises(ValidationError):
        factories.profile("t", "h", latency_ms=math.nan)


def test_storage_json_is_sorted_compact_and_refuses_what_a_database_cannot_keep() -> None:
    assert storage_json({"b": [1.5, None], "a": "é"}) == '{"a":"é","b":[1.5,null]}'
    assert storage_json({"a": "\\u0000"}) == '{"a":"\\\\u0000"}'
    with pytest.raises(ValueError, match="NaN"):
        storage_json({"a": None, "b": {"c": [math.nan]}})
    with pytest.raises(ValueError, match="NaN"):
        storage_json({"x": -math.inf, "y": None})
    with pytest.raises(ValueError, match="NUL"):
        storage_json({"x": ["a\x00b"]})


def test_canonical_json_is_stable_and_strict() -> None:
    assert canonical_json({"b": 1, "a": [True, None]}) == '{"a":[true,null],"b":1}'
    with pytest.raises(ValueError, match="Out of range float"):
        canonical_json({"a": math.nan})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=20,
)


@settings(max_examples=300)
@given(
    type_name=st.sampled_from([*EVENT_TYPES, "Nope"]),
    version=st.integers(min_value=-2, max_value=3),
    data=json_values,
)
def test_decoding_anything_gives_an_event_or_a_typed_error(
    type_name: str, version: int, data: Any
) -> None:
    """Fuzzed payloads: the only outcomes are a decoded event or an EventDecodeError."""
    outcome: Any
    try:
        outcome = decode(stored(type_name, data, schema_version=version)).event
    except EventDecodeError as e:
        outcome = e
    if isinstance(outcome, EventDecodeError):
        assert (outcome.type_name, outcome.position) == (type_name, 7)
    else:
        assert isinstance(outcome, EVENT_TYPES[type_name])


def test_the_package_exports_every_event_type() -> None:
    import events

    exported = {name for name in events.__all__ if name in EVENT_TYPES}
    assert exported == set(EVENT_TYPES)
