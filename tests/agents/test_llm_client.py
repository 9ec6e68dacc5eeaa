"""The LLM client against a real HTTP server on loopback: answers that are not Chat
Completions are recorded as failed attempts (so retries and budgets apply, and the search goes
on), and what is sent passes the store's scrubber."""

from __future__ import annotations

import json

import pytest

from agents.config import Budget, LLMConfig, RoleConfig
from agents.ledger import Ledger
from agents.llm import LLMClient, LLMError
from events.catalog import LLMCallCompleted
from store.memory import MemoryEventStore
from store.recorder import Recorder
from store.scrub import Scrubber
from tests.support.llm_server import Reply, Request, running_llm

SECRET = "sk-live-" + "0123456789abcdef"


def client(url: str, store: MemoryEventStore) -> LLMClient:
    role = RoleConfig(model="m", base_url=url, api_key=SECRET)  # type: ignore[arg-type]
    config = LLMConfig(
        roles={r: role for r in ("planner", "executor", "summarizer", "fixer")},
        max_attempts=3,
        retry_base_s=0.01,
        timeout_s=5,
    )
    return LLMClient(config, Recorder(store), Ledger.from_store(store), Budget())


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
    assert all(c.error and "not a chat completion" in c.error for c in calls)


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
