"""What the library projection makes of the events of a task's life."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from events.base import Event
from events.envelope import Envelope
from store.projections.library import LibraryProjection, LibraryState
from tests.support import factories

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def fold(*events: Event) -> LibraryState:
    projection = LibraryProjection()
    state = projection.initial()
    for position, event in enumerate(events, start=1):
        envelope: Envelope[Any] = Envelope(
            position, "s", position, T0 + timedelta(seconds=position), {}, event
        )
        state = projection.apply(state, envelope)
    return state


def test_a_new_task_is_stale_until_its_baseline() -> None:
    state = fold(factories.source_changed("rms", "h1"))
    task = state.tasks["rms"]
    assert (task.state, task.revision, task.source_hash, task.platforms) == ("stale", 1, "h1", {})
    state = fold(
        factories.source_changed("rms", "h1"), factories.profile("rms", "h1", latency_ms=2.0)
    )
    task = state.tasks["rms"]
    platform = task.platforms["nkisim:trn1"]
    assert task.state == "optimizing"
    assert (platform.baseline_ms, platform.best_ms, platform.latency_kind) == (
        2.0,
        2.0,
        "estimated",
    )
    assert platform.best_candidate_id is None
    assert task.updated_position == 2
    assert task.updated_at == (T0 + timedelta(seconds=2)).isoformat()


def test_faster_candidates_become_best_and_slower_do_not() -> None:
    state = fold(
        factories.source_changed("rms", "h1"),
        factories.profile("rms", "h1", latency_ms=2.0),
        factories.profile("rms", "h1", purpose="candidate", candidate_id="c1", latency_ms=1.0),
        factories.profile("rms", "h1", purpose="candidate", candidate_id="c2", latency_ms=1.5),
        factories.profile("rms", "h1", purpose="candidate", candidate_id="c3", latency_ms=None),
    )
    platform = state.tasks["rms"].platforms["nkisim:trn1"]
    assert (platform.best_ms, platform.best_candidate_id) == (1.0, "c1")
    assert platform.speedup == 2.0
    assert (platform.profiles, platform.failed_profiles) == (4, 1)


def test_platforms_are_kept_apart() -> None:
    state = fold(
        factories.source_changed("rms", "h1"),
        factories.profile("rms", "h1", latency_ms=2.0),
        factories.profile("rms", "h1", latency_ms=0.7, backend="neuron", target="trn1"),
    )
    platforms = state.tasks["rms"].platforms
    assert platforms["nkisim:trn1"].latency_kind == "estimated"
    assert platforms["neuron:trn1"].latency_kind == "measured"
    assert platforms["neuron:trn1"].baseline_ms == 0.7
    assert platforms["nkisim:trn1"].baseline_ms == 2.0


def test_a_failing_baseline_and_its_error() -> None:
    state = fold(
        factories.source_changed("rms", "h1"), factories.profile("rms", "h1", latency_ms=None)
    )
    task = state.tasks["rms"]
    assert task.state == "failing"
    assert task.error == "incorrect: max relative error 0.3"


def test_an_edit_starts_a_new_revision_and_old_work_is_ignored() -> None:
    state = fold(
        factories.source_changed("rms", "h1"),
        factories.profile("rms", "h1", latency_ms=2.0),
        factories.source_changed("rms", "h2"),
        factories.profile("rms", "h1", purpose="candidate", candidate_id="late", latency_ms=0.1),
        factories.promoted("rms", "h1", "late", 0.1, 2.0),
    )
    task = state.tasks["rms"]
    assert (task.state, task.revision, task.source_hash, task.platforms) == ("stale", 2, "h2", {})


def test_invalid_folders_and_removal() -> None:
    state = fold(
        factories.source_changed("rms", "h1"), factories.invalid("rms", "h2", "line 3: oops")
    )
    task = state.tasks["rms"]
    assert (task.state, task.error, task.revision) == ("invalid", "kernel.py: line 3: oops", 2)
    state = fold(
        factories.source_changed("rms", "h1"), factories.removed("rms"), factories.removed("ghost")
    )
    assert state.tasks["rms"].state == "removed"
    assert "ghost" not in state.tasks


def test_promotion_and_demotion() -> None:
    events = [
        factories.source_changed("rms", "h1"),
        factories.profile("rms", "h1", latency_ms=2.0),
        factories.profile("rms", "h1", purpose="candidate", candidate_id="c1", latency_ms=1.0),
        factories.promoted("rms", "h1", "c1", 1.0, 2.0),
    ]
    platform = fold(*events).tasks["rms"].platforms["nkisim:trn1"]
    assert (platform.promoted_candidate_id, platform.promoted_ms) == ("c1", 1.0)
    platform = (
        fold(*events, factories.demoted("rms", "other")).tasks["rms"].platforms["nkisim:trn1"]
    )
    assert platform.promoted_candidate_id == "c1"
    platform = fold(*events, factories.demoted("rms", "c1")).tasks["rms"].platforms["nkisim:trn1"]
    assert (platform.promoted_candidate_id, platform.promoted_ms) == (None, None)
    assert (platform.best_ms, platform.best_candidate_id) == (2.0, None)


def test_events_it_does_not_read_change_nothing() -> None:
    assert fold(factories.llm_call()).tasks == {}


def test_dump_and_load_round_trip() -> None:
    projection = LibraryProjection()
    state = fold(
        factories.source_changed("a", "h1"),
        factories.profile("a", "h1", latency_ms=2.0),
        factories.invalid("b", "x"),
    )
    assert projection.dump(projection.load(projection.dump(state))) == projection.dump(state)
