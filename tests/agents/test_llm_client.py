"""The LLM client against a real HTTP server on loopback: answers that are not Chat
Completions are recorded as failed attempts (so retries and budgets apply, and the search goes
on), answers past the cap are recorded and refused alike live and replayed, and what is sent
passes the store's scrubber."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Literal

import pytest

from agents import llm as llm_module
from agents.config import Budget, LLMConfig, RoleConfig
from agents.ledger import Ledger
from agents.llm import (
    MAX_ANSWER_CHARS,
    AnswerTooLong,
    BudgetExhausted,
    LLMClient,
    LLMError,
    retry_after,
)
from events.catalog import LLMCallCompleted
from store.memory import MemoryEventStore
from store.recorder import Recorder
from store.scrub import Scrubber
from tests.support.llm_server import Reply, Request, running_llm

SECRET = "sk-live-" + "0123456789abcdef"


def client(
    url: str,
    store: MemoryEventStore,
    attempts: int = 3,
    budget: Budget | None = None,
    timeout_s: float = 5,
) -> LLMClient:
    role = RoleConfig(model="m", base_url=url, api_key=SECRET)
    config = LLMConfig(
        roles={r: role for r in ("planner", "executor", "summarizer", "fixer")},
        max_attempts=attempts,
        retry_base_s=0.01,
        timeout_s=timeout_s,
    )
    return LLMClient(config, Recorder(store), Ledger.from_store(store), budget or Budget())


def test_an_http_200_that_is_not_a_chat_completion_is_a_recorded_failed_attempt() -> None:
    """(Once nothing was recorded, no budget applied, and the same request went out again
    every minute without end.)"""
    store = MemoryEventStore()
    with running_llm(lambda _r: Reply(raw=b"<html>502 Bad Gateway</html>")) as llm:
        with pytest.raises(LLMError, match="not a chat completion"):
            client(llm.url, store).complete(
                call_id="s|planner|1|c|0", role="planner", messages=[], task="silu"
            )
        asked = len(llm.requests)
    calls = [e for e in Recorder(store).events("llm:s|planner|1|c|0")]
    assert asked == 3
    assert [c.parameters["attempt"] for c in calls if isinstance(c, LLMCallCompleted)] == [1, 2, 3]
    assert all(
        isinstance(c, LLMCallCompleted) and c.error and "not a chat completion" in c.error
        for c in calls
    )


def test_what_is_sent_and_recorded_passes_the_scrubber() -> None:
    store = MemoryEventStore(scrubber=Scrubber([SECRET]))
    seen: list[Request] = []

    def script(request: Request) -> Reply:
        seen.append(request)
        return Reply("ok")

    message = {"role": "user", "content": f"the kernel failed: KeyError {SECRET!r}"}
    with running_llm(script) as llm:
        answer = client(llm.url, store).complete(
            call_id="s|fixer|c|1", role="fixer", messages=[message], task="silu"
        )
    assert answer.text == "ok"
    assert SECRET not in json.dumps(seen[0].messages)
    assert "[redacted]" in seen[0].user
    call = next(iter(Recorder(store).of_type("llm:s|fixer|c|1", LLMCallCompleted)))
    assert SECRET not in store.get_text(call.prompt_blob)


def test_the_ledger_rebuilt_from_the_log_is_the_one_kept_while_calling() -> None:
    """A failed attempt is in the log but neither billed nor counted, live or rebuilt."""
    store = MemoryEventStore()
    replies = iter([Reply(status=503), Reply("first answer"), Reply("second answer")])
    with running_llm(lambda _r: next(replies)) as llm:
        live = client(llm.url, store)
        for n in (1, 2):
            live.complete(call_id=f"s|planner|{n}", role="planner", messages=[], task="silu")
    recorded = list(Recorder(store).of_type("llm:s|planner|1", LLMCallCompleted))
    assert [c.error is None for c in recorded] == [False, True]
    rebuilt = Ledger.from_store(store)
    for task in (None, "silu"):
        kept, again = live.ledger.spend(task), rebuilt.spend(task)
        assert kept.calls == again.calls == 2
        assert (kept.tokens, kept.cost_usd) == (again.tokens, again.cost_usd)


def test_an_answer_past_the_cap_is_recorded_and_billed_and_read_by_no_role() -> None:
    """A model that ran on (newlines up to its max_tokens) cost what it cost; its answer is
    in the log and the ledger, and the role gets a typed failure instead of the text. Asked
    again (a resumed search), the recorded answer fails the same way, and nothing is sent."""
    store = MemoryEventStore()
    over, at = "\n" * (MAX_ANSWER_CHARS + 1), "x" * MAX_ANSWER_CHARS
    with running_llm(lambda r: Reply(over if r.call_id.endswith("over") else at)) as llm:
        live = client(llm.url, store)
        with pytest.raises(AnswerTooLong, match=f"{MAX_ANSWER_CHARS + 1} characters long"):
            live.complete(call_id="s|summarizer|over", role="summarizer", messages=[], task="t")
        assert live.complete(call_id="s|executor|at", role="executor", messages=[], task="t")
        asked = len(llm.requests)
        with pytest.raises(AnswerTooLong):
            live.complete(call_id="s|summarizer|over", role="summarizer", messages=[], task="t")
        assert len(llm.requests) == asked == 2
    (call,) = Recorder(store).of_type("llm:s|summarizer|over", LLMCallCompleted)
    assert call.error is None
    assert call.response_blob is not None
    assert store.get_text(call.response_blob) == over
    assert live.ledger.spend("t").calls == Ledger.from_store(store).spend("t").calls == 2


def test_an_answer_past_the_cap_in_a_log_from_before_the_cap_replays_to_the_same_failure() -> None:
    """The log of issue 23: a summarizer's 300,000 newlines, recorded as a completed call. A
    restart reads it back and fails the call from the text alone, without asking again."""
    store = MemoryEventStore()
    recorder = Recorder(store)
    recorder.record(
        "llm:s|summarizer|old",
        LLMCallCompleted(
            call_id="s|summarizer|old",
            role="summarizer",
            model="m",
            base_url="http://gone",
            parameters={"attempt": 1, "finish_reason": "length"},
            prompt_blob=recorder.put("[]"),
            response_blob=recorder.put("\n" * 300_000),
            prompt_tokens=1,
            completion_tokens=300_000,
            latency_s=1.0,
            cost_usd=0.0,
        ),
        key="s|summarizer|old#1",
    )
    with running_llm(lambda _r: Reply("a fresh answer")) as llm:
        with pytest.raises(AnswerTooLong, match=r"300000 characters long.*'length'"):
            client(llm.url, store).complete(
                call_id="s|summarizer|old", role="summarizer", messages=[], task="t"
            )
        assert llm.requests == []


def test_a_body_past_the_byte_cap_is_a_failed_attempt_and_not_asked_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(llm_module, "MAX_RESPONSE_BYTES", 10_000)
    store = MemoryEventStore()
    with running_llm(lambda _r: Reply("x" * 20_000)) as llm:
        with pytest.raises(LLMError, match="over 10000 bytes"):
            client(llm.url, store).complete(call_id="c", role="planner", messages=[], task="t")
        assert len(llm.requests) == 1
    (call,) = Recorder(store).of_type("llm:c", LLMCallCompleted)
    assert call.error is not None
    assert "over 10000 bytes" in call.error
    assert call.response_blob is None


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"{}", "choices: Field required"),
        (b"null", "the body: Input should be an object"),
        (b'{"choices": [null]}', "choices.0: Input should be an object"),
        (b'{"choices": [{"message": null}]}', "choices.0.message: Input should be an object"),
        (b'{"choices": [{"message": {"content": 5}}]}', "content: Input should be a valid str"),
        (
            b'{"choices": [{"message": {"content": "ok"}}], "usage": {"prompt_tokens": 1e300}}',
            "usage.prompt_tokens",
        ),
        (b"[" * 10_000 + b"]" * 10_000, "the body: Invalid JSON: recursion limit exceeded"),
        (b"\xff\xfe", "the body: Invalid JSON"),
    ],
)
def test_a_malformed_chat_completion_is_a_recorded_failed_attempt(
    body: bytes, problem: str
) -> None:
    """(The openai package builds its objects without checking them: these came through as an
    AttributeError, a TypeError or a ValidationError of the event, none of them recorded.)"""
    store = MemoryEventStore()
    with (
        running_llm(lambda _r: Reply(raw=body)) as llm,
        pytest.raises(LLMError, match="not a chat completion") as caught,
    ):
        client(llm.url, store, attempts=1).complete(
            call_id="c", role="planner", messages=[], task="t"
        )
    assert problem in caught.value.message
    (call,) = Recorder(store).of_type("llm:c", LLMCallCompleted)
    assert call.error == caught.value.message


@pytest.mark.parametrize("kind", ["missing", "negative"])
def test_usage_an_endpoint_omits_or_reports_below_zero_is_estimated_and_the_budget_holds(
    kind: Literal["missing", "negative"],
) -> None:
    """(Against a 4,000-token budget, an endpoint that omitted usage got 18 calls, about 29,000
    tokens, recorded as 0; one that reported -1,000,000 a count voided the budget for good.)"""
    store = MemoryEventStore()
    prompt = [{"role": "user", "content": "p" * 3000}]  # 1,000 tokens at 3 characters a token
    with running_llm(lambda _r: Reply("a" * 1500, usage=kind)) as llm:  # and 500 back
        llm_client = client(llm.url, store, budget=Budget(total_tokens=4000))
        answered = 0
        for n in range(10):
            try:
                llm_client.complete(call_id=f"c{n}", role="planner", messages=prompt, task="t")
            except BudgetExhausted:
                break
            answered += 1
    assert answered == 3  # 1,500 tokens a call: the fourth would start past 4,000
    (call,) = Recorder(store).of_type("llm:c0", LLMCallCompleted)
    assert (call.prompt_tokens, call.completion_tokens) == (1000, 500)
    assert call.parameters["usage_estimated"] == "prompt_tokens,completion_tokens"
    assert Ledger.from_store(store).spend().tokens == 4500


def test_a_reported_usage_is_believed_and_not_marked_estimated() -> None:
    store = MemoryEventStore()
    prompt = [{"role": "user", "content": "p" * 3000}]
    with running_llm(lambda _r: Reply("a" * 1500)) as llm:
        client(llm.url, store).complete(call_id="c", role="planner", messages=prompt, task="t")
    (call,) = Recorder(store).of_type("llm:c", LLMCallCompleted)
    assert (call.prompt_tokens, call.completion_tokens) == (751, 376)  # the server's 4 a token
    assert "usage_estimated" not in call.parameters


def test_a_count_below_zero_in_an_older_log_never_lowers_the_ledger() -> None:
    store = MemoryEventStore()
    recorder = Recorder(store)
    for n, tokens in enumerate((900, -1_000_000, 100)):
        recorder.record(
            f"llm:c{n}",
            LLMCallCompleted(
                call_id=f"c{n}",
                role="planner",
                model="m",
                base_url="http://x",
                parameters={},
                prompt_blob="0" * 64,
                response_blob="0" * 64,
                prompt_tokens=tokens,
                completion_tokens=tokens,
                cost_usd=tokens / 1e6,
                latency_s=0.1,
                task="t",
                error=None,
            ),
            key=f"c{n}",
        )
    spend = Ledger.from_store(store).spend()
    assert (spend.calls, spend.tokens) == (3, 2000)
    assert spend.cost_usd == pytest.approx(0.001)


def test_a_retry_waits_as_long_as_the_endpoints_retry_after_asks_up_to_a_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """(`Retry-After: 30` was ignored: the retries came at 1, 2 and 4 s.)"""
    slept: list[float] = []
    backoff = LLMClient._backoff

    def waited(self: LLMClient, tries: int, asked_s: float | None) -> float:
        slept.append(backoff(self, tries, asked_s))
        return 0.0  # the wait itself is time.sleep's

    monkeypatch.setattr(LLMClient, "_backoff", waited)
    asked = iter(["30", "3600", None])

    def script(_request: Request) -> Reply:
        after = next(asked)
        if after is None:
            return Reply("ok")
        return Reply(status=429, headers=(("Retry-After", after),))

    store = MemoryEventStore()
    with running_llm(script) as llm:
        answer = client(llm.url, store, attempts=3).complete(
            call_id="c", role="planner", messages=[], task="t"
        )
    assert answer.text == "ok"
    assert slept == [30.0, 120.0]  # the second asks for an hour: held to retry_after_max_s


def test_retry_after_is_read_in_seconds_milliseconds_or_an_http_date() -> None:
    now = datetime(2026, 11, 27, 12, 0, 0, tzinfo=UTC)
    assert retry_after({"retry-after": "7"}) == 7.0
    assert retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after({"retry-after": "Fri, 27 Nov 2026 12:00:20 GMT"}, now) == 20.0
    assert retry_after({"retry-after": "Fri, 27 Nov 2026 11:00:00 GMT"}, now) == 0.0  # past
    for junk in ("soon", "-5", "1e999", ""):
        assert retry_after({"retry-after": junk}) is None
    assert retry_after({}) is None


def test_an_answer_sent_a_byte_at_a_time_ends_at_the_calls_time_limit() -> None:
    """(Against a server sending a byte every 2 s, a client with a 5 s timeout had not returned
    after 60 s: the transport bounds each read, not the call.)"""
    store = MemoryEventStore()
    with running_llm(lambda _r: Reply("x" * 400, trickle_s=0.05)) as llm:  # about 25 s whole
        started = time.monotonic()
        with pytest.raises(LLMError, match="did not arrive whole within"):
            client(llm.url, store, attempts=1, timeout_s=1.0).complete(
                call_id="c", role="planner", messages=[], task="t"
            )
        took = time.monotonic() - started
    assert took < 10  # the limit plus one pause between bytes, far short of the whole body
    (call,) = Recorder(store).of_type("llm:c", LLMCallCompleted)
    assert call.error is not None
    assert "did not arrive whole" in call.error
