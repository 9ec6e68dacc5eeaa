"""What a finished search reports: its end, its best kernel against the baseline, what was
promoted, and what its LLM calls cost.

Everything here is read from the log (the search's `SearchFinished`, the baseline's profile,
the task's promotions, the search's `LLMCallCompleted` events), so the outcome of a resumed or
replayed search is the same as that of an uninterrupted one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from agents.ledger import Spend
from agents.search import ids
from agents.search.profiling import Profiles
from agents.search.promotion import Promotion
from agents.search.record import SearchRecord
from events.catalog import LLMCallCompleted
from events.codec import decode
from store.base import EventStore

__all__ = ["SearchOutcome", "llm_spend", "search_outcome"]


@dataclass
class SearchOutcome:
    task: str
    search_id: str
    reason: str
    detail: str
    iterations: int
    baseline_latency_ms: float | None
    best_latency_ms: float | None
    speedup: float | None
    latency_kind: str | None
    best_candidate: str | None
    promoted_candidate: str | None
    llm_calls: int = 0
    failed_llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_models: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def llm_spend(store: EventStore, search_id: str) -> tuple[Spend, int]:
    """The spend of the search's answered LLM calls, and how many attempts failed (they cost
    nothing, but say how the endpoint behaved)."""
    spend, failed = Spend(), 0
    for stored in store.read_all(types=[LLMCallCompleted.type_name()]):
        call = decode(stored).event
        assert isinstance(call, LLMCallCompleted)
        if not ids.is_call_of(call.call_id, search_id):
            continue
        if call.error is not None:
            failed += 1
            continue
        spend.add(call)
    return spend, failed


def search_outcome(
    *, task: str, record: SearchRecord, profiles: Profiles, promotion: Promotion
) -> SearchOutcome:
    """The outcome of the finished search `record` holds."""
    finished = record.index.finished
    assert finished is not None
    baseline_id = ids.baseline_id(record.search_id)
    baseline = (
        profiles.profile(baseline_id, "baseline")
        if baseline_id in record.index.candidates
        else None
    )
    base_ms = baseline.latency_ms if baseline and baseline.correct else None
    best_ms = finished.best_latency_ms
    spend, failed = llm_spend(record.recorder.store, record.search_id)
    return SearchOutcome(
        task=task,
        search_id=record.search_id,
        reason=finished.reason,
        detail=finished.detail,
        iterations=finished.iterations,
        baseline_latency_ms=base_ms,
        best_latency_ms=best_ms,
        speedup=base_ms / best_ms if base_ms and best_ms else None,
        latency_kind=finished.latency_kind or (baseline.latency_kind if baseline else None),
        best_candidate=finished.best_candidate_id,
        promoted_candidate=promotion.latest()[0],
        llm_calls=spend.calls,
        failed_llm_calls=failed,
        prompt_tokens=spend.prompt_tokens,
        completion_tokens=spend.completion_tokens,
        cost_usd=spend.cost_usd,
        unpriced_models=sorted(spend.unpriced_models),
    )
