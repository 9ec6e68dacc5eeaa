"""`accelopt export-dataset` on the log of a real run: `accelopt optimize` of silu with a tunable
against the scripted LLM (tests/support/agent_script.py), whose executor writes a faster, an
incorrect and a slower kernel and the faster one again, whose fixer mends the incorrect one with
a model that has no price, and whose faster kernel is promoted after a re-verification."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from events.catalog import (
    CandidateGenerated,
    CandidateRejected,
    LLMCallCompleted,
    PlanProposed,
    ProfileRecorded,
)
from store.sql import SqlEventStore
from tests.support import agent_script
from tests.support.cli import Run, events_of, run_cli, search_args
from tests.support.dataset import undocumented
from tests.support.llm_server import Reply, Request, running_llm

FIXED = agent_script.variant("cols = 1024", "cols = 512")
"""The fixer's repair of the incorrect kernel: correct, and like no other candidate."""


def script(request: Request) -> Reply:
    if request.model == "fixer-model":
        return Reply(agent_script.fenced(FIXED))
    if request.model == "executor-model" and "PLAN-SLOW" in request.user and request.seed:
        return Reply(agent_script.fenced(agent_script.FAST))  # a duplicate: never profiled
    return agent_script.answer(request)


@dataclass
class Logged:
    db: str
    folder: Path

    def export(self, name: str, *argv: str) -> tuple[Run, list[dict[str, Any]], bytes]:
        out = self.folder / name
        run = run_cli("export-dataset", "--db", self.db, "--out", str(out), *argv)
        assert run.code == 0, run.err
        raw = out.read_bytes()
        return run, [json.loads(line) for line in raw.decode().splitlines()], raw


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> Logged:
    folder = tmp_path_factory.mktemp("dataset")
    db = f"sqlite:///{folder / 'accelopt.db'}"
    task = agent_script.tunable_silu(folder)
    with pytest.MonkeyPatch.context() as patch, running_llm(script) as llm:
        settings = {
            **agent_script.llm_env(llm.url),
            "ACCELOPT_DB": db,
            "ACCELOPT_LLM_PRICES": agent_script.PRICES,  # none for fixer-model
            "ACCELOPT_FIXER_MODEL": "fixer-model",
        }
        for name, value in settings.items():
            patch.setenv(name, value)
        assert run_cli("db", "upgrade").code == 0
        search = search_args(iterations=1, beam=2, plans=2, samples=2)
        optimized = run_cli("optimize", str(task), *search, "--fixer-attempts", "1")
        assert optimized.code == 0, optimized.err
    return Logged(db, folder)


def text(db: str, blob: str) -> str:
    store = SqlEventStore.open(db)
    try:
        return store.get_text(blob)
    finally:
        store.close()


def test_one_line_per_profiled_candidate(logged: Logged) -> None:
    run, lines, _ = logged.export("all.jsonl")
    generated = {c.candidate_id: c for c in events_of(logged.db, CandidateGenerated)}
    profiles = events_of(logged.db, ProfileRecorded)
    # counted from the events alone: a baseline's profile names no candidate, one per search
    baselines = {c for c, e in generated.items() if e.origin == "baseline"}
    assert len([p for p in profiles if p.purpose == "baseline"]) == len(baselines) == 1
    profiled = {p.candidate_id for p in profiles if p.purpose == "candidate"} | baselines
    assert len(lines) == len(profiled)
    assert {line["candidate_id"] for line in lines} == profiled
    assert run.err.strip().endswith(f"{len(lines)} profiled candidates, as of position "
                                    f"{events_head(logged.db)}")  # fmt: skip
    # what the run holds, so that the count above counts something of each kind
    assert Counter(line["origin"] for line in lines) == Counter(
        {"baseline": 1, "executor": 3, "tunable": 2, "fixer": 1}
    )
    reverified = {p.candidate_id for p in profiles if p.purpose == "reverify"}
    assert reverified
    assert reverified <= profiled
    rejected = {r.candidate_id: r.reason for r in events_of(logged.db, CandidateRejected)}
    unprofiled = set(generated) - profiled
    assert unprofiled
    assert {rejected[c] for c in unprofiled} == {"duplicate"}
    positions = [line["position"] for line in lines]
    assert positions == sorted(set(positions))  # in log order, one profile each


