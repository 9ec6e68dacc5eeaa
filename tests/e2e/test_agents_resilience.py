"""The loop survives what happens to a service that runs for weeks: kill -9 mid-iteration,
faulty LLM endpoints, bad answers, hanging kernels, and a budget running out."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from events.catalog import (
    BeamSelected,
    CandidateRejected,
    KernelPromoted,
    LLMCallCompleted,
    SearchFinished,
    SearchStarted,
)
from nkibench.suites import NKI_LEGACY_SUITE as SUITE
from tests.support import agent_script
from tests.support.cli import SEARCH, events_of
from tests.support.llm_server import Reply, Request, ScriptedLLM, running_llm

PROGRAM = [sys.executable, "-c", "from daemon.cli import main; main()"]


def environment(llm: ScriptedLLM, db: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELOPT_")}
    env |= {
        "ACCELOPT_DB": db,
        "ACCELOPT_LLM_BASE_URL": llm.url,
        "ACCELOPT_LLM_API_KEY": "test-key",
        "ACCELOPT_LLM_PRICES": agent_script.PRICES,
        "ACCELOPT_LLM_TIMEOUT_S": "5",
        "ACCELOPT_LLM_RETRY_BASE_S": "0.05",
        **agent_script.MODELS,
        **extra,
    }
    return env


def accelopt(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PROGRAM, *argv], env=env, capture_output=True, text=True, timeout=600, check=False
    )


def optimize(task: Path, *extra: str) -> list[str]:
    """The arguments of `accelopt optimize` for the tests' small search."""
    return ["optimize", str(task), *SEARCH, "--fixer-attempts", "0", "--json", *extra]


def memory(env: dict[str, str]) -> dict[str, Any]:
    listed = accelopt(env, "memory", "--json")
    assert listed.returncode == 0, listed.stderr
    shown: dict[str, Any] = json.loads(listed.stdout)
    return shown


