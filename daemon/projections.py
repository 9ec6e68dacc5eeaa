"""The projections the CLI and daemon know by name (`accelopt projection NAME`)."""

from collections.abc import Callable
from typing import Any

from agents.memory import MemoryProjection
from daemon.coordinator.portfolio import PortfolioProjection
from daemon.views.report.model import ReportProjection
from events.projection import Projection
from store.base import EventStore
from store.projections.library import LibraryProjection

__all__ = ["PROJECTIONS", "make_projection", "present"]

PROJECTIONS: dict[str, Callable[[], Projection[Any]]] = {
    "library": LibraryProjection,
    "memory": MemoryProjection,
    "portfolio": PortfolioProjection,
    "report": ReportProjection,
}


def make_projection(name: str) -> Projection[Any]:
    try:
        return PROJECTIONS[name]()
    except KeyError:
        known = ", ".join(sorted(PROJECTIONS))
        raise KeyError(f"no projection named {name!r}; known: {known}") from None


def present(projection: Projection[Any], state: Any, store: EventStore) -> dict[str, Any]:
    """The state as people and scripts read it: a projection that keeps texts as blob hashes
    says how to show them (`present`); the others show their dump."""
    presenter = getattr(projection, "present", None)
    if presenter is not None:
        shown: dict[str, Any] = presenter(state, store.get_text)
        return shown
    return projection.dump(state)
