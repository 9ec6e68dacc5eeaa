"""The LLM endpoint at its worst, against a real daemon (a child process on a real SQLite file,
nkisim on the suite's silu) and a real scripted server, one fault per test: an answer that
trickles a byte every 2 s, an answer that never comes, 429 with a Retry-After of an hour, 500s,
a 20 MB body, a megabyte of newlines, no `usage` and negative `usage` under a token budget, and
the API key echoed back verbatim, in base64 and in hex.

Each test asserts what docs/usage.md promises for its fault: the call is bounded in time and
recorded with its error, the budget holds, no form of the key reaches the database file or the
daemon's log; and, in every mode, SIGTERM ends the daemon within its drain limit with status 0
(`faulty_daemon` asserts it, and the absence of the key, when the test's block ends)."""

from __future__ import annotations

import base64
import json
import sqlite3
import threading
import time
import urllib.parse
import zlib
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

from daemon.coordinator.service import DRAIN_LIMIT_S
from events.catalog import (
    LLMCallCompleted,
    PlanProposed,
    PortFinished,
    PortStarted,
    SearchFinished,
    SearchStarted,
)
from nkibench.suites import NKI_LEGACY_SUITE as SUITE
from store.sql import SqlEventStore
from tests.support import agent_script
from tests.support.cli import search_args
from tests.support.daemon_process import DaemonProcess, wait_until
from tests.support.llm_server import Reply, Request, ScriptedLLM, running_llm

KEY = "sk-fault/suite+key=7Zq~?>0c9f3e1d"
"""The endpoint's key: long enough to be scrubbed (8 characters or more), with characters that
percent-encoding changes, and base64 of it holds `+` and `/` at every alignment, so that the two
base64 alphabets differ."""
AGENTS = search_args(iterations=1, beam=1, plans=2, samples=1)
"""One iteration of two plans: the planner's call of seed 0 is answered as agent_script does,
the faults go to the call of seed 1 (and the search still ends on its seed-0 plan)."""
MB = 1 << 20


@dataclass
class Run:
    daemon: DaemonProcess
    llm: ScriptedLLM
    stop_s: float = 0.0

    def calls(self, **where: object) -> list[LLMCallCompleted]:
        return self.daemon.events(LLMCallCompleted, **where)

    def failed(self, fragment: str) -> list[LLMCallCompleted]:
        """The recorded attempts whose error holds `fragment`."""
        return [c for c in self.calls() if c.error is not None and fragment in c.error]

    def requests_for(self, call_id: str) -> int:
        return self.llm.call_ids().count(call_id)

    def finished(self) -> list[SearchFinished]:
        return self.daemon.events(SearchFinished, task="silu")

    def executor_asked(self) -> bool:
        """The search went past its planning step (its calls all answered or failed)."""
        with self.llm.lock:
            return any(r.model == "executor-model" for r in self.llm.requests)

    def text(self, blob: str) -> str:
        store = SqlEventStore.open(self.daemon.db)
        try:
            return store.get_text(blob)
        finally:
            store.close()


class Planner:
    """agent_script's answers, except the planner's call of seed 1, answered by `fault` (its
    attempt number, from 1) while that returns a reply. The call's id and the moment each of
    its attempts arrived are kept."""

    def __init__(self, fault: Callable[[int], Reply | None]) -> None:
        self.fault = fault
        self.call_id = ""
        self.arrived: list[float] = []
        self.lock = threading.Lock()

    def __call__(self, request: Request) -> Reply:
        if request.model == "planner-model" and request.seed == 1:
            with self.lock:
                self.call_id = request.call_id
                self.arrived.append(time.monotonic())
                attempt = len(self.arrived)
            reply = self.fault(attempt)
            if reply is not None:
                return reply
        return agent_script.answer(request)


