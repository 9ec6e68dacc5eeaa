"""The cost ledger: tokens and dollars per task and in total, from the recorded LLM calls.

It is the sum of the `LLMCallCompleted` events (read once at start, then kept current by the
client), so the ledger and the log can never disagree; budgets are checked against it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from agents.config import Budget
from events.catalog import LLMCallCompleted
from events.codec import decode
from store.base import EventStore

__all__ = ["Ledger", "Spend", "priced"]

TOTAL = "*"


def priced(call: LLMCallCompleted) -> bool:
    """Whether the call's `cost_usd` is what it cost: a model without a price
    (ACCELOPT_LLM_PRICES) is recorded at 0 with `"priced": false`; a call recorded before that
    mark existed is taken at its word."""
    return call.parameters.get("priced") is not False


@dataclass
class Spend:
    calls: int = 0
    """Answered calls (a failed attempt is recorded, but neither billed nor counted)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_models: set[str] = field(default_factory=set)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, call: LLMCallCompleted) -> None:
        """Never less than before: a count below zero in a log written before the client
        estimated such counts adds nothing."""
        self.calls += 1
        self.prompt_tokens += max(0, call.prompt_tokens)
        self.completion_tokens += max(0, call.completion_tokens)
        self.cost_usd += max(0.0, call.cost_usd)
        if not priced(call):
            self.unpriced_models.add(call.model)


class Ledger:
    def __init__(self) -> None:
        self._spend: dict[str, Spend] = {TOTAL: Spend()}
        self._lock = threading.Lock()

    @classmethod
    def from_store(cls, store: EventStore) -> Ledger:
        ledger = cls()
        for stored in store.read_all(types=[LLMCallCompleted.type_name()]):
            event = decode(stored).event
            assert isinstance(event, LLMCallCompleted)
            ledger.record(event)
        return ledger

    def record(self, call: LLMCallCompleted) -> None:
        if call.error is not None:
            return
        with self._lock:
            self._spend[TOTAL].add(call)
            if call.task is not None:
                self._spend.setdefault(call.task, Spend()).add(call)

    def spend(self, task: str | None = None) -> Spend:
        with self._lock:
            found = self._spend.get(TOTAL if task is None else task, Spend())
            return Spend(
                found.calls,
                found.prompt_tokens,
                found.completion_tokens,
                found.cost_usd,
                set(found.unpriced_models),
            )

    def exhausted(self, budget: Budget, task: str | None) -> str | None:
        """Why the budget allows no further call for `task`, or None."""
        total = self.spend()
        limits = [
            ("total", total.tokens, budget.total_tokens, "tokens"),
            ("total", total.cost_usd, budget.total_usd, "USD"),
        ]
        if task is not None:
            mine = self.spend(task)
            limits += [
                (f"task {task}", mine.tokens, budget.task_tokens, "tokens"),
                (f"task {task}", mine.cost_usd, budget.task_usd, "USD"),
            ]
        for scope, spent, limit, unit in limits:
            if limit is not None and spent >= limit:
                return f"the {scope} budget of {limit:g} {unit} is spent ({spent:g} {unit})"
        return None
