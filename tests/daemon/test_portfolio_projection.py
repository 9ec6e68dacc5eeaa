"""The portfolio view as a projection: what it makes of revisions, searches and profiles, and
that it folds the same whether in one go, resumed from checkpoints, or as the daemon did by
hand before."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from daemon.coordinator.portfolio import PortfolioProjection, PortfolioView, TaskView, choose
from daemon.projections import make_projection
from daemon.settings import Settings
from events.base import Event
from events.catalog import (
    KernelRemoved,
    KernelSourceChanged,
    ProfileRecorded,
    SearchFinished,
    SearchStarted,
    TaskInvalid,
)
from events.codec import canonical_json
from events.envelope import Envelope
from tests.support import factories
from tests.support.factories import finished, started

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def envelopes(*events: Event) -> list[Envelope[Any]]:
    return [
        Envelope(position, "s", position, T0 + timedelta(minutes=position), {}, event)
        for position, event in enumerate(events, start=1)
    ]


def fold(*events: Event) -> PortfolioView:
    projection = PortfolioProjection()
    state = projection.initial()
    for envelope in envelopes(*events):
        state = projection.apply(state, envelope)
    return state


LIFE = [
    factories.source_changed("rms", "h1"),
    factories.profile("rms", "h1", latency_ms=2.0, pct_of_peak=20.0),
    started("rms", "h1", "s1"),
    factories.profile("rms", "h1", purpose="candidate", candidate_id="c1", pct_of_peak=40.0),
    finished("rms", "s1"),
    factories.source_changed("add", "a1"),
    started("add", "a1", "s2", agents=False),
    finished("add", "s2", reason="completed", best_ms=None),
    factories.source_changed("gone", "g1"),
    factories.removed("gone"),
    factories.invalid("bad", "b1"),
    factories.llm_call("rms"),
]


def test_revisions_searches_and_profiles_make_the_view() -> None:
    view = fold(*LIFE)
    rms = view.tasks["rms"]
    assert (rms.revision, rms.searches, rms.running_search) == ("h1", 1, None)
    assert (rms.last_reason, rms.last_finished_at) == ("plateau", T0 + timedelta(minutes=5))
    assert (rms.baseline_ms, rms.pct_of_peak, rms.last_speedup) == (2.0, 40.0, 4.0)
    assert view.tasks["add"].last_with_agents is False
    assert view.tasks["gone"].removed
    assert view.tasks["bad"].invalid
    now = T0 + timedelta(days=1)
    options: dict[str, Any] = {"running": set(), "slots": 5, "now": now, "rest_s": 60.0}
    assert choose(view, agents=True, weights={}, **options) == ["add", "rms"]


def test_a_new_revision_starts_afresh_and_work_on_the_old_one_is_ignored() -> None:
    view = fold(
        *LIFE,
        started("rms", "h1", "s3"),
        factories.source_changed("rms", "h2"),
        finished("rms", "s3"),
        factories.profile("rms", "h1", latency_ms=1.0, pct_of_peak=90.0),
        started("rms", "h1", "s4"),
    )
    assert view.tasks["rms"] == TaskView("rms", revision="h2", task_dir="/kernels/rms")
    view = fold(*LIFE, factories.invalid("rms", "h2"))
    assert view.tasks["rms"] == TaskView(
        "rms", revision="h2", task_dir="/kernels/rms", invalid=True
    )


def test_removal_and_return_of_a_folder() -> None:
    view = fold(*LIFE, factories.removed("rms"))
    assert view.tasks["rms"].removed
    assert view.tasks["rms"].searches == 1
    back = fold(*LIFE, factories.removed("rms"), factories.source_changed("rms", "h1"))
    assert not back.tasks["rms"].removed
    assert back.tasks["rms"].searches == 1  # the same revision: its searches count


def test_another_folder_under_the_same_name_changes_nothing() -> None:
    """A folder claiming a held name made the owner's revision look replaced: its search
    was left unfinished and a search of the other folder's revision started."""
    usurper = factories.source_changed("rms", "h9").model_copy(
        update={"task_dir": "/kernels/usurper"}
    )
    view = fold(*LIFE, started("rms", "h1", "s3"), usurper)
    assert view.tasks["rms"].revision == "h1"
    assert view.tasks["rms"].running_search == "s3"
    assert view.tasks["rms"].task_dir == "/kernels/rms"


def test_dump_and_load_round_trip_and_an_incremental_fold_equals_one_from_scratch() -> None:
    projection = PortfolioProjection()
    scratch = fold(*LIFE)
    incremental = projection.initial()
    for envelope in envelopes(*LIFE):
        saved = json.loads(canonical_json(projection.dump(incremental)))  # as a checkpoint
        incremental = projection.apply(projection.load(saved), envelope)
    assert projection.load(projection.dump(scratch)) == scratch
    assert incremental == scratch