@contextmanager
def faulty_daemon(
    tmp_path: Path,
    script: Callable[[Request], Reply],
    fixer_attempts: int = 0,
    args: Sequence[str] = (),
    **settings: str,
) -> Iterator[Run]:
    """The daemon on silu against `script` (`args`: more of its options); when the block ends,
    SIGTERM, which must end it with status 0 within DRAIN_LIMIT_S, and no form of the key may
    be in its database file or its log."""
    with running_llm(script) as llm:
        env = {**agent_script.llm_env(llm.url), "ACCELOPT_LLM_API_KEY": KEY, **settings}
        search = [*AGENTS, "--fixer-attempts", str(fixer_attempts), *args]
        daemon = DaemonProcess(tmp_path, *search, env=env)
        daemon.drop(SUITE / "silu", "silu")
        daemon.start()
        run = Run(daemon, llm)
        try:
            yield run
        except BaseException:
            daemon.stop(timeout=DRAIN_LIMIT_S * 3)
            raise
        sent = time.monotonic()
        status = daemon.stop(timeout=DRAIN_LIMIT_S * 3)
        run.stop_s = time.monotonic() - sent
        assert status == 0, daemon.log_text()[-3000:]
        assert run.stop_s < DRAIN_LIMIT_S, f"the stop took {run.stop_s:.1f} s"
    assert_no_key(daemon)


# --- the key, in every form an endpoint may echo it in ------------------------------------


def key_forms() -> dict[str, str]:
    """What would show the key: verbatim, hexadecimal in both cases, percent-encoded, and
    base64 in both alphabets at each of the three byte alignments it can have inside a longer
    text (the characters that depend on the key's bytes alone: a group of four past either
    end is dropped)."""
    raw = KEY.encode()
    forms = {
        "verbatim": KEY,
        "hex": raw.hex(),
        "HEX": raw.hex().upper(),
        "url-encoded": urllib.parse.quote(KEY, safe=""),
        "form-encoded": urllib.parse.quote_plus(KEY),
    }
    for offset in range(3):
        inner = base64.b64encode(bytes(offset) + raw).decode()[4:-4]
        forms[f"base64 at {offset}"] = inner
        forms[f"urlsafe base64 at {offset}"] = inner.translate(str.maketrans("+/", "-_"))
    return forms


def database_texts(daemon: DaemonProcess) -> list[bytes]:
    """The database's files byte for byte (the WAL too), and every blob decompressed (a zlib
    blob's bytes would hide a key from a plain search)."""
    files = sorted(daemon.home.glob("accelopt.db*"))
    assert files, f"no database file in {daemon.home}"
    texts = [path.read_bytes() for path in files]
    with sqlite3.connect(files[0]) as connection:
        for compression, content in connection.execute("SELECT compression, content FROM blobs"):
            texts.append(zlib.decompress(content) if compression == "zlib" else bytes(content))
    return texts


def assert_no_key(daemon: DaemonProcess) -> None:
    texts = [*database_texts(daemon), daemon.log.read_bytes()]
    for name, form in key_forms().items():
        assert not any(form.encode() in text for text in texts), f"the key, {name}, was kept"


# --- one test per fault --------------------------------------------------------------------


def test_a_slowloris_answer_is_cut_at_the_time_limit_and_sigterm_ends_the_daemon(
    tmp_path: Path,
) -> None:
    """Every attempt trickles its answer a byte every 2 s (the transport's read timeout never
    fires); the client's deadline cuts each, and SIGTERM lands during the second."""
    planner = Planner(lambda _: Reply(agent_script.PLANS[1], trickle_s=2.0))
    with faulty_daemon(
        tmp_path, planner, ACCELOPT_LLM_TIMEOUT_S="3", ACCELOPT_LLM_MAX_ATTEMPTS="2"
    ) as run:
        (cut,) = wait_until(lambda: run.failed("did not arrive whole"), 60, "the first attempt cut")
        wait_until(lambda: len(planner.arrived) == 2, 30, "the second attempt")
    # timeout_s plus the longest pause between two bytes (and 2 s for a loaded host)
    assert 3.0 <= cut.latency_s < 3.0 + 2.0 + 2.0, cut.latency_s
    assert cut.call_id == planner.call_id
    assert run.finished() == []  # stopped mid-call, not after the search


