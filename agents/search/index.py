"""What a search has recorded so far, indexed for the loop: rebuilt from the search's stream
when a search resumes, and kept current as the loop records."""

from __future__ import annotations

from dataclasses import dataclass, field

from events.base import Event
from events.catalog import (
    BeamSelected,
    CandidateGenerated,
    CandidateRejected,
    ExperienceSummarized,
    PlanProposed,
    SearchFinished,
    SearchStarted,
)

__all__ = ["SearchIndex"]


@dataclass
class SearchIndex:
    started: SearchStarted | None = None
    finished: SearchFinished | None = None
    plans: dict[str, PlanProposed] = field(default_factory=dict)
    candidates: dict[str, CandidateGenerated] = field(default_factory=dict)
    """In the order they were generated."""
    by_hash: dict[str, str] = field(default_factory=dict)
    """Kernel hash → the first candidate with that source."""
    rejected: dict[str, CandidateRejected] = field(default_factory=dict)
    beams: dict[int, BeamSelected] = field(default_factory=dict)
    lessons: dict[str, ExperienceSummarized] = field(default_factory=dict)

    @classmethod
    def of(cls, events: list[Event]) -> SearchIndex:
        index = cls()
        for event in events:
            index.add(event)
        return index

    def add(self, event: Event) -> None:
        if isinstance(event, SearchStarted):
            self.started = event
        elif isinstance(event, SearchFinished):
            self.finished = event
        elif isinstance(event, PlanProposed):
            self.plans[event.plan_id] = event
        elif isinstance(event, CandidateGenerated):
            self.candidates[event.candidate_id] = event
            self.by_hash.setdefault(event.kernel_hash, event.candidate_id)
        elif isinstance(event, CandidateRejected):
            self.rejected[event.candidate_id] = event
        elif isinstance(event, BeamSelected):
            self.beams[event.iteration] = event
        elif isinstance(event, ExperienceSummarized):
            self.lessons[event.item_id] = event

    def of_iteration(self, iteration: int) -> list[CandidateGenerated]:
        return [c for c in self.candidates.values() if c.iteration == iteration]
