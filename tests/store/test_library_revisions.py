"""The library projection's current revisions, promotions and folder hashes: the one fold of
the task lifecycle that the library folder, `accelopt export`, re-verification and the
watcher read."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from events.base import Event
from events.catalog import (
    KernelDemoted,
    KernelPromoted,
    KernelRemoved,
    KernelSourceChanged,
    TaskInvalid,
)
from events.codec import canonical_json
from events.envelope import Envelope
from store.projections.library import LibraryProjection, LibraryState, Promotion
from tests.support import factories

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def envelopes(*events: Event) -> list[Envelope[Any]]:
    return [
        Envelope(position, "s", position, T0 + timedelta(seconds=position), {}, event)
        for position, event in enumerate(events, start=1)
    ]


def fold(*events: Event) -> LibraryState:
    projection = LibraryProjection()
    state = projection.initial()
    for envelope in envelopes(*events):
        state = projection.apply(state, envelope)
    return state


def promoted(state: LibraryState) -> dict[str, str]:
    return {task: p.candidate_id for task, p in state.promoted().items()}


def on(event: KernelPromoted | KernelDemoted, backend: str) -> Any:
    return event.model_copy(update={"backend": backend})


def test_a_promotion_keeps_what_its_provenance_header_needs() -> None:
    state = fold(
        factories.source_changed("rms", "h1"),
        factories.profile("rms", "h1", latency_ms=2.0),
        factories.promoted("rms", "h1", "c1", 0.5, 2.0),
    )
    assert state.promoted() == {
        "rms": Promotion(
            task="rms",
            candidate_id="c1",
            kernel_hash="kh-c1",
            task_source_hash="h1",
            backend="nkisim",
            target="trn1",
            latency_ms=0.5,
            latency_kind="estimated",
            baseline_latency_ms=2.0,
            speedup=4.0,
            position=3,
            recorded_at=(T0 + timedelta(seconds=3)).isoformat(),
        )
    }
    revision = state.revisions["rms"]
    assert (revision.content_hash, revision.task_dir) == ("h1", "/kernels/rms")
    assert revision.source_changed() == factories.source_changed("rms", "h1")


def test_a_new_revision_drops_the_promotion_and_the_same_revision_keeps_it() -> None:
    start = [factories.source_changed("rms", "h1"), factories.promoted("rms", "h1", "c1", 1, 2)]
    assert promoted(fold(*start, factories.source_changed("rms", "h1"))) == {"rms": "c1"}
    state = fold(*start, factories.source_changed("rms", "h2"))
    assert promoted(state) == {}
    assert state.revisions["rms"].content_hash == "h2"
    # a late promotion of the old revision is moot; one of the new revision stands
    late = fold(
        *start,
        factories.source_changed("rms", "h2"),
        factories.promoted("rms", "h1", "old", 0.1, 2),
        factories.promoted("rms", "h2", "new", 1, 2),
    )
    assert promoted(late) == {"rms": "new"}


def test_removal_drops_the_revision_and_its_promotion() -> None:
    state = fold(
        factories.source_changed("rms", "h1"),
        factories.promoted("rms", "h1", "c1", 1, 2),
        factories.removed("rms"),
        factories.promoted("rms", "h1", "c2", 1, 2),
    )
    assert (promoted(state), state.revisions) == ({}, {})
    back = fold(
        factories.source_changed("rms", "h1"),
        factories.removed("rms"),
        factories.source_changed("rms", "h2"),
        factories.promoted("rms", "h2", "c3", 1, 2),
    )
    assert promoted(back) == {"rms": "c3"}


def test_only_a_demotion_of_the_promoted_candidate_drops_it() -> None:
    start = [factories.source_changed("rms", "h1"), factories.promoted("rms", "h1", "c1", 1, 2)]
    assert promoted(fold(*start, factories.demoted("rms", "other"))) == {"rms": "c1"}
    assert promoted(fold(*start, on(factories.demoted("rms", "c1"), "neuron"))) == {"rms": "c1"}
    assert promoted(fold(*start, factories.demoted("rms", "c1"))) == {}
    # a better kernel replaced c1: demoting c1 afterwards leaves c2 in place
    replaced = [*start, factories.promoted("rms", "h1", "c2", 0.5, 2)]
    assert promoted(fold(*replaced, factories.demoted("rms", "c1"))) == {"rms": "c2"}
    # a demoted kernel does not come back when its successor is demoted too
    assert promoted(fold(*replaced, factories.demoted("rms", "c2"))) == {}


def test_an_invalid_save_keeps_the_current_revision_and_its_promotion() -> None:
    """An invalid save is recorded (the task shows "invalid"), but the last revision that
    loaded stays current for the library until a loadable revision or the removal."""
    state = fold(
        factories.source_changed("rms", "h1"),
        factories.promoted("rms", "h1", "c1", 1, 2),
        factories.invalid("rms", "h2"),
        factories.promoted("rms", "h1", "c2", 0.5, 2),  # its search goes on
    )
    assert state.tasks["rms"].state == "invalid"
    assert state.revisions["rms"].content_hash == "h1"
    assert promoted(state) == {"rms": "c2"}
    assert (
        promoted(fold(factories.invalid("rms", "h2"), factories.promoted("rms", "h2", "x", 1, 2)))
        == {}
    )


def test_each_platform_keeps_its_promotion_and_the_library_takes_the_newest() -> None:
    state = fold(
        factories.source_changed("rms", "h1"),
        factories.promoted("rms", "h1", "sim", 1, 2),
        on(factories.promoted("rms", "h1", "hw", 0.8, 2), "neuron"),
    )
    assert set(state.revisions["rms"].promotions) == {"nkisim:trn1", "neuron:trn1"}
    assert promoted(state) == {"rms": "hw"}
    demoted = fold(
        factories.source_changed("rms", "h1"),
        factories.promoted("rms", "h1", "sim", 1, 2),
        on(factories.promoted("rms", "h1", "hw", 0.8, 2), "neuron"),
        on(factories.demoted("rms", "hw"), "neuron"),
    )
    assert promoted(demoted) == {"rms": "sim"}


def test_folders_keep_the_hash_last_recorded() -> None:
    state = fold(
        factories.source_changed("rms", "h1"),
        factories.source_changed("add", "a1"),
        factories.invalid("add", "a2"),
        factories.source_changed("gone", "g1"),
        factories.removed("gone"),
        factories.removed("never"),
        factories.llm_call("rms"),
    )
    assert state.folders == {
        "/kernels/rms": "h1",
        "/kernels/add": "a2",
        "/kernels/gone": None,
        "/kernels/never": None,
    }


def elsewhere(event: Any, folder: str) -> Any:
    """The same record, of another folder."""
    return event.model_copy(update={"task_dir": folder})


def test_a_name_stays_with_the_folder_that_claimed_it_first_even_in_old_logs() -> None:
    """Before the watcher refused them, a folder claiming another folder's task name took
    the task over: its revision and promotions were the library's and `accelopt export`'s."""
    state = fold(
        factories.source_changed("silu", "h1"),
        factories.promoted("silu", "h1", "c1", 1.0, 2.0),
        elsewhere(factories.source_changed("silu", "h2"), "/kernels/attacker"),
        factories.promoted("silu", "h2", "c2", 0.5, 2.0),
        elsewhere(factories.invalid("silu", "h3"), "/kernels/attacker"),
        elsewhere(factories.removed("silu"), "/kernels/attacker"),
    )
    assert state.revisions["silu"].content_hash == "h1"
    assert (state.tasks["silu"].task_dir, state.tasks["silu"].state) == ("/kernels/silu", "stale")
    assert promoted(state) == {"silu": "c1"}
    assert state.owners() == {"silu": "/kernels/silu"}
    assert state.folder_records["/kernels/attacker"].kind == "removed"  # the folder's own record
    freed = fold(
        factories.source_changed("silu", "h1"),
        factories.removed("silu"),
        elsewhere(factories.source_changed("silu", "h2"), "/kernels/attacker"),
    )
    assert freed.owners() == {"silu": "/kernels/attacker"}
    assert freed.revisions["silu"].content_hash == "h2"


STORY = [
    factories.source_changed("rms", "h1"),
    factories.profile("rms", "h1", latency_ms=2.0),
    factories.promoted("rms", "h1", "c1", 1.0, 2.0),
    on(factories.promoted("rms", "h1", "c9", 0.7, 2.0), "neuron"),
    factories.source_changed("add", "a1"),
    factories.invalid("add", "a2"),
    factories.promoted("add", "a1", "c2", 1.0, 3.0),
    factories.demoted("rms", "c1"),
    factories.source_changed("swiglu", "s1"),
    factories.removed("swiglu"),
]


def test_dump_and_load_round_trip_and_an_incremental_fold_equals_one_from_scratch() -> None:
    projection = LibraryProjection()
    scratch = projection.initial()
    for envelope in envelopes(*STORY):
        scratch = projection.apply(scratch, envelope)
    incremental = projection.initial()
    for envelope in envelopes(*STORY):
        saved = json.loads(canonical_json(projection.dump(incremental)))  # as a checkpoint
        incremental = projection.apply(projection.load(saved), envelope)
    assert projection.load(projection.dump(scratch)) == scratch
    assert incremental == scratch
    assert promoted(scratch) == {"rms": "c9", "add": "c2"}


# --- the folds it replaces, as they were, for a property test ---------------------------------


def legacy_promotions(events: list[Envelope[Any]]) -> dict[str, tuple[str, int]]:
    """daemon/coordinator/library.py:promotions before this projection (task → candidate,
    position)."""
    revision: dict[str, str] = {}
    current: dict[str, tuple[KernelPromoted, int]] = {}
    for envelope in events:
        event = envelope.event
        if isinstance(event, KernelSourceChanged):
            if revision.get(event.task) != event.content_hash:
                current.pop(event.task, None)
            revision[event.task] = event.content_hash
        elif isinstance(event, KernelPromoted):
            if revision.get(event.task) == event.task_source_hash:
                current[event.task] = (event, envelope.position)
        elif isinstance(event, KernelDemoted):
            promoted = current.get(event.task)
            if promoted is not None and promoted[0].candidate_id == event.candidate_id:
                del current[event.task]
        elif isinstance(event, KernelRemoved):
            current.pop(event.task, None)
            revision.pop(event.task, None)
    return {task: (e.candidate_id, position) for task, (e, position) in current.items()}


def legacy_known(events: list[Envelope[Any]]) -> dict[str, str | None]:
    """daemon/coordinator/watcher.py:TaskWatcher._load_known before this projection."""
    known: dict[str, str | None] = {}
    for envelope in events:
        event = envelope.event
        if isinstance(event, KernelRemoved):
            known[event.task_dir] = None
        elif isinstance(event, KernelSourceChanged | TaskInvalid):
            known[event.task_dir] = event.content_hash
    return known


tasks = st.sampled_from(["add", "rms"])
hashes = st.sampled_from(["h1", "h2", "h3"])
candidates = st.sampled_from(["c1", "c2", "c3"])
lifecycle = st.one_of(
    st.builds(factories.source_changed, tasks, hashes),
    st.builds(factories.invalid, tasks, hashes),
    st.builds(factories.removed, tasks),
    st.builds(factories.promoted, tasks, hashes, candidates, st.just(1.0), st.just(2.0)),
    st.builds(factories.promoted, tasks, hashes, candidates, st.just(1.0), st.just(2.0)),
    st.builds(factories.demoted, tasks, candidates),
    st.builds(factories.profile, tasks, hashes),
)


@settings(max_examples=300, deadline=None)
@given(events=st.lists(lifecycle, max_size=40))
def test_on_one_platform_it_agrees_with_the_folds_it_replaces(events: list[Event]) -> None:
    state = fold(*events)
    library = {task: (p.candidate_id, p.position) for task, p in state.promoted().items()}
    assert library == legacy_promotions(envelopes(*events))
    assert state.folders == legacy_known(envelopes(*events))
