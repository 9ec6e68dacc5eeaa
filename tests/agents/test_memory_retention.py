"""The memory's retention: which retired lessons and changes it keeps, that pruning never
changes what a planner is shown (nor the count of retired lessons), that a fold resumed from
saved states equals one from scratch, and that the state stays bounded however many searches
teach it, where the unpruned one grows with them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.memory import MemoryProjection, MemoryState, Retention
from events.base import Event
from events.codec import canonical_json
from events.envelope import Envelope
from events.projection import fold
from tests.support.factories import lesson

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def envelopes(events: list[Event]) -> list[Envelope[Any]]:
    return [
        Envelope(position, "s", position, T0 + timedelta(seconds=position), {}, event)
        for position, event in enumerate(events, start=1)
    ]


def folded(projection: MemoryProjection, events: list[Event]) -> MemoryState:
    return fold(projection, envelopes(events), projection.initial())


def shown(projection: MemoryProjection, state: MemoryState) -> dict[str, Any]:
    return projection.present(state, lambda blob: f"text of {blob}")


def test_it_keeps_the_newest_retired_per_task_and_target_and_the_newest_changes() -> None:
    projection = MemoryProjection(capacity=1, retention=Retention(retired_per_task=2, changes=4))
    events: list[Event] = [
        lesson("a", "mm", 1.5),  # 1
        lesson("b", "mm", 3.0),  # 2: a retires
        lesson("c", "mm", 4.0),  # 3: b retires
        lesson("d", "mm", 5.0),  # 4: c retires; a, the oldest of three retired, is dropped
        lesson("e", "mm", 6.0, target="trn2"),  # 5: another target, its own capacity
        lesson("f", "act", 1.2),  # 6: another task
    ]
    state = folded(projection, events)
    assert {i: item.status for i, item in state.items.items()} == {
        "b": "retired",
        "c": "retired",
        "d": "active",
        "e": "active",
        "f": "active",
    }
    assert state.dropped_items == 1
    # 9 changes (6 added, 3 retired): the newest 4 are kept
    assert [(c["position"], c["change"], c["item_id"]) for c in state.log] == [
        (4, "added", "d"),
        (4, "retired", "c"),
        (5, "added", "e"),
        (6, "added", "f"),
    ]
    assert state.dropped_changes == 5
    assert shown(projection, state)["retired"] == 3  # the dropped one still counts
    assert projection.load(json.loads(canonical_json(projection.dump(state)))) == state


def test_its_version_names_the_retention_so_another_one_never_reads_its_checkpoint() -> None:
    versions = {
        MemoryProjection().version,
        MemoryProjection(retention=Retention()).version,
        MemoryProjection(retention=Retention(retired_per_task=3)).version,
        MemoryProjection(retention=Retention(changes=3)).version,
        MemoryProjection(capacity=8, retention=Retention()).version,
    }
    assert len(versions) == 5
    with pytest.raises(ValueError, match="0 or more"):
        Retention(changes=-1)


tasks = st.sampled_from(["mm", "act"])
targets = st.sampled_from(["trn1", "trn2"])
speedups = st.floats(min_value=0.2, max_value=5.0).filter(lambda s: abs(s - 1.0) > 1e-6)
titles = st.sampled_from(["Hoist loads", "No optimization found"])


@st.composite
def lessons(draw: st.DrawFn) -> list[Event]:
    """Lessons of distinct ids: the log holds one per id (its idempotency key, `lesson|<id>`),
    which is what lets the retention forget a retired id for good."""
    drawn = draw(st.lists(st.tuples(tasks, speedups, targets, titles), max_size=60))
    return [
        lesson(f"x{i}", task, speedup, target=target, title=title)
        for i, (task, speedup, target, title) in enumerate(drawn)
    ]


@settings(max_examples=200, deadline=None)
@given(
    events=lessons(),
    capacity=st.integers(min_value=1, max_value=3),
    retired=st.integers(min_value=0, max_value=3),
    changes=st.integers(min_value=0, max_value=6),
)
def test_pruning_changes_nothing_the_planner_sees_and_resumes_exactly(
    events: list[Event], capacity: int, retired: int, changes: int
) -> None:
    everything = MemoryProjection(capacity=capacity)
    pruned = MemoryProjection(capacity=capacity, retention=Retention(retired, changes))
    full, kept = folded(everything, events), folded(pruned, events)

    assert shown(pruned, kept) == shown(everything, full)  # active items, retired count
    for item_id, item in kept.items.items():
        assert full.items[item_id] == item
    assert kept.log == full.log[len(full.log) - len(kept.log) :]
    assert len(kept.log) == min(changes, len(full.log))
    assert kept.dropped_changes == len(full.log) - len(kept.log)
    per_group: dict[tuple[str, str], int] = {}
    for item in kept.items.values():
        if item.status == "retired":
            key = (item.task, item.target)
            per_group[key] = per_group.get(key, 0) + 1
    assert all(count <= retired for count in per_group.values())

    # the daemon's runner: the state saved and read back between any two events
    resumed = pruned.initial()
    for envelope in envelopes(events):
        resumed = pruned.apply(
            pruned.load(json.loads(canonical_json(pruned.dump(resumed)))), envelope
        )
    assert resumed == kept


def searches(first: int, count: int) -> list[Event]:
    """`count` searches of three tasks on two targets, four lessons each (one found nothing):
    what weeks of a daemon's searches teach the memory."""
    events: list[Event] = []
    for n in range(first, first + count):
        task, target = f"task{n % 3}", ("trn1", "trn2")[n % 2]
        for k in range(4):
            title = "No optimization found" if k == 3 else f"Lesson {n}.{k}"
            speedup = 1.05 + ((n * 7 + k * 3) % 40) / 10
            events.append(
                lesson(f"x{n}-{k}", task, speedup, target=target, title=title, search=f"s{n}")
            )
    return events


def state_bytes(projection: MemoryProjection, state: MemoryState) -> int:
    """The size of the state as the runner saves it (checkpoint and snapshots)."""
    return len(canonical_json(projection.dump(state)))


def test_the_state_stays_bounded_over_many_searches_where_the_unpruned_one_grows() -> None:
    retention = Retention(retired_per_task=16, changes=200)
    sizes: dict[str, list[int]] = {"pruned": [], "everything": []}
    projections = {
        "pruned": MemoryProjection(retention=retention),
        "everything": MemoryProjection(),
    }
    states = {name: p.initial() for name, p in projections.items()}
    position = 0
    for block in range(4):  # 4 blocks of 300 searches, 4,800 lessons
        for event in searches(block * 300, 300):
            position += 1
            envelope = Envelope(position, "s", position, T0, {}, event)
            for name, projection in projections.items():
                states[name] = projection.apply(states[name], envelope)
        for name, projection in projections.items():
            sizes[name].append(state_bytes(projection, states[name]))

    pruned, everything = sizes["pruned"], sizes["everything"]
    # 6 (task, target) pairs: at most 16 active and 16 retired each, and 200 changes
    items = len(states["pruned"].items)
    assert items <= 6 * (16 + retention.retired_per_task)
    assert len(states["pruned"].log) == retention.changes
    assert max(pruned) - min(pruned) < 0.02 * min(pruned)  # flat after the first block
    assert everything[-1] > 3.5 * everything[0]  # linear in the searches
    assert pruned[-1] < everything[0] < everything[-1]