def test_a_hanging_call_is_timed_out_and_sigterm_does_not_wait_for_it(tmp_path: Path) -> None:
    """The endpoint never answers: the first attempt ends at the call's time limit, recorded;
    SIGTERM lands while the second hangs, and the daemon does not wait it out."""
    release = threading.Event()

    def hang(_: int) -> Reply:
        release.wait(120)  # past any limit of this test
        return Reply(agent_script.PLANS[1])

    planner = Planner(hang)
    try:
        with faulty_daemon(
            tmp_path, planner, ACCELOPT_LLM_TIMEOUT_S="5", ACCELOPT_LLM_MAX_ATTEMPTS="2"
        ) as run:
            (timed_out,) = wait_until(lambda: run.failed("Timeout"), 60, "the first timeout")
            wait_until(lambda: len(planner.arrived) == 2, 30, "the second attempt")
    finally:
        release.set()
    assert 5.0 <= timed_out.latency_s < 5.0 + 2.0, timed_out.latency_s  # 2 s: a loaded host
    assert timed_out.call_id == planner.call_id
    # the drain left the hanging call behind (it is asked again at the next start)
    assert run.stop_s < 5.0, f"the stop waited {run.stop_s:.1f} s, as long as the call could"
    assert run.finished() == []


def test_sigterm_does_not_wait_for_a_hanging_fixer_call(tmp_path: Path) -> None:
    """The executor writes an incorrect kernel, and the fixer asked to repair it never gets an
    answer (the call's time limit is the default's order, far past the drain limit); SIGTERM
    lands while the fixer's call hangs."""
    release = threading.Event()
    fixer_asked = threading.Event()

    def script(request: Request) -> Reply:
        if request.model == "fixer-model":
            fixer_asked.set()
            release.wait(120)  # past any limit of this test
            return Reply(agent_script.fenced(agent_script.FAST))
        if request.model == "executor-model":
            return Reply(agent_script.fenced(agent_script.WRONG))
        return agent_script.answer(request)

    try:
        with faulty_daemon(
            tmp_path,
            script,
            fixer_attempts=1,
            ACCELOPT_FIXER_MODEL="fixer-model",
            ACCELOPT_LLM_TIMEOUT_S="600",
        ) as run:
            assert fixer_asked.wait(60), "the fixer was never asked"
    finally:
        release.set()
    # the drain left the hanging call behind (it is asked again at the next start)
    assert run.stop_s < 5.0, f"the stop waited {run.stop_s:.1f} s for the fixer's call"
    assert not [c for c in run.calls() if c.role == "fixer"]  # nothing answered it
    assert run.finished() == []


def test_sigterm_does_not_wait_for_a_hanging_port_call(tmp_path: Path) -> None:
    """On trn3, where only current NKI runs, the legacy silu is ported to current NKI before its
    search; the port's call never gets an answer (the call's time limit is the default's order,
    far past the drain limit), and SIGTERM lands while it hangs."""
    release = threading.Event()
    port_asked = threading.Event()

    def script(request: Request) -> Reply:
        if "->nki@trn3/" in request.call_id:  # a port's call (agents/port.py port_id)
            port_asked.set()
            release.wait(120)  # past any limit of this test
            return Reply(agent_script.fenced(agent_script.FAST))
        return agent_script.answer(request)

    try:
        with faulty_daemon(
            tmp_path, script, args=("--target", "trn3"), ACCELOPT_LLM_TIMEOUT_S="600"
        ) as run:
            assert port_asked.wait(60), "the port was never asked"
    finally:
        release.set()
    # the drain left the hanging call behind (it is asked again at the next start)
    assert run.stop_s < 5.0, f"the stop waited {run.stop_s:.1f} s for the port's call"
    started = run.daemon.events(PortStarted)
    assert [(p.task, p.target) for p in started] == [("silu", "trn3")]
    assert run.daemon.events(PortFinished) == []
    assert run.calls() == []  # nothing answered it
    assert run.daemon.events(SearchStarted) == []  # the port comes before the search
    assert "the port of silu stopped" in run.daemon.log_text()


