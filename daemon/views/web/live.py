"""The live page and its updates: the whole page (`/`), and the sections that changed since a
position of the log (`/api/sections`), each drawn again only when its version moved.

A long log's page is tens of megabytes and its plots take seconds to draw, so an open page
does not fetch it again when the log moves: it asks for the sections whose version is newer
than its own position, and gets those alone, as JSON. A page far behind gets its changes in
parts of about SECTIONS_BYTES each, oldest changes first; each reply says how far it brings the
page (`through`), and the page asks again until it is at the head."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from daemon.views.report.html import (
    Series,
    draw_plots,
    render_report,
    render_sections,
    series_of,
)
from daemon.views.report.model import TaskReport
from daemon.views.report.sections import TASK, Placement, page_order, task_section
from daemon.views.report.view import ReportView, build_view
from daemon.views.web.follow import Follower
from store.sql import SqlEventStore

__all__ = ["SECTIONS_BYTES", "LivePage"]

SECTIONS_BYTES = 1_000_000
"""A reply's sections, in characters of HTML, past which the rest waits for the next ask. A
reply holds the sections of at least one log position (five at most: an event changes no
more), so a section larger than this still gets through."""
FILTERS_KEPT = 2
"""Task lists (`?task=`) whose drawn sections are kept: each keeps a whole page's worth."""


_Extent = tuple[tuple[int, int], ...]
"""Of a task's profiles, beam selections and promotions (its plot's points, each list in log
order, a new point at its end): how many, and the log position of the last. A plot whose
points are as far as they were is as it was."""


def _extent(task: TaskReport) -> _Extent:
    lists = (task.points, task.beam, task.promotions)
    return tuple((len(points), points[-1].position if points else 0) for points in lists)


@dataclass
class _Look:
    """The page of one task list as of one log position: its view (plots not drawn), each
    section's version, how far each task's plotted points go, and the points of the tasks whose
    plots must be drawn again."""

    position: int
    view: ReportView
    order: list[Placement]
    versions: dict[str, int]
    extents: dict[str, _Extent]
    series: Series


class LivePage:
    def __init__(self, follower: Follower, store: SqlEventStore) -> None:
        self.follower = follower
        self.store = store
        self._plots: dict[str, tuple[_Extent, str]] = {}
        """Task → (how far its points go, its latency plot): what takes the time to draw."""
        self._drawn: OrderedDict[tuple[str, ...], dict[str, tuple[int, str]]] = OrderedDict()
        """Task list → section → (version, HTML)."""
        self._lock = threading.Lock()  # one drawing at a time: the others then take it

    def page(self, tasks: list[str] | None) -> str:
        """The whole page of `tasks` (all when None), as of the log's head."""
        with self._lock:
            look = self._look(tasks, since=None)
            drawn = self._draw(look, tasks, [p.section for p in look.order])
            return render_report(look.view, versions=look.versions.__getitem__, drawn=drawn)

    def changes(self, tasks: list[str] | None, since: int) -> dict[str, Any]:
        """The sections of the page of `tasks` changed after log position `since` (the
        page's own), oldest changes first up to SECTIONS_BYTES, each with its version and
        its place; `through`: the position the page is up to date with once they are in.
        `reload`: the page is of a position this log has not reached (another log)."""
        with self._lock:
            look = self._look(tasks, since=since)
            if since > look.position:
                return {"head": look.position, "through": since, "reload": True, "sections": []}
            stale = sorted((p for p in look.order if look.versions[p.section] > since),
                           key=lambda p: look.versions[p.section])  # fmt: skip
            sent: dict[str, str] = {}
            size, through = 0, look.position
            for version, placements in groupby(stale, key=lambda p: look.versions[p.section]):
                group = self._draw(look, tasks, [p.section for p in placements])
                grown = size + sum(len(html) for html in group.values())
                if sent and grown > SECTIONS_BYTES:
                    through = version - 1  # this position's changes and later ones: next time
                    break
                sent |= group
                size = grown
            return {
                "head": look.position,
                "through": through,
                "reload": False,
                "sections": [
                    {"id": p.section, "version": look.versions[p.section], "html": sent[p.section],
                     "parent": p.parent, "before": p.before}
                    for p in look.order
                    if p.section in sent
                ],
            }  # fmt: skip

    def _look(self, tasks: list[str] | None, *, since: int | None) -> _Look:
        """The view as of the head, with the state held only meanwhile; `since`: the sections
        of the page at that position need drawing only if they changed since (None: all), so
        only the tasks changed since get their trees and diffs built."""
        follower = self.follower
        with follower.lock:  # the data, out of the state
            position = follower.catch_up()
            state = follower.report
            changed = None if since is None else {
                n for n in state.tasks if follower.versions.of(task_section(n)) > since
            }  # fmt: skip
            view = build_view(state, self.store.get_texts, tasks=tasks,
                              as_of=f"position {position}", detailed=changed)  # fmt: skip
            order = page_order([t.name for t in view.tasks])
            versions = {p.section: follower.versions.of(p.section) for p in order}
            extents = {t.name: _extent(state.tasks[t.name]) for t in view.tasks}
            series = series_of(state, [  # the plots to draw again
                t.name for t in view.tasks
                if (changed is None or t.name in changed)
                and self._plots.get(t.name, ((), ""))[0] != extents[t.name]
            ])  # fmt: skip
        return _Look(position, view, order, versions, extents, series)

    def _draw(self, look: _Look, tasks: list[str] | None, sections: list[str]) -> dict[str, str]:
        """`sections` of the look's page, drawn again where their version moved."""
        key = tuple(tasks or ())
        kept = self._drawn.pop(key, {})
        self._drawn[key] = kept  # the newest used, dropped last
        while len(self._drawn) > FILTERS_KEPT:
            self._drawn.popitem(last=False)
        missing = [s for s in sections if kept.get(s, (-1, ""))[0] != look.versions[s]]
        self._plot(look, {s.removeprefix(TASK) for s in missing if s.startswith(TASK)})
        for section, html in render_sections(look.view, missing, look.versions.__getitem__).items():
            kept[section] = (look.versions[section], html)
        return {s: kept[s][1] for s in sections}

    def _plot(self, look: _Look, names: set[str]) -> None:
        """The latency plots of the tasks `names`, drawn again where their points grew."""
        draw_plots(look.view, {n: look.series[n] for n in names if n in look.series})
        for view in look.view.tasks:
            if view.name not in names:
                continue
            if view.name in look.series:
                self._plots[view.name] = (look.extents[view.name], view.latency_svg)
            else:
                view.latency_svg = self._plots[view.name][1]