def test_kill_9_mid_iteration_resumes_without_asking_twice(tmp_path: Path) -> None:
    script = agent_script.HeldExecutorCall(3)

    with running_llm(script) as llm:
        db = f"sqlite:///{tmp_path / 'interrupted.db'}"
        env = environment(llm, db)
        assert accelopt(env, "db", "upgrade").returncode == 0
        first = subprocess.Popen(
            [*PROGRAM, *optimize(SUITE / "silu")],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            assert script.held.wait(300), "the run never reached its third executor call"
            time.sleep(0.5)  # let the other in-flight answers be recorded
        finally:
            os.kill(first.pid, signal.SIGKILL)
            first.wait()
        recorded = {call.call_id for call in events_of(db, LLMCallCompleted) if call.error is None}
        assert recorded, "nothing was recorded before the kill"
        assert not events_of(db, SearchFinished), "the first run finished before the kill"
        asked_before = len(llm.requests)
        script.disarm()
        second = accelopt(env, *optimize(SUITE / "silu"))
        assert second.returncode == 0, second.stderr
        resumed = json.loads(second.stdout)
        asked_after = [r.call_id for r in llm.requests[asked_before:]]
        assert asked_after, "the resumed run had work left to ask for"
        assert not set(asked_after) & recorded, "an answer already recorded was asked again"
        assert len(events_of(db, SearchStarted)) == 1  # resumed, not started again

        # the same search, never interrupted, on a fresh database
        clean_db = f"sqlite:///{tmp_path / 'clean.db'}"
        clean_env = environment(llm, clean_db)
        assert accelopt(clean_env, "db", "upgrade").returncode == 0
        clean = accelopt(clean_env, *optimize(SUITE / "silu"))
        assert clean.returncode == 0, clean.stderr
        uninterrupted = json.loads(clean.stdout)

    assert resumed["search_id"] == uninterrupted["search_id"]
    for key in ("promoted_candidate", "best_candidate", "best_latency_ms", "iterations"):
        assert resumed[key] == uninterrupted[key], key
    assert memory(env)["items"] == memory(clean_env)["items"]
    assert len(memory(env)["items"]) == 2
    # every search event the clean run recorded, the interrupted one recorded exactly once
    for kind in (BeamSelected, CandidateRejected, SearchFinished):
        assert len(events_of(db, kind)) == len(events_of(clean_db, kind)), kind.__name__


def _hanging_silu(tmp_path: Path) -> Path:
    folder = tmp_path / "silu"
    shutil.copytree(SUITE / "silu", folder)
    with (folder / "task.toml").open("a") as toml:
        toml.write("\n[limits]\ntimeout_s = 10\n")
    return folder


def test_faults_are_recorded_and_the_loop_goes_on(tmp_path: Path) -> None:
    attempts: Counter[str] = Counter()
    lock = threading.Lock()

    def script(request: Request) -> Reply:
        with lock:
            attempts[request.call_id] += 1
            first = attempts[request.call_id] == 1
        seed = request.seed or 0
        if request.model == "planner-model" and first:
            # seed 0: a server error; seed 1: an answer slower than the client's timeout
            return Reply(status=500) if seed == 0 else Reply("late", delay_s=3)
        if request.model == "executor-model" and "PLAN-FAST" in request.user:
            if seed == 0:  # cut at the token limit in the middle of the code
                return Reply("```python\n" + agent_script.FAST[:300], finish_reason="length")
            return Reply(agent_script.fenced(agent_script.HANG))
        if request.model == "executor-model" and "PLAN-SLOW" in request.user:
            return Reply(agent_script.fenced(agent_script.FAST) if seed == 0 else "No code.")
        return agent_script.answer(request)

    with running_llm(script) as llm:
        db = f"sqlite:///{tmp_path / 'faults.db'}"
        env = environment(llm, db, ACCELOPT_LLM_TIMEOUT_S="1")
        assert accelopt(env, "db", "upgrade").returncode == 0
        task = _hanging_silu(tmp_path)
        run = accelopt(
            env,
            "optimize",
            str(task),
            "--iterations",
            "1",
            "--beam",
            "1",
            "--plans",
            "2",
            "--samples",
            "2",
            "--fixer-attempts",
            "0",
            "--shapes",
            "small",
            "--json",
        )
        assert run.returncode == 0, run.stderr
        outcome = json.loads(run.stdout)
    failures = [c.error for c in events_of(db, LLMCallCompleted) if c.error is not None]
    assert any("HTTP 500" in error for error in failures)
    assert any("Timeout" in error for error in failures)
    assert outcome["failed_llm_calls"] == len(failures) == 2
    retried = [call for call, n in attempts.items() if n == 2]
    assert len(retried) == 2  # both planner calls succeeded on their second attempt
    reasons = Counter(r.reason for r in events_of(db, CandidateRejected))
    assert reasons == Counter({"truncated": 1, "timeout": 1, "no_code": 1})
    hang = next(r for r in events_of(db, CandidateRejected) if r.reason == "timeout")
    assert "10 s limit" in hang.message
    assert outcome["reason"] == "completed"
    assert outcome["promoted_candidate"] is not None  # the one good kernel still won
    assert [e.reason for e in events_of(db, SearchFinished)] == ["completed"]


def test_a_budget_stops_the_task_cleanly(tmp_path: Path) -> None:
    with running_llm(agent_script.answer) as llm:
        db = f"sqlite:///{tmp_path / 'budget.db'}"
        env = environment(llm, db, ACCELOPT_BUDGET_TASK_TOKENS="5000")
        assert accelopt(env, "db", "upgrade").returncode == 0
        run = accelopt(env, *optimize(SUITE / "silu"))
        assert run.returncode == 0, run.stderr
        outcome = json.loads(run.stdout)
        asked = len(llm.requests)
        again = accelopt(env, *optimize(SUITE / "silu"))
        assert again.returncode == 0, again.stderr
        assert len(llm.requests) == asked, "a spent budget still allowed a request"
    assert outcome["reason"] == "budget"
    assert "task silu budget of 5000 tokens is spent" in outcome["detail"]
    spent = outcome["prompt_tokens"] + outcome["completion_tokens"]
    assert spent >= 5000
    calls = [c for c in events_of(db, LLMCallCompleted) if c.error is None]
    assert len(calls) == asked  # every request the server answered is in the ledger
    finished = events_of(db, SearchFinished)
    assert [f.reason for f in finished] == ["budget", "budget"]
    assert json.loads(again.stdout)["reason"] == "budget"
    assert finished[0].iterations < 2  # stopped before its iterations were done
    assert not events_of(db, KernelPromoted)


def test_an_iteration_whose_every_planner_call_failed_is_resumed_later_not_finished(
    tmp_path: Path,
) -> None:
    """(A planner rate-limited for good ended the search as "completed" at 1.0x: a 30-second
    outage became a plateau, and the task rested for hours.)"""
    down = threading.Event()
    down.set()

    def script(request: Request) -> Reply:
        if down.is_set() and request.model == "planner-model":
            return Reply(status=429, headers=(("Retry-After", "0"),))
        return agent_script.answer(request)

    with running_llm(script) as llm:
        db = f"sqlite:///{tmp_path / 'outage.db'}"
        env = environment(llm, db)
        assert accelopt(env, "db", "upgrade").returncode == 0
        failed = accelopt(env, *optimize(SUITE / "silu"))
        assert failed.returncode == 3, failed.stderr
        assert "planner calls failed; the last: HTTP 429" in failed.stderr
        assert "run the command again to resume it" in failed.stderr
        assert events_of(db, SearchFinished) == []  # not a verdict: the search is unfinished
        down.clear()
        resumed = accelopt(env, *optimize(SUITE / "silu"))
        assert resumed.returncode == 0, resumed.stderr
    outcome = json.loads(resumed.stdout)
    assert [f.reason for f in events_of(db, SearchFinished)] == [outcome["reason"]]
    assert outcome["reason"] in ("completed", "plateau")
    started = {s.search_id for s in events_of(db, SearchStarted)}
    assert started == {outcome["search_id"]}  # the same search, resumed
    assert outcome["promoted_candidate"] is not None
