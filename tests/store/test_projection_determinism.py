"""Replay determinism (property-based): for random event sequences, folding all at once,
folding in chunks with restarts in between, and snapshot + tail give the same state."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from events.base import Event
from events.codec import canonical_json, decode, encode
from events.projection import fold
from store.base import EventStore, Snapshot
from store.memory import MemoryEventStore
from store.projections.library import LibraryProjection
from store.projections.runner import ProjectionRunner, replay
from store.sql import SqlEventStore
from tests.support import factories

tasks = st.sampled_from(["add", "rmsnorm", "swiglu"])
hashes = st.sampled_from(["h1", "h2"])
candidates = st.sampled_from(["c1", "c2", "c3"])
latencies = st.none() | st.floats(min_value=0.001, max_value=100.0)
platforms = st.sampled_from([("nkisim", "trn1"), ("nkisim", "trn2"), ("neuron", "trn1")])


@st.composite
def profiles(draw: st.DrawFn) -> Event:
    purpose = draw(st.sampled_from(["baseline", "candidate", "reverify"]))
    backend, target = draw(platforms)
    return factories.profile(
        draw(tasks),
        draw(hashes),
        purpose=purpose,
        latency_ms=draw(latencies),
        candidate_id=draw(candidates) if purpose != "baseline" else None,
        backend=backend,
        target=target,
        job_id=str(draw(st.uuids())),
    )


library_events = st.one_of(
    st.builds(factories.source_changed, tasks, hashes),
    # Without NUL or lone surrogates: every store refuses them (tested in the store contract;
    # the watcher writes a file name's undecodable bytes as `\xff`).
    st.builds(
        factories.invalid,
        tasks,
        hashes,
        st.text(
            st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]),
            max_size=20,
        ),
    ),
    st.builds(factories.removed, tasks),
    profiles(),
    profiles(),
    profiles(),
    st.builds(
        factories.promoted,
        tasks,
        hashes,
        candidates,
        st.floats(min_value=0.001, max_value=10),
        st.floats(min_value=0.001, max_value=10),
    ),
    st.builds(factories.demoted, tasks, candidates),
    st.builds(factories.llm_call, tasks),
)

scenarios = st.tuples(
    st.lists(library_events, min_size=1, max_size=60),
    st.lists(st.integers(min_value=0, max_value=60), max_size=4),  # restart points
    st.integers(min_value=1, max_value=7),  # commit every
    st.integers(min_value=0, max_value=60),  # snapshot position
)


def check(store: EventStore, scenario: tuple[list[Event], list[int], int, int]) -> None:
    events, restarts, commit_every, snapshot_at = scenario
    for i, event in enumerate(events):
        store.append(f"task:{i % 3}", [encode(event)])
    projection = LibraryProjection()

    # 1. everything at once, as a pure fold
    envelopes = [decode(s) for s in store.read_all()]
    at_once = projection.dump(fold(projection, envelopes, projection.initial()))
    assert canonical_json(at_once) == canonical_json(
        projection.dump(fold(projection, envelopes, projection.initial()))
    ), "folding twice differs"

    # 2. in chunks, each by a fresh runner that resumes from the persisted checkpoint
    for cut in [*sorted(restarts), None]:
        ProjectionRunner(store, LibraryProjection(), commit_every=commit_every).catch_up(until=cut)
    resumed = ProjectionRunner(store, LibraryProjection())
    assert resumed.position == len(events)
    assert canonical_json(projection.dump(resumed.state)) == canonical_json(at_once)

    # 3. a snapshot part-way, then the tail
    snapshot_at = min(snapshot_at, len(events))
    partial = replay(store, projection, until=snapshot_at, use_snapshots=False)
    store.save_snapshot(
        Snapshot(projection.name, projection.version, snapshot_at, projection.dump(partial.state))
    )
    tail = replay(store, projection)
    assert tail.started_from == f"snapshot@{snapshot_at}"
    assert canonical_json(projection.dump(tail.state)) == canonical_json(at_once)


@settings(max_examples=200, deadline=None)
@given(scenario=scenarios)
def test_determinism_in_memory(scenario: tuple[list[Event], list[int], int, int]) -> None:
    check(MemoryEventStore(), scenario)


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(scenario=scenarios)
def test_determinism_on_each_database(
    db_url: Callable[[], str], scenario: tuple[list[Event], list[int], int, int]
) -> None:
    store = SqlEventStore.open(db_url())  # a fresh database for every example
    try:
        check(store, scenario)
    finally:
        store.close()


def test_a_new_projection_version_discards_the_persisted_state() -> None:
    store = MemoryEventStore()
    store.append("t", [encode(factories.source_changed("a", "h1"))])
    ProjectionRunner(store, LibraryProjection()).catch_up()

    class Changed(LibraryProjection):
        version = "2"

    runner = ProjectionRunner(store, Changed())
    assert (runner.position, runner.state.tasks) == (0, {})  # rebuilt, not reused
    runner.catch_up()
    assert runner.state.tasks["a"].state == "stale"
    saved = store.load_checkpoint("library")
    assert saved is not None
    assert (saved.code_version, saved.position) == ("2", 1)
