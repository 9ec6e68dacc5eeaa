"""Whether the live page's section versions move with every change: the log is folded one event
at a time, every section of the page is drawn after each, and a section whose HTML changed
must carry that event's position as its version. (An open page asks only for sections newer
than itself: one that changed without its version moving would stay stale there.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from daemon.views.report import html
from daemon.views.report.html import draw_plots, render_sections, series_of
from daemon.views.report.sections import page_order
from daemon.views.report.view import build_view
from daemon.views.web.follow import Follower
from store.sql import SqlEventStore

__all__ = ["assert_every_change_moves_its_version"]


class _Until:
    """The log as far as `last`, as the follower reads it."""

    def __init__(self, store: SqlEventStore) -> None:
        self.store, self.last = store, 0

    def read_all(self, *, after: int = 0) -> Iterator[Any]:
        return iter(self.store.read_all(after=after, until=self.last))


def assert_every_change_moves_its_version(
    store: SqlEventStore, monkeypatch: pytest.MonkeyPatch
) -> int:
    """Checked at every position of `store`'s log; the number of section changes seen."""
    # the plots as text of what they plot: as telling as the picture, and quick
    monkeypatch.setattr(html, "latency_svg", lambda *series: f"<svg>{series!r}</svg>")
    monkeypatch.setattr(html, "memory_svg", lambda changes: f"<svg>{changes!r}</svg>")
    monkeypatch.setattr(html, "cumulative_spend_svg", lambda spend: f"<svg>{spend!r}</svg>")
    log = _Until(store)
    follower = Follower(log)  # type: ignore[arg-type]  # reads through read_all alone
    before: dict[str, str] = {}
    changes = 0
    for position in range(store.head() + 1):  # from the empty log's page on
        log.last = position
        assert follower.catch_up() == position
        view = build_view(follower.report, store.get_texts)
        names = [t.name for t in view.tasks]
        draw_plots(view, series_of(follower.report, names))
        drawn = render_sections(view, [p.section for p in page_order(names)])
        for section, text in drawn.items():
            if position and before.get(section) != text:
                changes += 1
                assert follower.versions.of(section) == position, (
                    f"{section} changed at position {position} but its version is "
                    f"{follower.versions.of(section)}"
                )
        before = drawn
    return changes