def test_429_with_retry_after_is_waited_for_up_to_the_cap(tmp_path: Path) -> None:
    """A 429 asking for an hour: the retry waits ACCELOPT_LLM_RETRY_AFTER_MAX_S (2 s), far
    longer than the backoff (0.05 s) and far shorter than the hour."""
    planner = Planner(
        lambda attempt: (
            Reply(status=429, headers=(("Retry-After", "3600"),)) if attempt == 1 else None
        )
    )
    with faulty_daemon(tmp_path, planner, ACCELOPT_LLM_RETRY_AFTER_MAX_S="2") as run:
        plans = wait_until(
            lambda: run.daemon.events(PlanProposed, llm_call_id=planner.call_id),
            60,
            "the plan of the retried call",
        )
    (limited,) = run.failed("HTTP 429")
    assert limited.call_id == planner.call_id
    first, second = planner.arrived
    assert 2.0 <= second - first < 4.0, second - first
    assert run.requests_for(planner.call_id) == 2
    (answered,) = [c for c in run.calls(call_id=planner.call_id) if c.error is None]
    assert answered.parameters["attempt"] == 2
    assert len(plans) == 1


def test_500s_are_retried_up_to_the_bound_and_the_search_goes_on(tmp_path: Path) -> None:
    """The planner's call of seed 1 answers 500 to every attempt: it is tried exactly
    ACCELOPT_LLM_MAX_ATTEMPTS times, each attempt recorded, and the search ends on the other
    plan."""
    planner = Planner(lambda _: Reply(status=500))
    with faulty_daemon(tmp_path, planner, ACCELOPT_LLM_MAX_ATTEMPTS="3") as run:
        wait_until(run.executor_asked, 60, "the search past its plans")
    errors = run.failed("HTTP 500")
    assert len(errors) == run.requests_for(planner.call_id) == 3
    assert {e.call_id for e in errors} == {planner.call_id}
    assert [e.parameters["attempt"] for e in errors] == [1, 2, 3]
    assert planner.call_id not in {p.llm_call_id for p in run.daemon.events(PlanProposed)}
    assert len(run.daemon.events(PlanProposed)) == 1  # the other plan goes on


def test_a_20_mb_answer_is_refused_unread_and_not_retried(tmp_path: Path) -> None:
    planner = Planner(lambda _: Reply("x" * (20 * MB)))
    with faulty_daemon(tmp_path, planner) as run:
        wait_until(run.executor_asked, 60, "the search past its plans")
    (refused,) = run.failed("over 16777216 bytes")
    assert refused.call_id == planner.call_id
    assert refused.response_blob is None
    assert run.requests_for(planner.call_id) == 1  # a body that large is no transient fault
    assert refused.latency_s < 5.0  # within the call's time limit (llm_env: 5 s)
    stored = sum(path.stat().st_size for path in run.daemon.home.glob("accelopt.db*"))
    assert stored < 16 * MB, f"the database holds {stored} bytes"
    assert len(run.daemon.events(PlanProposed)) == 1  # the other plan goes on


def test_a_megabyte_of_newlines_is_recorded_billed_and_refused(tmp_path: Path) -> None:
    newlines = "\n" * MB
    planner = Planner(lambda _: Reply(newlines, finish_reason="length"))
    with faulty_daemon(tmp_path, planner) as run:
        wait_until(run.executor_asked, 60, "the search past its plans")
    (answered,) = run.calls(call_id=planner.call_id)
    assert answered.error is None
    assert answered.response_blob is not None
    assert run.text(answered.response_blob) == newlines
    assert answered.completion_tokens == MB // 4 + 1  # what the server billed
    assert planner.call_id not in {p.llm_call_id for p in run.daemon.events(PlanProposed)}
    assert len(run.daemon.events(PlanProposed)) == 1  # the other plan goes on


