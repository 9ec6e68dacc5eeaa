"""The report as one HTML page: the view (daemon.views.report.view) through a Jinja2 template, its
plots inlined as SVG. The page loads nothing (no script, font or style from anywhere), so it
works offline and can be mailed; the live page adds one small script that follows the log.
The page is put together from its sections (sections.py), each drawn on its own, so that the
live page can draw and send again only those that changed."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from daemon.views.report.model import Point, ReportState
from daemon.views.report.plots import cumulative_spend_svg, latency_svg, memory_svg
from daemon.views.report.sections import (
    ECONOMY,
    MEMORY,
    ROW,
    SUMMARY,
    TASK,
    page_order,
)
from daemon.views.report.view import ReportView, TaskView, build_view

__all__ = ["draw_plots", "render_report", "render_sections", "report_view", "series_of"]

Versions = Callable[[str], int]
"""A section's version (the live page's); a static report has none."""


@functools.cache
def _environment() -> Any:
    import jinja2  # noqa: PLC0415 - only the report and the web pages need it

    return jinja2.Environment(
        loader=jinja2.PackageLoader("daemon.views.report", "templates"),
        autoescape=True,  # task names are folder names, kernels, plans and lessons LLM text
        undefined=jinja2.StrictUndefined,
    )


def _template() -> Any:
    return _environment().get_template("report.html")


def _parts() -> Any:
    """The sections' macros (sections.html)."""
    return _environment().get_template("sections.html").module


Series = dict[str, tuple[list[Point], list[Point], list[Point]]]
"""Per task: its profiles, the beam's best and the promotions, as plotted."""


def report_view(
    state: ReportState,
    texts: Callable[[Iterable[str]], dict[str, str]],
    *,
    tasks: Sequence[str] | None = None,
    as_of: str = "",
    fleet: list[dict[str, Any]] | None = None,
) -> ReportView:
    """The view with its plots drawn."""
    view = build_view(state, texts, tasks=tasks, as_of=as_of)
    view.fleet = fleet or []
    return draw_plots(view, series_of(state, [t.name for t in view.tasks]))


def series_of(state: ReportState, tasks: Iterable[str]) -> Series:
    """The plotted points of `tasks`, copied out of the state (which a fold may change)."""
    return {
        name: (
            list(state.tasks[name].points),
            list(state.tasks[name].beam),
            list(state.tasks[name].promotions),
        )
        for name in tasks
    }


def draw_plots(view: ReportView, series: Series) -> ReportView:
    """Each of the view's tasks in `series` gets its latency plot (the others keep theirs)."""
    for task in view.tasks:
        points, beam, promotions = series.get(task.name, ([], [], []))
        if points or beam:
            task.latency_svg = latency_svg(points, beam, promotions)
    return view


def render_sections(
    view: ReportView, sections: Iterable[str], versions: Versions | None = None
) -> dict[str, str]:
    """The HTML of each of `sections` (ids, sections.py) of the view's page; marked with its
    version for the live page when `versions` are given."""
    parts = _parts()
    tasks: dict[str, TaskView] = {t.name: t for t in view.tasks}
    drawn = {}
    for section in sections:
        version = versions(section) if versions is not None else None
        if section == SUMMARY:
            html = parts.summary(view, version)
        elif section == MEMORY:
            svg = memory_svg(view.memory_active) if view.memory_active else ""
            html = parts.memory_section(view, svg, version)
        elif section == ECONOMY:
            svg = cumulative_spend_svg(view.spend) if view.spend else ""
            html = parts.economy_section(view, svg, version)
        elif section.startswith(ROW):
            html = parts.library_row(tasks[section.removeprefix(ROW)], version)
        elif section.startswith(TASK):
            html = parts.task_section(tasks[section.removeprefix(TASK)], version)
        else:
            raise ValueError(f"the report has no section {section!r}")
        drawn[section] = str(html)
    return drawn


def render_report(
    view: ReportView,
    *,
    versions: Versions | None = None,
    drawn: Mapping[str, str] | None = None,
) -> str:
    """The whole page; the live page's (its sections marked, and the script that follows the
    log) when `versions` are given. `drawn`: sections already drawn, by id (the live page's,
    kept from earlier); the others are drawn here."""
    from markupsafe import Markup  # noqa: PLC0415 - comes with jinja2

    order = [p.section for p in page_order([t.name for t in view.tasks])]
    sections = dict(drawn or {})
    sections |= render_sections(view, [s for s in order if s not in sections], versions)
    return str(
        _template().render(
            view=view,
            live=versions is not None,
            sections={k: Markup(v) for k, v in sections.items()},  # drawn escaped already
        )
    )
