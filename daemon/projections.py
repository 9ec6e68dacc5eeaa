"""The projections the CLI and daemon know by name."""

from collections.abc import Callable
from typing import Any

from events.projection import Projection
from store.projections.library import LibraryProjection

__all__ = ["PROJECTIONS", "make_projection"]

PROJECTIONS: dict[str, Callable[[], Projection[Any]]] = {
    "library": LibraryProjection,
}


def make_projection(name: str) -> Projection[Any]:
    try:
        return PROJECTIONS[name]()
    except KeyError:
        known = ", ".join(sorted(PROJECTIONS))
        raise KeyError(f"no projection named {name!r}; known: {known}") from None
