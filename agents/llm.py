"""The LLM client: Chat Completions on any OpenAI-compatible endpoint, every call recorded.

A call has an id that says what it is for (the search, the iteration, the role, the parent,
the plan and sample), which makes it resumable: if the log already holds a completed answer
for that id, the answer is read back and no request is sent, so a restarted search or a
replay never calls the API for work already done. Each failed attempt (HTTP 429/5xx, a
timeout, a refused request) is recorded too, with its error, before the next try.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any

import openai

from agents.config import Budget, LLMConfig
from agents.ledger import Ledger
from events.catalog import LLMCallCompleted, LLMRole
from store.recorder import Recorder

__all__ = ["BudgetExhausted", "Completion", "LLMClient", "LLMError"]

CALL_HEADER = "X-Accelopt-Call"
"""Sent with every request: the call id, for gateways' logs (and the tests' server)."""
RETRYABLE_STATUS = frozenset({408, 409, 429}) | frozenset(range(500, 600))


class LLMError(Exception):
    """A call that failed for good (after its retries, or refused outright)."""

    def __init__(self, call_id: str, message: str) -> None:
        super().__init__(f"{call_id}: {message}")
        self.call_id, self.message = call_id, message


class BudgetExhausted(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Completion:
    call_id: str
    role: LLMRole
    model: str
    text: str
    finish_reason: str
    prompt_tokens: int
    completion_tokens: int
    replayed: bool
    """True when the answer was read from the log instead of asked for."""


@dataclass(frozen=True)
class _Request:
    call_id: str
    role: LLMRole
    messages: list[dict[str, str]]
    task: str | None
    seed: int | None
    prompt_blob: str


class _Attempt(Exception):
    """One failed attempt; `retry` says whether another may succeed."""

    def __init__(self, message: str, *, retry: bool) -> None:
        super().__init__(message)
        self.message, self.retry = message, retry


class LLMClient:
    def __init__(
        self,
        config: LLMConfig,
        recorder: Recorder,
        ledger: Ledger,
        budget: Budget,
    ) -> None:
        self.config = config
        self.recorder = recorder
        self.ledger = ledger
        self.budget = budget
        self._gate = threading.Semaphore(config.max_concurrency)
        self._clients: dict[tuple[str, str], openai.OpenAI] = {}
        self._lock = threading.Lock()

    def _client(self, role: LLMRole) -> openai.OpenAI:
        settings = self.config.roles[role]
        key = (settings.base_url, settings.api_key.get_secret_value())
        with self._lock:
            if key not in self._clients:
                self._clients[key] = openai.OpenAI(
                    base_url=settings.base_url,
                    api_key=key[1],
                    max_retries=0,  # retries are ours, so that each attempt is recorded
                    timeout=self.config.timeout_s,
                )
            return self._clients[key]

    def model(self, role: LLMRole) -> str:
        return self.config.roles[role].model

    def complete(
        self,
        *,
        call_id: str,
        role: LLMRole,
        messages: list[dict[str, str]],
        task: str | None,
        seed: int | None = None,
    ) -> Completion:
        """The answer to `messages`: recorded earlier under `call_id`, or asked for now. What
        is sent passes the store's scrubber first: a secret in an error message shown to the
        fixer goes no further than this process."""
        scrubber = self.recorder.store.scrubber
        messages = [{**m, "content": scrubber.text(m["content"])} for m in messages]
        stream = f"llm:{call_id}"
        earlier = list(self.recorder.of_type(stream, LLMCallCompleted))
        for call in earlier:
            if call.error is None and call.response_blob is not None:
                return self._replayed(call)
        reason = self.ledger.exhausted(self.budget, task)
        if reason is not None:
            raise BudgetExhausted(reason)
        attempt = len(earlier)
        prompt_blob = self.recorder.put(json.dumps(messages, ensure_ascii=False))
        for tries in range(self.config.max_attempts):
            attempt += 1
            try:
                with self._gate:
                    return self._ask(
                        _Request(call_id, role, messages, task, seed, prompt_blob), attempt
                    )
            except _Attempt as failed:
                if not failed.retry or tries + 1 == self.config.max_attempts:
                    raise LLMError(call_id, failed.message) from None
                time.sleep(self.config.retry_base_s * 2**tries)
        raise AssertionError("unreachable")

    def _replayed(self, call: LLMCallCompleted) -> Completion:
        assert call.response_blob is not None
        return Completion(
            call_id=call.call_id,
            role=call.role,
            model=call.model,
            text=self.recorder.text(call.response_blob),
            finish_reason=str(call.parameters.get("finish_reason", "stop")),
            prompt_tokens=call.prompt_tokens,
            completion_tokens=call.completion_tokens,
            replayed=True,
        )

    def _parameters(self, role: LLMRole, seed: int | None) -> dict[str, Any]:
        settings = self.config.roles[role]
        parameters: dict[str, Any] = {}
        if settings.temperature is not None:
            parameters["temperature"] = settings.temperature
        if settings.max_tokens is not None:
            parameters["max_tokens"] = settings.max_tokens
        if settings.reasoning_effort is not None:
            parameters["reasoning_effort"] = settings.reasoning_effort
        if seed is not None:
            parameters["seed"] = seed
        return parameters

    def _ask(self, request: _Request, attempt: int) -> Completion:
        call_id, role = request.call_id, request.role
        settings = self.config.roles[role]
        parameters = self._parameters(role, request.seed)
        started = time.monotonic()

        def record(**fields: Any) -> LLMCallCompleted:
            event = LLMCallCompleted(
                call_id=call_id,
                role=role,
                model=settings.model,
                base_url=settings.base_url,
                parameters={**parameters, "attempt": attempt, **fields.pop("extra", {})},
                prompt_blob=request.prompt_blob,
                latency_s=time.monotonic() - started,
                task=request.task,
                **fields,
            )
            self.recorder.record(f"llm:{call_id}", event, key=f"{call_id}#{attempt}")
            return event

        try:
            response = self._client(role).chat.completions.create(
                model=settings.model,
                messages=request.messages,  # type: ignore[arg-type]
                extra_headers={CALL_HEADER: call_id},
                **parameters,
            )
        except openai.APIStatusError as e:
            failed: _Attempt | None = _Attempt(
                f"HTTP {e.status_code}: {_short(e.message)}",
                retry=e.status_code in RETRYABLE_STATUS,
            )
        except (openai.APITimeoutError, openai.APIConnectionError) as e:
            failed = _Attempt(f"{type(e).__name__}: {_short(str(e))}", retry=True)
        except (openai.APIError, ValueError) as e:
            # an answer that is not a Chat Completion (HTTP 200 with a body that is not its
            # JSON): recorded like any failed attempt, so that retries and budgets apply
            failed = _Attempt(
                f"not a chat completion: {type(e).__name__}: {_short(str(e))}", retry=True
            )
        else:
            failed = None
        if failed is not None:
            record(
                response_blob=None,
                prompt_tokens=0,
                completion_tokens=0,
                cost_usd=0.0,
                error=failed.message,
            )
            raise failed
        choice = response.choices[0] if response.choices else None
        text = (choice.message.content or "") if choice else ""
        finish = str(choice.finish_reason) if choice else "no_choice"
        usage = response.usage
        prompt_tokens = usage.prompt_tokens if usage else 0
        completion_tokens = usage.completion_tokens if usage else 0
        cost = self.config.cost(settings.model, prompt_tokens, completion_tokens)
        event = record(
            response_blob=self.recorder.put(text),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=cost or 0.0,
            error=None,
            extra={"finish_reason": finish, "priced": cost is not None},
        )
        self.ledger.record(event)
        return Completion(
            call_id, role, settings.model, text, finish, prompt_tokens, completion_tokens, False
        )


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
