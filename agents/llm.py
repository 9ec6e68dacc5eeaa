"""The LLM client: Chat Completions on any OpenAI-compatible endpoint, every call recorded.

A call has an id that says what it is for (the search, the iteration, the role, the parent,
the plan and sample), which makes it resumable: if the log already holds a completed answer
for that id, the answer is read back and no request is sent, so a restarted search or a
replay never calls the API for work already done. Each failed attempt (HTTP 429/5xx, a
timeout, a refused request, a body that is not a Chat Completion) is recorded too, with its
error, before the next try.

Nothing an endpoint sends can stall the process that reads it: the body is read up to
MAX_RESPONSE_BYTES and validated field by field, and an answer longer than MAX_ANSWER_CHARS
is recorded and billed but handed to no role (`AnswerTooLong`).
"""

from __future__ import annotations

import email.utils
import json
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import openai
from pydantic import BaseModel, Field, ValidationError

from agents.config import Budget, LLMConfig
from agents.ledger import Ledger
from events.catalog import LLMCallCompleted, LLMRole
from store.recorder import Recorder

__all__ = [
    "MAX_ANSWER_CHARS",
    "MAX_RESPONSE_BYTES",
    "AnswerTooLong",
    "BudgetExhausted",
    "Completion",
    "LLMClient",
    "LLMError",
]

CALL_HEADER = "X-Accelopt-Call"
"""Sent with every request: the call id, for gateways' logs (and the tests' server)."""
RETRYABLE_STATUS = frozenset({408, 409, 429}) | frozenset(range(500, 600))
MAX_ANSWER_CHARS = 256 * 1024
"""The longest answer, in characters, that a role reads. A kernel, a plan or a lesson is a few
thousand characters (the suites' longest kernel is 5,400); an answer fifty times the longest
kernel is a model that ran on, such as one emitting newlines up to its max_tokens, and no role
can use it: its plan would go whole into the executor's prompt, its lesson into every
planner's. Past it the call fails with `AnswerTooLong`. The answer is still recorded, and
billed, and the cap is decided from the text alone, so that an answer in the log (one recorded
before the cap, too) replays to the same failure."""
MAX_RESPONSE_BYTES = 16 * 1024 * 1024
"""The largest HTTP body read as a Chat Completion. An answer at MAX_ANSWER_CHARS takes at
most 12 bytes a character in JSON (`\\ud83d\\ude00` for one emoji): 3 MiB; the rest is room
for the envelope and a reasoning model's `reasoning_content`. Reading stops past it: a body
that large holds no answer a role reads, and read whole it would all be held in memory."""
TOKENS_LIMIT = 2**53
"""A token count past it is not a count: JSON numbers hold integers exactly up to 2**53."""
CHARS_PER_TOKEN = 3
"""For a count the endpoint did not report, or reported below zero: the tokens are estimated as
the characters sent (or received) over this, rounded up. Tokenizers of current models average
3.5 to 4 characters a token on English and code, so 3 over-counts: a budget spent on estimates
runs out early, never late."""


class LLMError(Exception):
    """A call that failed for good (after its retries, or refused outright)."""

    def __init__(self, call_id: str, message: str) -> None:
        super().__init__(f"{call_id}: {message}")
        self.call_id, self.message = call_id, message


class AnswerTooLong(LLMError):
    """An answer past MAX_ANSWER_CHARS: recorded and billed, read by no role."""

    def __init__(self, call_id: str, chars: int, finish_reason: str) -> None:
        super().__init__(
            call_id,
            f"the answer is {chars} characters long, over the {MAX_ANSWER_CHARS} a role reads "
            f"(no kernel, plan or lesson is that long; the model ran on, finish reason "
            f"{finish_reason!r})",
        )


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


class _Message(BaseModel):
    content: str | None = None


class _Choice(BaseModel):
    message: _Message
    finish_reason: str | None = None


class _Usage(BaseModel):
    """What the endpoint says it billed. None (absent) or a negative count is not believed:
    the client estimates it instead (CHARS_PER_TOKEN), so a budget holds against an endpoint
    that omits usage or reports less than nothing."""

    prompt_tokens: int | None = Field(default=None, gt=-TOKENS_LIMIT, lt=TOKENS_LIMIT)
    completion_tokens: int | None = Field(default=None, gt=-TOKENS_LIMIT, lt=TOKENS_LIMIT)


class _ChatCompletion(BaseModel):
    """The fields of a Chat Completion the client reads, each checked (the openai package
    builds its objects without checking them: a `null` message, a number for the text or a
    string for a token count came through as an AttributeError or a TypeError, never
    recorded). Other fields are ignored."""

    choices: list[_Choice]
    usage: _Usage | None = None


class _Attempt(Exception):
    """One failed attempt; `retry` says whether another may succeed, `wait_s` how long the
    endpoint asked to be left alone first (Retry-After), if it did."""

    def __init__(self, message: str, *, retry: bool, wait_s: float | None = None) -> None:
        super().__init__(message)
        self.message, self.retry, self.wait_s = message, retry, wait_s