def test_its_state_grows_with_the_tasks_never_with_the_searches() -> None:
    """Weeks of searches of two tasks: the saved state after 2,000 is as large as after 20 but
    for the digits of its counts and times (the projection once kept every search's id)."""
    projection = PortfolioProjection()
    state, position, sizes = projection.initial(), 0, []
    events: list[Event] = [factories.source_changed(t, "h1") for t in ("add", "rms")]
    for n in range(2000):
        task = ("add", "rms")[n % 2]
        events += [
            started(task, "h1", f"search-{n:05d}", agents=n % 3 != 0),
            finished(task, f"search-{n:05d}"),
        ]
        if n + 1 in (20, 2000):
            for envelope in envelopes(*events)[position:]:
                state = projection.apply(state, envelope)
            position = len(events)
            sizes.append(len(canonical_json(projection.dump(state))))
    assert sizes[1] - sizes[0] < 16
    assert state.tasks["add"].searches == 1000


def test_the_cli_and_the_daemon_know_it_by_name() -> None:
    projection = make_projection("portfolio", Settings())
    assert (projection.name, type(projection)) == ("portfolio", PortfolioProjection)


# --- the fold it replaces, as it was, for a property test --------------------------------------


def legacy_apply(
    view: PortfolioView, agents: dict[str, bool], event: Event, recorded_at: datetime
) -> None:
    """daemon/coordinator/portfolio.py:PortfolioView.apply before the projection, with its
    map of every search started (`agents`: search id → whether it ran with agents)."""
    name = getattr(event, "task", None)
    if name is None:
        return
    task = view.tasks.setdefault(name, TaskView(name))
    if isinstance(event, KernelSourceChanged | TaskInvalid):
        if task.revision != event.content_hash:
            view.tasks[name] = task = TaskView(name, revision=event.content_hash)
        task.task_dir = event.task_dir  # new with folder claims; one folder per task here
        task.removed = False
        task.invalid = isinstance(event, TaskInvalid)
    elif isinstance(event, KernelRemoved):
        task.removed = True
    elif isinstance(event, SearchStarted) and event.task_source_hash == task.revision:
        task.searches += 1
        task.running_search = event.search_id
        agents[event.search_id] = bool(event.models)
    elif isinstance(event, SearchFinished) and event.search_id == task.running_search:
        task.running_search = None
        task.last_reason = event.reason
        task.last_finished_at = recorded_at
        task.last_with_agents = agents.get(event.search_id, True)
        if task.baseline_ms and event.best_latency_ms:
            task.last_speedup = task.baseline_ms / event.best_latency_ms
    elif isinstance(event, ProfileRecorded) and event.task_source_hash == task.revision:
        if event.purpose == "baseline" and event.correct and event.latency_ms:
            task.baseline_ms = event.latency_ms
        if event.correct and event.pct_of_peak is not None:
            task.pct_of_peak = max(task.pct_of_peak or 0.0, event.pct_of_peak)


LEGACY_TYPES = frozenset(
    {
        "KernelSourceChanged",
        "TaskInvalid",
        "KernelRemoved",
        "SearchStarted",
        "SearchFinished",
        "ProfileRecorded",
    }
)
"""The daemon's PORTFOLIO_TYPES, less promotions and demotions: they changed nothing but
could create an empty view of a task no revision had named."""

tasks = st.sampled_from(["add", "rms"])
hashes = st.sampled_from(["h1", "h2"])
searches = st.sampled_from(["s1", "s2", "s3"])
portfolio_events = st.one_of(
    st.builds(factories.source_changed, tasks, hashes),
    st.builds(factories.invalid, tasks, hashes),
    st.builds(factories.removed, tasks),
    st.builds(started, tasks, hashes, searches, agents=st.booleans()),
    st.builds(
        finished,
        tasks,
        searches,
        st.sampled_from(["completed", "plateau", "budget"]),
        st.none() | st.floats(min_value=0.1, max_value=5),
    ),
    st.builds(
        factories.profile,
        tasks,
        hashes,
        purpose=st.sampled_from(["baseline", "candidate"]),
        latency_ms=st.none() | st.floats(min_value=0.1, max_value=5),
        pct_of_peak=st.none() | st.floats(min_value=0, max_value=100),
    ),
    st.builds(factories.promoted, tasks, hashes, st.just("c1"), st.just(1.0), st.just(2.0)),
    st.builds(factories.llm_call, tasks),
)


@settings(max_examples=300, deadline=None)
@given(events=st.lists(portfolio_events, max_size=40))
def test_it_folds_like_the_daemon_did_by_hand(events: list[Event]) -> None:
    legacy, agents = PortfolioView(), dict[str, bool]()
    for envelope in envelopes(*events):
        if envelope.event.type_name() in LEGACY_TYPES:
            legacy_apply(legacy, agents, envelope.event, envelope.recorded_at)
    folded = fold(*events)
    for view in (*folded.tasks.values(), *legacy.tasks.values()):
        view.running_with_agents = True  # the map's stand-in, which the legacy fold lacks
    assert folded == legacy