def test_each_line_holds_what_its_events_say(logged: Logged) -> None:
    _, lines, _ = logged.export("all.jsonl")
    generated = {c.candidate_id: c for c in events_of(logged.db, CandidateGenerated)}
    plans = {p.plan_id: p for p in events_of(logged.db, PlanProposed)}
    calls = {
        c.call_id: c for c in events_of(logged.db, LLMCallCompleted) if c.error is None
    }  # fmt: skip
    for line in lines:
        assert undocumented(line) == [], line["candidate_id"]
        event = generated[line["candidate_id"]]
        assert line["generated"] == event.model_dump(mode="json")
        assert line["source"] == text(logged.db, event.source_blob)
        assert (line["task"], line["backend"], line["dialect"]) == ("silu", "nkisim", "nki-legacy")
        assert line["profiled"]["candidate_id"] in (None, line["candidate_id"])
        assert line["profiled"]["purpose"] != "reverify"
        parent = event.parent_candidate_id
        assert line["parent_source"] == (
            text(logged.db, generated[parent].source_blob) if parent else None
        )
        plan = plans.get(event.plan_id) if event.plan_id else None
        assert line["plan"] == (text(logged.db, plan.plan_blob) if plan else None)
        assert line["plan_model"] == ("planner-model" if plan else None)
        call = calls.get(event.llm_call_id) if event.llm_call_id else None
        assert line["model"] == (call.model if call else None)
        if line["verdict"] == "correct":
            assert line["latency_ms"] > 0
            assert line["latency_kind"] == "estimated"
            assert line["error_kind"] is None
        else:
            assert line["verdict"] == "failed"
            assert line["latency_ms"] is None
            assert line["error_kind"]
    by_origin = {line["origin"]: line for line in lines}
    assert by_origin["baseline"]["parent_id"] is None
    assert by_origin["tunable"]["model"] is None
    assert by_origin["tunable"]["cost_usd"] is None
    fixer = by_origin["fixer"]
    assert fixer["model"] == "fixer-model"
    assert fixer["cost_usd"] is None
    assert fixer["source"] == FIXED
    assert fixer["verdict"] == "correct"
    executor = [line for line in lines if line["origin"] == "executor"]
    for line in executor:  # priced: the call's dollars, as the ledger counts them
        call = calls[generated[line["candidate_id"]].llm_call_id or ""]
        assert line["cost_usd"] == call.cost_usd > 0
        assert line["plan_cost_usd"] == calls[plans[line["plan_id"]].llm_call_id].cost_usd > 0
    assert {line["verdict"] for line in executor} == {"correct", "failed"}
    wrong = next(line for line in executor if line["source"] == agent_script.WRONG)
    assert (wrong["verdict"], wrong["error_kind"]) == ("failed", "incorrect")


def test_until_gives_a_prefix_of_the_whole_export(logged: Logged) -> None:
    _, whole, whole_raw = logged.export("all.jsonl")
    _, _again, again_raw = logged.export("again.jsonl")
    assert again_raw == whole_raw  # the same log, the same bytes
    middle = whole[len(whole) // 2]["position"]
    run, prefix, _ = logged.export("prefix.jsonl", "--until", str(middle))
    assert prefix == [line for line in whole if line["position"] <= middle]
    assert 0 < len(prefix) < len(whole)
    assert run.err.strip().endswith(f"as of position {middle}")
    at = whole[len(whole) // 2]["recorded_at"]  # the last event recorded by then, at least it
    run, by_time, _ = logged.export("by-time.jsonl", "--until", at)
    assert by_time == whole[: len(by_time)]
    assert whole[len(whole) // 2] in by_time
    _, nothing, raw = logged.export("empty.jsonl", "--until", "0")
    assert nothing == []
    assert raw == b""


def events_head(db: str) -> int:
    store = SqlEventStore.open(db)
    try:
        return store.head()
    finally:
        store.close()