def retry_after(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """The seconds an answer's `retry-after-ms` or `Retry-After` (seconds, or an HTTP date)
    asks for; None where it names none or names something else."""
    try:
        milliseconds = headers.get("retry-after-ms")
        if milliseconds is not None:
            return max(0.0, float(milliseconds) / 1000)
        value = headers.get("retry-after")
        if value is None:
            return None
        if value.strip().isdigit():
            return float(value)
        when = email.utils.parsedate_to_datetime(value)
    except (ValueError, TypeError, OverflowError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


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
                return _readable(self._replayed(call))
        reason = self.ledger.exhausted(self.budget, task)
        if reason is not None:
            raise BudgetExhausted(reason)
        attempt = len(earlier)
        prompt_blob = self.recorder.put(json.dumps(messages, ensure_ascii=False))
        for tries in range(self.config.max_attempts):
            attempt += 1
            try:
                with self._gate:
                    answer = self._ask(
                        _Request(call_id, role, messages, task, seed, prompt_blob), attempt
                    )
            except _Attempt as failed:
                if not failed.retry or tries + 1 == self.config.max_attempts:
                    raise LLMError(call_id, failed.message) from None
                time.sleep(self._backoff(tries, failed.wait_s))
            else:
                return _readable(answer)
        raise AssertionError("unreachable")

    def _backoff(self, tries: int, asked_s: float | None) -> float:
        """Seconds before the next attempt: the backoff, or what the endpoint asked for if
        longer, up to retry_after_max_s."""
        backoff: float = self.config.retry_base_s * 2.0**tries
        if asked_s is None:
            return backoff
        return max(backoff, min(asked_s, self.config.retry_after_max_s))

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
            with self._client(role).chat.completions.with_streaming_response.create(
                model=settings.model,
                messages=request.messages,  # type: ignore[arg-type]
                extra_headers={CALL_HEADER: call_id},
                **parameters,
            ) as response:
                body = _body(response.iter_bytes(), started + self.config.timeout_s)
            completion = _ChatCompletion.model_validate_json(body)
        except openai.APIStatusError as e:
            failed: _Attempt | None = _Attempt(
                f"HTTP {e.status_code}: {_short(e.message)}",
                retry=e.status_code in RETRYABLE_STATUS,
                wait_s=retry_after(e.response.headers),
            )
        except (openai.APITimeoutError, openai.APIConnectionError) as e:
            failed = _Attempt(f"{type(e).__name__}: {_short(str(e))}", retry=True)
        except _Attempt as e:
            failed = e
        except ValidationError as e:
            # an answer that is not a Chat Completion (HTTP 200 with a body that is not its
            # JSON): recorded like any failed attempt, so that retries and budgets apply
            failed = _Attempt(f"not a chat completion: {_short(_wrong(e))}", retry=True)
        except openai.APIError as e:
            failed = _Attempt(f"{type(e).__name__}: {_short(str(e))}", retry=True)
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
        choice = completion.choices[0] if completion.choices else None
        text = (choice.message.content or "") if choice else ""
        finish = str(choice.finish_reason) if choice else "no_choice"
        usage = completion.usage or _Usage()
        sent = sum(len(m.get("content", "")) for m in request.messages)
        prompt_tokens = _believed(usage.prompt_tokens, sent)
        completion_tokens = _believed(usage.completion_tokens, len(text))
        estimated = [
            name
            for name, reported in (
                ("prompt_tokens", usage.prompt_tokens),
                ("completion_tokens", usage.completion_tokens),
            )
            if reported is None or reported < 0
        ]
        cost = self.config.cost(settings.model, prompt_tokens, completion_tokens)
        extra: dict[str, Any] = {"finish_reason": finish, "priced": cost is not None}
        if estimated:
            extra["usage_estimated"] = ",".join(estimated)
        event = record(
            response_blob=self.recorder.put(text),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=cost or 0.0,
            error=None,
            extra=extra,
        )
        self.ledger.record(event)
        return Completion(
            call_id, role, settings.model, text, finish, prompt_tokens, completion_tokens, False
        )


def _believed(reported: int | None, chars: int) -> int:
    """A reported token count, or the estimate from the characters where it is missing or
    below zero."""
    if reported is not None and reported >= 0:
        return reported
    return -(-chars // CHARS_PER_TOKEN)


def _body(chunks: Iterable[bytes], deadline: float) -> bytes:
    """The response's body, read up to MAX_RESPONSE_BYTES and until `deadline` (monotonic
    seconds), an _Attempt past either. The transport bounds each read (timeout_s); the deadline
    bounds the call, which a body sent a byte at a time would otherwise stretch without end:
    a call ends within timeout_s plus the longest pause between two chunks."""
    read: list[bytes] = []
    size = 0
    try:
        for chunk in chunks:
            if time.monotonic() > deadline:
                raise _Attempt(
                    "the answer did not arrive whole within the call's time limit "
                    f"({size + len(chunk)} bytes so far)",
                    retry=True,
                )
            size += len(chunk)
            if size > MAX_RESPONSE_BYTES:
                raise _Attempt(
                    f"the response is over {MAX_RESPONSE_BYTES} bytes: no answer is that long",
                    retry=False,
                )
            read.append(chunk)
    except _Attempt:
        raise
    except Exception as e:
        # the transport's own errors (a read timeout, a reset): openai translates them only
        # while it sends, and the body is read after
        raise _Attempt(
            f"reading the response: {type(e).__name__}: {_short(str(e))}", retry=True
        ) from None
    return b"".join(read)


def _wrong(error: ValidationError) -> str:
    """What is wrong with a body, on one line: each field's path and the problem."""
    return "; ".join(
        f"{'.'.join(str(part) for part in problem['loc']) or 'the body'}: {problem['msg']}"
        for problem in error.errors(include_url=False)
    )


def _readable(answer: Completion) -> Completion:
    """`answer`, if a role may read it (see MAX_ANSWER_CHARS)."""
    if len(answer.text) > MAX_ANSWER_CHARS:
        raise AnswerTooLong(answer.call_id, len(answer.text), answer.finish_reason)
    return answer


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
