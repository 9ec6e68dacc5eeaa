"""The projection contract: a deterministic fold from events to a read model.

A projection reads nothing but its state and the envelope: no clock, no randomness, no
environment, no I/O. Everything nondeterministic (timings, LLM answers, host facts) is in
the events. That is what makes a replay to any position show exactly what was known then.
"""

from collections.abc import Iterable
from typing import Any, Protocol, TypeVar

from events.base import Event
from events.envelope import Envelope

__all__ = ["Fold", "Projection", "fold"]

S = TypeVar("S")


class Fold(Protocol[S]):
    """A deterministic fold: all a reader of the log from position 0 needs (the dataset
    export), where nothing is persisted."""

    def initial(self) -> S:
        """A fresh state, as before the first event."""
        ...

    def apply(self, state: S, envelope: Envelope[Event]) -> S:
        """Fold one event; may update `state` in place and must return the state to keep."""
        ...


class Projection(Fold[S], Protocol[S]):
    """A named, versioned fold whose state can be saved. Bump `version` whenever `apply`
    would fold differently: persisted states and snapshots of another version are then
    rebuilt, never reused."""

    name: str
    version: str

    def dump(self, state: S) -> dict[str, Any]:
        """The state as a JSON object; `load(dump(s))` folds on exactly like `s`."""
        ...

    def load(self, data: dict[str, Any]) -> S:
        """The state back from `dump`."""
        ...


def fold(projection: Fold[S], envelopes: Iterable[Envelope[Event]], state: S) -> S:
    for envelope in envelopes:
        state = projection.apply(state, envelope)
    return state