@pytest.mark.parametrize("usage", ["missing", "negative"])
def test_a_budget_holds_against_usage_that_is_missing_or_negative(
    tmp_path: Path, usage: Literal["missing", "negative"]
) -> None:
    """Every answer omits `usage`, or reports -1,000,000 tokens: each count is estimated from
    the characters (over 3, rounded up), and the 4,000-token budget ends the search."""

    def script(request: Request) -> Reply:
        reply = agent_script.answer(request)
        return Reply(reply.text, usage=usage)

    with faulty_daemon(tmp_path, script, ACCELOPT_BUDGET_TOTAL_TOKENS="4000") as run:
        (finished,) = wait_until(run.finished, 120, "the search's end")
        asked = len(run.llm.requests)
    assert finished.reason == "budget", finished
    calls = run.calls()
    assert len(calls) == asked  # every request is in the ledger, none unbilled
    for call in calls:
        assert call.error is None
        assert call.response_blob is not None
        sent = sum(len(m["content"]) for m in json.loads(run.text(call.prompt_blob)))
        received = len(run.text(call.response_blob))
        # never below the characters' estimate: exactly it (docs/usage.md)
        assert call.prompt_tokens == -(-sent // 3), call.call_id
        assert call.completion_tokens == -(-received // 3), call.call_id
        assert call.parameters["usage_estimated"] == "prompt_tokens,completion_tokens"
    assert sum(c.prompt_tokens + c.completion_tokens for c in calls) >= 4000
    assert len(run.daemon.events(SearchStarted)) == 1  # a spent budget starts nothing new
    assert len(run.llm.requests) == asked  # and asks nothing more


ECHOES: dict[str, Callable[[bytes], str]] = {
    "verbatim": bytes.decode,
    "base64": lambda raw: base64.b64encode(raw).decode(),
    "hex": bytes.hex,
}


@pytest.mark.parametrize("form", list(ECHOES))
def test_the_key_echoed_back_is_kept_nowhere(tmp_path: Path, form: str) -> None:
    """The endpoint echoes the key in every answer (the executor's inside the kernel's code),
    and in a 500's error message as `Bearer <key>` encoded the same way (another base64
    alignment; hex and base64 also in their other case and alphabet)."""
    echo = ECHOES[form]
    answer, bearer = echo(KEY.encode()), echo(f"Bearer {KEY}".encode())
    if form == "hex":
        bearer = bearer.upper()
    if form == "base64":
        bearer = bearer.replace("+", "-").replace("/", "_")
    attempts: defaultdict[str, int] = defaultdict(int)
    lock = threading.Lock()  # the server answers each request on its own thread

    def script(request: Request) -> Reply:
        with lock:
            attempts[request.call_id] += 1
            first = attempts[request.call_id] == 1
        if request.model == "planner-model" and first:
            error = {"error": {"message": f"invalid credentials: {bearer}", "type": "auth"}}
            return Reply(status=500, raw=json.dumps(error).encode())
        text = agent_script.answer(request).text.replace("```python\n", f"```python\n# {answer}\n")
        return Reply(f"{text}\nYour key: {answer}\n")

    with faulty_daemon(tmp_path, script) as run:
        wait_until(run.finished, 120, "the search's end")
    # the echoes reached what is recorded, each replaced there
    errors = run.failed("HTTP 500")
    assert len(errors) == 2
    assert all("[redacted]" in (e.error or "") for e in errors)
    plans = run.daemon.events(PlanProposed, task="silu")
    assert plans
    assert all("[redacted]" in run.text(p.plan_blob) for p in plans)
    # and no prompt sent back out carried the key in any form
    for request in run.llm.requests:
        sent = json.dumps(request.messages)
        assert not any(f in sent for f in key_forms().values()), request.call_id
    assert [f.reason for f in run.finished()] == ["completed"]
