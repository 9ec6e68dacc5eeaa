"""The report as one HTML page: the view (daemon.views.report.view) through a Jinja2 template, its
plots inlined as SVG. The page loads nothing (no script, font or style from anywhere), so it
works offline and can be mailed; the live page adds one small script that follows the log."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from daemon.views.report.model import Point, ReportState
from daemon.views.report.plots import cumulative_spend_svg, latency_svg, memory_svg
from daemon.views.report.view import ReportView, build_view

__all__ = ["draw_plots", "main_fragment", "render_report", "report_view", "series_of"]


@functools.cache
def _template() -> Any:
    import jinja2  # noqa: PLC0415 - only the report and the web pages need it

    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("daemon.views.report", "templates"),
        autoescape=True,  # kernels, plans and lessons are LLM text: never markup
        undefined=jinja2.StrictUndefined,
    )
    return environment.get_template("report.html")


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
    return draw_plots(view, series_of(state, view))


def series_of(state: ReportState, view: ReportView) -> Series:
    """The view's tasks' plotted points, copied out of the state (which a fold may change)."""
    return {
        t.name: (
            list(state.tasks[t.name].points),
            list(state.tasks[t.name].beam),
            list(state.tasks[t.name].promotions),
        )
        for t in view.tasks
    }


def draw_plots(view: ReportView, series: Series) -> ReportView:
    for task in view.tasks:
        points, beam, promotions = series[task.name]
        if points or beam:
            task.latency_svg = latency_svg(points, beam, promotions)
    return view


def render_report(view: ReportView, *, live: bool = False) -> str:
    return str(
        _template().render(
            view=view,
            live=live,
            memory_svg=memory_svg(view.memory_active) if view.memory_active else "",
            spend_svg=cumulative_spend_svg(view.spend) if view.spend else "",
        )
    )


def main_fragment(page: str) -> str:
    """The page's `<main>` element alone: what the live page swaps in when the log moves."""
    start = page.index('<main id="main">')
    end = page.index("</main>", start) + len("</main>")
    return page[start:end]
