"""A model that emits a megabyte of newlines (issue 23) neither stalls nor stops the daemon.
Once, a summarizer's 300,000 newlines held the interpreter's lock for two minutes inside one
regex: SIGTERM went unanswered, systemd's watchdog killed the daemon, and the restart read the
same answer back from the log, forever. Here the planner, the executor and the summarizer each
answer a megabyte of newlines: each call is recorded, refused by the client's cap, and the
search goes on; SIGTERM mid-search stops the daemon within its drain limit; the restart reads
the answers back from the log, asks nothing twice, and the search finishes."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

from daemon.coordinator.service import DRAIN_LIMIT_S
from events.catalog import (
    CandidateRejected,
    ExperienceSummarized,
    KernelPromoted,
    LLMCallCompleted,
    LLMRole,
    PlanProposed,
    SearchFinished,
)
from events.codec import decode
from nkibench.suites import NKI_LEGACY_SUITE as SUITE
from store.sql import SqlEventStore
from tests.support import agent_script
from tests.support.cli import search_args
from tests.support.daemon_process import DaemonProcess, wait_until
from tests.support.llm_server import Reply, Request, running_llm

MB = 1 << 20
NEWLINES = "\n" * MB
AGENTS = [*search_args(iterations=2, beam=2, plans=2, samples=2), "--fixer-attempts", "0"]


def script(request: Request) -> Reply:
    """agent_script's silu, except that the summarizer always, and the planner and the
    executor on their second sample (seed 1), run on in newlines up to the token limit."""
    degenerate = request.model == "summarizer-model" or (
        request.model in ("planner-model", "executor-model") and request.seed == 1
    )
    if degenerate:
        return Reply(NEWLINES, finish_reason="length")
    return agent_script.answer(request)


def degenerate_calls(daemon: DaemonProcess) -> dict[str, LLMRole]:
    """The completed calls whose recorded answer is the megabyte of newlines, by id."""
    store = SqlEventStore.open(daemon.db)
    try:
        return {
            call.call_id: call.role
            for call in _calls(store)
            if call.response_blob is not None and store.get_text(call.response_blob) == NEWLINES
        }
    finally:
        store.close()


def _calls(store: SqlEventStore) -> Iterator[LLMCallCompleted]:
    for stored in store.read_all(types=[LLMCallCompleted.type_name()]):
        call = decode(stored).event
        assert isinstance(call, LLMCallCompleted)
        if call.error is None:
            yield call


def stop_timed(daemon: DaemonProcess) -> float:
    """SIGTERM, and the seconds until the daemon exited (status 0)."""
    sent = time.monotonic()
    assert daemon.stop(timeout=DRAIN_LIMIT_S * 3) == 0, daemon.log_text()[-3000:]
    return time.monotonic() - sent


def test_a_megabyte_of_newlines_neither_stalls_nor_stops_the_daemon(tmp_path: Path) -> None:
    with running_llm(script) as llm:
        daemon = DaemonProcess(tmp_path, *AGENTS, env=agent_script.llm_env(llm.url))
        daemon.drop(SUITE / "silu", "silu")
        daemon.start()
        try:
            wait_until(lambda: degenerate_calls(daemon), 240, "a megabyte of newlines")
        finally:
            first_stop_s = stop_timed(daemon)
        assert not daemon.events(SearchFinished), "the search ended before the stop"
        recorded = {c.call_id for c in daemon.events(LLMCallCompleted) if c.error is None}
        asked_before = len(llm.requests)

        daemon.start()
        try:
            wait_until(lambda: daemon.events(SearchFinished, task="silu"), 300, "the search")
        finally:
            second_stop_s = stop_timed(daemon)
        asked_after = [r.call_id for r in llm.requests[asked_before:]]

    assert first_stop_s < DRAIN_LIMIT_S, f"the stop mid-search took {first_stop_s:.1f} s"
    assert second_stop_s < DRAIN_LIMIT_S, f"the stop after the search took {second_stop_s:.1f} s"
    assert not set(asked_after) & recorded, "an answer in the log was asked for again"
    degenerate = degenerate_calls(daemon)
    assert set(degenerate.values()) == {"planner", "executor", "summarizer"}
    # each refused, typed: an executor's answer is a rejected candidate, a planner's a plan
    # left out, a summarizer's a lesson not learnt; none of them an exception in the daemon
    rejected = {r.candidate_id: r for r in daemon.events(CandidateRejected)}
    too_long = [r for r in rejected.values() if "characters long" in r.message]
    assert len(too_long) == sum(role == "executor" for role in degenerate.values())
    assert {r.reason for r in too_long} == {"llm_error"}
    plans = daemon.events(PlanProposed, task="silu")
    assert not {p.llm_call_id for p in plans} & set(degenerate)
    assert not daemon.events(ExperienceSummarized)
    log = daemon.log_text()
    assert "summarizer call failed" in log
    assert "search failed" not in log
    # and the search went on past them: its second iteration, and the faster kernel promoted
    assert {p.iteration for p in plans} == {1, 2}
    (finished,) = daemon.events(SearchFinished, task="silu")
    assert (finished.reason, finished.iterations) == ("completed", 2)
    (promoted,) = daemon.events(KernelPromoted, task="silu")
    assert promoted.candidate_id == finished.best_candidate_id
