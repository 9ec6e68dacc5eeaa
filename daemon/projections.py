"""The projections the CLI and daemon know by name (`accelopt projection NAME`), made as the
settings configure them: a replay with the daemon's configuration starts from its snapshots
and gives the state the daemon held."""

from collections.abc import Callable
from typing import Any

from agents.memory import MemoryProjection
from daemon.coordinator.portfolio import PortfolioProjection
from daemon.settings import Settings
from daemon.views.report.model import ReportProjection
from events.projection import Projection
from store.base import EventStore
from store.projections.library import LibraryProjection

__all__ = ["PROJECTIONS", "make_projection", "present"]

PROJECTIONS: dict[str, Callable[[Settings], Projection[Any]]] = {
    "library": lambda _: LibraryProjection(),
    "memory": lambda settings: MemoryProjection(retention=settings.memory_retention()),
    "portfolio": lambda _: PortfolioProjection(),
    "report": lambda _: ReportProjection(),
}


def make_projection(name: str, settings: Settings) -> Projection[Any]:
    try:
        return PROJECTIONS[name](settings)
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
