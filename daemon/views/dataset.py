"""The dataset export (`accelopt export-dataset`): one JSON object per profiled candidate, the
training data that reinforcement-learning work mines from a run.

A candidate is profiled when a `ProfileRecorded` of purpose "baseline" or "candidate" names it;
a failed verdict counts (it is a label too). Its line is made at its first such profile, from
what the log held at that position. A re-verification ("reverify") looks again at a kernel that
has its line already and makes none. Every origin is in: the task's own kernel ("baseline", one
per search), the executor's and the fixer's kernels, the swept tunables, and whatever origin a
later schema adds, whose fields reach the line because the candidate's event is passed through
whole (`generated`).

The fold keeps ids and blob hashes, a few per candidate, never a text. `dataset_lines` reads a
line's texts (its kernel, its parent's, its plan) from the blob table when the fold reaches its
profile, so lines leave one at a time whatever the length of the log. A pure fold in log order:
the export up to a position is a prefix of the export of the whole log, on every replay.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agents.ledger import priced
from agents.search.ids import search_of_job
from events.base import Event
from events.catalog import (
    CandidateGenerated,
    KernelSourceChanged,
    LLMCallCompleted,
    PlanProposed,
    ProfileRecorded,
    SearchStarted,
)
from events.codec import DEFAULT_CODEC, Codec
from events.envelope import Envelope
from store.base import EventStore
from store.errors import BlobNotFound
from store.projections.runner import fold_steps

__all__ = ["DatasetFold", "DatasetState", "dataset_lines"]

NO_VERDICT = "job_failed"
"""The error kind of a job that every run of failed on the infrastructure (a worker died, a
device was lost): no verdict on its kernel, not a failure of it."""


@dataclass(frozen=True, slots=True)
class Call:
    """An answered LLM call: the model that wrote a plan or a kernel, and its dollars (None:
    the model has no price)."""

    model: str
    cost_usd: float | None


@dataclass(frozen=True, slots=True)
class Plan:
    blob: str
    call: Call | None


@dataclass(frozen=True, slots=True)
class Generated:
    """A candidate that has no line yet, with the call that wrote it (None: no LLM call of
    ours did)."""

    event: CandidateGenerated
    call: Call | None


@dataclass(frozen=True, slots=True)
class Row:
    """What one line is made of, its texts still blob hashes."""

    position: int
    recorded_at: datetime
    generated: Generated
    profile: ProfileRecorded
    dialect: str | None
    parent_blob: str | None
    plan: Plan | None


@dataclass(slots=True)
class DatasetState:
    """Ids and blob hashes of what a later line may need: never a text."""

    dialects: dict[str, str | None] = field(default_factory=dict)
    """Task revision (its content hash) → its kernel language, as recorded."""
    baselines: dict[str, str] = field(default_factory=dict)
    """Search id → its baseline candidate (a baseline's profile names its search only)."""
    calls: dict[str, Call] = field(default_factory=dict)
    plans: dict[str, Plan] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    """Candidate id → its source's blob: the parent kernel of its children."""
    unprofiled: dict[str, Generated] = field(default_factory=dict)
    row: Row | None = None
    """The line the last event completed, if it completed one."""


class DatasetFold:
    """The fold behind the export; `row` is set by the profile that completes a line."""

    def initial(self) -> DatasetState:
        return DatasetState()

    def apply(self, state: DatasetState, envelope: Envelope[Event]) -> DatasetState:
        event = envelope.event
        state.row = None
        if isinstance(event, KernelSourceChanged):
            state.dialects[event.content_hash] = event.dialect
        elif isinstance(event, SearchStarted):
            state.baselines[event.search_id] = event.baseline_candidate_id
        elif isinstance(event, LLMCallCompleted) and event.error is None:
            cost = max(0.0, event.cost_usd) if priced(event) else None  # as the ledger adds
            state.calls.setdefault(event.call_id, Call(event.model, cost))
        elif isinstance(event, PlanProposed):
            state.plans[event.plan_id] = Plan(event.plan_blob, state.calls.get(event.llm_call_id))
        elif isinstance(event, CandidateGenerated):
            call = state.calls.get(event.llm_call_id) if event.llm_call_id else None
            state.sources[event.candidate_id] = event.source_blob
            state.unprofiled[event.candidate_id] = Generated(event, call)
        elif isinstance(event, ProfileRecorded) and event.purpose != "reverify":
            candidate = event.candidate_id or state.baselines.get(search_of_job(event.job_id))
            generated = state.unprofiled.pop(candidate, None) if candidate else None
            if generated is not None:
                state.row = _row(state, generated, event, envelope)
        return state


def _row(
    state: DatasetState, generated: Generated, profile: ProfileRecorded, at: Envelope[Event]
) -> Row:
    candidate = generated.event
    parent = candidate.parent_candidate_id
    return Row(
        position=at.position,
        recorded_at=at.recorded_at,
        generated=generated,
        profile=profile,
        dialect=profile.dialect or state.dialects.get(profile.task_source_hash),
        parent_blob=state.sources.get(parent) if parent else None,
        plan=state.plans.get(candidate.plan_id) if candidate.plan_id else None,
    )


def dataset_lines(
    store: EventStore, *, until: int | datetime | None = None, codec: Codec = DEFAULT_CODEC
) -> Iterator[dict[str, Any]]:
    """The export's lines in log order, as of `until` (a position or a time; None: the head),
    each made when the fold reaches it; the fields are docs/usage.md's."""
    for state in fold_steps(store, DatasetFold(), until=until, codec=codec):
        if state.row is not None:
            yield _line(state.row, _texts(store, state.row))


def _texts(store: EventStore, row: Row) -> dict[str, str]:
    """The row's texts from the blob table; a blob the log names but does not hold is an
    error (a line without its kernel is no training example)."""
    wanted = {
        "kernel": row.generated.event.source_blob,
        "parent kernel": row.parent_blob,
        "plan": row.plan.blob if row.plan else None,
    }
    texts = store.get_texts(h for h in wanted.values() if h is not None)
    for what, blob in wanted.items():
        if blob is not None and blob not in texts:
            raise BlobNotFound(
                f"the {what} of candidate {row.generated.event.candidate_id} (profiled at "
                f"position {row.position}) is blob {blob}, which the log does not hold"
            )
    return texts


def _verdict(profile: ProfileRecorded) -> str:
    """What the profile says of the kernel; a job the infrastructure gave up says nothing."""
    if profile.correct:
        return "correct"
    return "no_verdict" if profile.error_kind == NO_VERDICT else "failed"


def _line(row: Row, texts: dict[str, str]) -> dict[str, Any]:
    candidate, profile, plan = row.generated.event, row.profile, row.plan
    call, plan_call = row.generated.call, plan.call if plan else None
    return {
        "position": row.position,
        "recorded_at": row.recorded_at.isoformat(),
        "task": profile.task,
        "revision": profile.task_source_hash,
        "dialect": row.dialect,
        "backend": profile.backend,
        "target": profile.target,
        "candidate_id": candidate.candidate_id,
        "origin": candidate.origin,
        "parent_id": candidate.parent_candidate_id,
        "parent_source": texts[row.parent_blob] if row.parent_blob else None,
        "plan_id": candidate.plan_id,
        "plan": texts[plan.blob] if plan else None,
        "source": texts[candidate.source_blob],
        "verdict": _verdict(profile),
        "error_kind": profile.error_kind,
        "error_message": profile.error_message,
        "latency_ms": profile.latency_ms,
        "latency_kind": profile.latency_kind,
        "latency_stats": profile.latency_stats,
        "pct_of_peak": profile.pct_of_peak,
        "counters": profile.counters,
        "model": call.model if call else None,
        "cost_usd": call.cost_usd if call else None,
        "plan_model": plan_call.model if plan_call else None,
        "plan_cost_usd": plan_call.cost_usd if plan_call else None,
        "generated": candidate.model_dump(mode="json"),
        "profiled": profile.model_dump(mode="json"),
    }
