"""The report projection over a real log (tests/data/golden/log-d3ce469.jsonl: `accelopt
optimize` of two suite tasks against the scripted LLM): what it folds, and that a state saved
half-way and loaded folds on exactly like one that never stopped."""

from __future__ import annotations

import json
from collections import Counter

from daemon.views.report.html import render_report
from daemon.views.report.model import ReportProjection, ReportState
from daemon.views.report.view import CandidateRow, ReportView, build_view
from events.catalog import (
    CandidateGenerated,
    KernelPromoted,
    LLMCallCompleted,
    ProfileRecorded,
    WorkloadProfile,
)
from events.codec import decode, encode
from events.envelope import StoredEvent
from events.projection import fold
from tests.support.golden import corpus

LOG = corpus("log-d3ce469.jsonl")


def folded(events: list[StoredEvent], state: ReportState | None = None) -> ReportState:
    projection = ReportProjection()
    return fold(projection, (decode(e) for e in events), state or projection.initial())


def test_the_fold_counts_what_the_log_holds() -> None:
    state = folded(LOG)
    decoded = [decode(e).event for e in LOG]
    generated = Counter(e.task for e in decoded if isinstance(e, CandidateGenerated))
    assert {t: len([c for c in state.candidates.values() if c.task == t]) for t in generated} == (
        dict(generated)
    )
    promoted = Counter(e.task for e in decoded if isinstance(e, KernelPromoted))
    assert {t: len(r.promotions) for t, r in state.tasks.items() if r.promotions} == dict(promoted)
    answered = [e for e in decoded if isinstance(e, LLMCallCompleted) and e.error is None]
    assert len(state.spend) == len(answered)
    assert round(sum(r.cost_usd for r in state.tasks.values()), 9) == round(
        sum(e.cost_usd for e in answered if e.task), 9
    )
    assert state.head == LOG[-1].position
    for task in state.tasks.values():  # a baseline's profile names no candidate; it is found
        baselines = [
            c for c in state.candidates.values() if c.task == task.name and c.origin == "baseline"
        ]
        assert all(c.latency_ms is not None for c in baselines), task.name


def test_a_state_saved_half_way_folds_on_like_one_that_never_stopped() -> None:
    projection = ReportProjection()
    half = len(LOG) // 2
    saved = json.loads(json.dumps(projection.dump(folded(LOG[:half]))))
    resumed = folded(LOG[half:], projection.load(saved))
    assert projection.dump(resumed) == projection.dump(folded(LOG))


def test_the_view_without_texts_says_so_and_counts_fates() -> None:
    state = folded(LOG)
    view = build_view(state, lambda hashes: {})  # a log whose blobs are gone
    assert view.totals["candidates"] == len(state.candidates)
    for task in view.tasks:
        assert sum(task.fates.values()) == task.candidates
        assert task.left_out == 0
        if task.promoted_diff is not None:
            assert [line.text for line in task.promoted_diff] == [
                "(a kernel's text is not in the log)"
            ]


def rows(view: ReportView) -> list[CandidateRow]:
    """Every row of the view's search trees."""
    return [
        row
        for task in view.tasks
        for search in task.searches
        for _, shown in search.iterations
        for row in shown
    ]


def test_the_config_an_autotuned_kernel_was_profiled_with_is_shown() -> None:
    """ProfileRecorded v4 carries the autotuner's choice: the candidate keeps its latest
    profile's, and the search tree shows it under the latency."""
    profiles = [e for e in LOG if e.type == "ProfileRecorded"]
    stored = next(e for e in profiles if decode(e).event.candidate_id)  # type: ignore[attr-defined]
    event = decode(stored).event
    assert isinstance(event, ProfileRecorded)
    assert event.candidate_id is not None
    assert event.autotuned == {}  # recorded before v4: upcast to none
    chosen = {"matmul_kernel": ["BLOCK_M=128, BLOCK_N=64, num_warps=4, num_ctas=1, num_stages=3"]}
    tuned = encode(event.model_copy(update={"autotuned": chosen}))
    again = stored._replace(
        position=LOG[-1].position + 1,
        event_id="01936f00-0000-7000-8000-00000000ffff",
        schema_version=tuned.schema_version,
        data=tuned.data,
    )
    state = folded([*LOG, again])
    assert state.candidates[event.candidate_id].autotuned == chosen
    view = build_view(state, lambda hashes: {})
    text = "matmul_kernel: BLOCK_M=128, BLOCK_N=64, num_warps=4, num_ctas=1, num_stages=3"
    assert [r.autotuned for r in rows(view) if r.candidate_id == event.candidate_id] == [text]
    assert f'<div class="autotuned note">{text}</div>' in render_report(view)
    assert {r.autotuned for r in rows(build_view(folded(LOG), lambda hashes: {}))} == {""}


def test_each_workloads_latency_is_shown_under_the_candidates() -> None:
    """ProfileRecorded v5 carries each workload's outcome: the candidate keeps its latest
    profile's, and the search tree shows each latency with its kind under their mean."""
    stored = next(
        e
        for e in LOG
        if e.type == "ProfileRecorded" and decode(e).event.candidate_id  # type: ignore[attr-defined]
    )
    event = decode(stored).event
    assert isinstance(event, ProfileRecorded)
    assert event.candidate_id is not None
    assert event.workloads == []  # recorded before v5: upcast to none
    over = [
        WorkloadProfile(
            name=name,
            uuid=f"u-{name}",
            correct=True,
            latency_ms=ms,
            latency_kind="estimated",
            error_kind=None,
            max_rel_l2=0.0,
            pct_of_peak=None,
        )
        for name, ms in (("w0", 1.5), ("w1", 6.0))
    ]
    recorded = encode(event.model_copy(update={"latency_ms": 3.0, "workloads": over}))
    again = stored._replace(
        position=LOG[-1].position + 1,
        event_id="01936f00-0000-7000-8000-00000000fffe",
        schema_version=recorded.schema_version,
        data=recorded.data,
    )
    state = folded([*LOG, again])
    assert state.candidates[event.candidate_id].workloads == [
        ("w0", 1.5, "estimated"),
        ("w1", 6.0, "estimated"),
    ]
    view = build_view(state, lambda hashes: {})
    text = "w0: 1.5 ms (e)\nw1: 6 ms (e)"
    assert [r.workloads for r in rows(view) if r.candidate_id == event.candidate_id] == [text]
    assert f'<div class="workloads note">{text}</div>' in render_report(view)
    assert {r.workloads for r in rows(build_view(folded(LOG), lambda hashes: {}))} == {""}
