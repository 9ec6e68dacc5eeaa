"""One search's stream: what it recorded, indexed, and how it records more.

A search is resumable because everything it decides is written to its stream under an
idempotency key (agents/search/ids.py) before it is acted on, and read back from there when
the search starts again. This is the one place that writes the stream and keeps its
`SearchIndex` current, so the index can never miss an event the stream holds.
"""

from __future__ import annotations

import hashlib

from agents.search import ids
from agents.search.index import SearchIndex
from events.base import Event
from events.catalog import (
    AgentOrigin,
    CandidateGenerated,
    CandidateOrigin,
    CandidateRejected,
    RejectReason,
    SearchFinished,
    SearchStarted,
)
from events.codec import decode
from store.base import EventStore
from store.recorder import Recorder

__all__ = ["SearchRecord", "searches_of"]

MESSAGE_LIMIT = 2000
"""Characters of a message kept in a rejection; a failed profile keeps the whole error, and
the fixer reads it there."""


def searches_of(store: EventStore, task: str) -> tuple[list[SearchStarted], set[str]]:
    """Every search of `task` that started, in log order, and the ids of those that finished."""
    started: list[SearchStarted] = []
    finished: set[str] = set()
    for stored in store.read_all(types=["SearchStarted", "SearchFinished"]):
        event = decode(stored).event
        if isinstance(event, SearchStarted) and event.task == task:
            started.append(event)
        elif isinstance(event, SearchFinished) and event.task == task:
            finished.add(event.search_id)
    return started, finished


class SearchRecord:
    """The stream of one search of `task` (opened with `begin` or `resume`) and its index;
    with `kind` "agent", of an outside agent's session on the task (`agent:<session id>`)."""

    def __init__(self, recorder: Recorder, task: str, kind: str = "search") -> None:
        self.recorder = recorder
        self.task = task
        self.kind = kind
        self.search_id = ""
        self.index = SearchIndex()

    @property
    def stream(self) -> str:
        return f"{self.kind}:{self.search_id}"

    def begin(self, search_id: str) -> None:
        """A new search: nothing recorded yet."""
        self.search_id = search_id
        self.index = SearchIndex()

    def resume(self, search_id: str) -> None:
        """An unfinished search: its index rebuilt from its stream."""
        self.search_id = search_id
        self.index = SearchIndex.of(self.recorder.events(self.stream))

    def record(self, event: Event, key: str) -> None:
        """Append `event` under the step key `key` (made unique to this search); an event
        recorded before under the same key is not recorded twice."""
        self.recorder.record(self.stream, event, key=ids.search_key(self.search_id, key))
        self.index.add(event)

    def put(self, text: str) -> str:
        return self.recorder.put(text)

    def text(self, blob: str) -> str:
        return self.recorder.text(blob)

    def source(self, candidate: str) -> str:
        return self.text(self.index.candidates[candidate].source_blob)

    # --- candidates ---------------------------------------------------------------------

    def candidate(
        self,
        *,
        iteration: int,
        candidate: str,
        source: str,
        origin: CandidateOrigin,
        parent: str | None,
        plan: str | None,
        sample: int,
        call: str | None,
        agent: AgentOrigin | None = None,
        plan_text: str | None = None,
    ) -> str | None:
        """Record a new kernel; returns its id unless it is a duplicate of an earlier one
        (then it is rejected as such, naming the first). `agent` and `plan_text`: an outside
        agent's kernel, who handed it in and its plan."""
        if candidate not in self.index.candidates:
            kernel_hash = hashlib.sha256(source.encode("utf-8")).hexdigest()
            self.record(
                CandidateGenerated(
                    task=self.task,
                    search_id=self.search_id,
                    iteration=iteration,
                    candidate_id=candidate,
                    parent_candidate_id=parent,
                    plan_id=plan,
                    sample_index=sample,
                    origin=origin,
                    kernel_hash=kernel_hash,
                    source_blob=self.put(source),
                    llm_call_id=call,
                    agent=agent,
                    plan_blob=self.put(plan_text) if plan_text is not None else None,
                ),
                key=ids.candidate_key(candidate),
            )
        event = self.index.candidates[candidate]
        first = self.index.by_hash[event.kernel_hash]
        if first != candidate:
            if candidate not in self.index.rejected:
                self.reject(candidate, "duplicate", f"the same source as {first}", first)
            return None
        return candidate

    def reject(
        self, candidate: str, reason: RejectReason, message: str, duplicate_of: str | None = None
    ) -> None:
        """Record why `candidate` is out; only the first reason counts."""
        if candidate in self.index.rejected:
            return
        self.record(
            CandidateRejected(
                task=self.task,
                candidate_id=candidate,
                reason=reason,
                message=message[:MESSAGE_LIMIT],
                duplicate_of=duplicate_of,
            ),
            key=ids.rejected_key(candidate),
        )
