"""Golden corpus: events as written by earlier schemas must stay readable forever.

tests/data/golden/events-v<N>.jsonl hold events exactly as stored when schema generation N was
current; they are never regenerated. When an event type gets a new schema version (or a new
type appears), add a new corpus file with it: `test_every_current_schema_has_golden_events`
insists.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pytest

from agents.memory import MemoryProjection
from events.catalog import EVENT_TYPES, ProfileRecorded
from events.codec import canonical_json, decode, encode
from events.envelope import NewEvent, StoredEvent
from events.projection import Projection, fold
from store.projections.library import LibraryProjection
from store.sql import SqlEventStore
from tests.support.golden import GOLDEN, corpus


def all_golden() -> list[StoredEvent]:
    return [e for path in sorted(GOLDEN.glob("events-v*.jsonl")) for e in corpus(path.name)]


def test_every_golden_event_decodes() -> None:
    decoded = [decode(stored) for stored in all_golden()]
    assert len(decoded) >= len(EVENT_TYPES)
    for stored, envelope in zip(all_golden(), decoded, strict=True):
        assert type(envelope.event).type_name() == stored.type
        if stored.schema_version == type(envelope.event).schema_version:
            assert encode(envelope.event).data == stored.data


def test_every_current_schema_has_golden_events() -> None:
    present = {(e.type, e.schema_version) for e in all_golden()}
    missing = {(name, cls.schema_version) for name, cls in EVENT_TYPES.items()} - present
    assert not missing, f"add golden events for {sorted(missing)}"


def test_folding_the_v1_corpus_gives_the_committed_library() -> None:
    projection = LibraryProjection()
    state = fold(projection, map(decode, corpus("events-v1.jsonl")), projection.initial())
    expected = json.loads((GOLDEN / "library-v1.json").read_text(encoding="utf-8"))
    assert canonical_json(projection.dump(state)) == canonical_json(expected)


def test_golden_events_survive_a_round_trip_through_each_database(
    db_url: Callable[[], str], open_stores: Callable[[str], SqlEventStore]
) -> None:
    store = open_stores(db_url())
    originals = all_golden()
    for stored in originals:
        new = NewEvent(
            stored.type,
            stored.schema_version,
            stored.data,
            stored.metadata,
            stored.idempotency_key,
            stored.event_id,
        )
        store.append(stored.stream_id, [new])
    back = list(store.read_all())
    for original, again in zip(originals, back, strict=True):
        assert (again.event_id, again.stream_id, again.stream_version) == (
            original.event_id,
            original.stream_id,
            original.stream_version,
        )
        assert (again.type, again.data, again.metadata) == (
            original.type,
            original.data,
            original.metadata,
        )
        assert decode(again).event == decode(original).event


def _within(old: object, new: object, where: str = "") -> None:
    """Every value of `old` is in `new` unchanged (a projection may gain fields, never lose
    or change what it knew)."""
    if isinstance(old, dict):
        assert isinstance(new, dict), where
        for key, value in old.items():
            assert key in new, f"{where}.{key} is gone"
            _within(value, new[key], f"{where}.{key}")
    else:
        assert old == new, f"{where}: {old!r} became {new!r}"


def test_a_log_written_before_the_layout_change_replays_to_the_same_projections() -> None:
    """log-d3ce469.jsonl is a real log (`accelopt optimize` on two suite tasks against the
    scripted LLM) written by the code of commit d3ce469, before the packages moved; its
    projections, folded by that code, are in projections-d3ce469.json."""
    log = corpus("log-d3ce469.jsonl")
    expected = json.loads((GOLDEN / "projections-d3ce469.json").read_text(encoding="utf-8"))
    # each its own state type: a Projection[S] for one S or another
    projections: tuple[Projection[Any], ...] = (LibraryProjection(), MemoryProjection())
    for projection in projections:
        state = fold(projection, map(decode, log), projection.initial())
        now = json.loads(canonical_json(projection.dump(state)))
        _within(expected[projection.name], now, projection.name)


def test_a_v4_profile_reads_with_no_workloads_and_a_v5_one_keeps_each_workload() -> None:
    """ProfileRecorded v5 carries each workload's outcome; a v4 profile (events-v8.jsonl) ran
    one shape set, so it reads back with none, its other fields as stored."""
    v4 = next(e for e in corpus("events-v8.jsonl") if e.type == "ProfileRecorded")
    assert v4.schema_version == 4
    assert "workloads" not in v4.data
    old = decode(v4).event
    assert isinstance(old, ProfileRecorded)
    assert old.workloads == []
    assert old.latency_ms == v4.data["latency_ms"]
    assert old.autotuned == v4.data["autotuned"]
    v5 = next(e for e in corpus("events-v9.jsonl") if e.type == "ProfileRecorded")
    new = decode(v5).event
    assert isinstance(new, ProfileRecorded)
    assert v5.schema_version == 5
    assert [(w.name, w.latency_kind, w.correct) for w in new.workloads] == [
        ("w0", "measured", True),
        ("w1", "measured", True),
    ]
    latencies = [w.latency_ms for w in new.workloads if w.latency_ms is not None]
    # the profile's latency is the geometric mean of its workloads' (as recorded)
    assert new.latency_ms == pytest.approx(math.prod(latencies) ** (1 / len(latencies)), rel=1e-3)
