"""The report's plots, drawn by matplotlib as SVG text to inline in the page: nothing to load,
nothing to run in the browser. Dense scatters are rasterized inside the SVG so that a task with
thousands of profiles stays a small page."""

from __future__ import annotations

import io
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from daemon.views.report.model import Point

__all__ = ["cumulative_spend_svg", "latency_svg", "memory_svg"]

RASTERIZE_OVER = 400
"""Points past which a scatter is embedded as an image inside the SVG."""
KIND_MARK = {"measured": "measured", "estimated": "estimated (cost model)"}


def _pyplot() -> Any:
    import matplotlib  # noqa: PLC0415 - heavy: only the report and the web pages need it

    matplotlib.use("svg", force=True)
    import matplotlib.pyplot as plt  # noqa: PLC0415

    plt.rcParams.update(
        {"svg.fonttype": "none", "font.size": 9, "axes.spines.top": False,
         "axes.spines.right": False, "svg.hashsalt": "accelopt"}
    )  # fmt: skip
    return plt


def _svg(figure: Any) -> str:
    plt = _pyplot()
    buffer = io.StringIO()
    # a fixed layout: fitting the box to the labels costs as much as drawing the plot
    figure.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg") :]  # the XML prologue has no place inside HTML


def _times(points: Sequence[Point]) -> list[datetime]:
    return [datetime.fromisoformat(p.at) for p in points]


def latency_svg(points: Sequence[Point], beam: Sequence[Point], promotions: Sequence[Point]) -> str:
    """Every profiled candidate's latency against the log position and against time, the
    beam's best as a step line, the promotions as stars."""
    plt = _pyplot()
    from matplotlib.dates import DateFormatter  # noqa: PLC0415
    from matplotlib.ticker import MaxNLocator  # noqa: PLC0415

    kind = next((p.latency_kind for p in [*points, *beam]), "estimated")
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.2), sharey=True)
    figure.subplots_adjust(left=0.08, right=0.99, bottom=0.22, top=0.96, wspace=0.06)
    axes[0].xaxis.set_major_locator(MaxNLocator(5, integer=True))
    axes[0].yaxis.set_major_locator(MaxNLocator(5))
    axes[1].xaxis.set_major_locator(MaxNLocator(4))  # dates are day numbers to matplotlib
    axes[1].xaxis.set_major_formatter(DateFormatter("%m-%d %H:%M"))  # type: ignore[no-untyped-call]
    for ax, x_of, label in (
        (axes[0], lambda ps: [p.position for p in ps], "event position"),
        (axes[1], _times, "time (UTC)"),
    ):
        ax.scatter(
            x_of(points),
            [p.latency_ms for p in points],
            s=9,
            alpha=0.55,
            color="#4a7ab5",
            label="candidate",
            rasterized=len(points) > RASTERIZE_OVER,
        )
        if beam:
            ax.step(x_of(beam), [p.latency_ms for p in beam], where="post", color="#2a9d5c",
                    label="beam's best")  # fmt: skip
        if promotions:
            ax.scatter(x_of(promotions), [p.latency_ms for p in promotions], marker="*", s=140,
                       color="#e08a00", zorder=3, label="promoted")  # fmt: skip
        ax.set_xlabel(label)
        ax.grid(alpha=0.25)
    _pad(axes[0], [p.position for p in [*points, *beam]], 5.0)
    _pad(axes[1], [matplotlib_day(p.at) for p in [*points, *beam]], 60 / 86400)
    axes[0].set_ylabel(f"latency, ms — {KIND_MARK.get(kind, kind)}")
    axes[0].legend(loc="upper right", fontsize=8)
    return _svg(figure)


def _pad(ax: Any, xs: Sequence[float], margin: float) -> None:
    """A plot of one moment still gets a readable axis: `margin` on each side of it."""
    if xs and max(xs) - min(xs) < margin:
        ax.set_xlim(min(xs) - margin, max(xs) + margin)


def matplotlib_day(at: str) -> float:
    """A time as matplotlib plots it (days since 1970)."""
    return datetime.fromisoformat(at).timestamp() / 86400


def memory_svg(changes: Sequence[tuple[int, int]]) -> str:
    """Active lessons against the log position: (position, active after the change)."""
    plt = _pyplot()
    figure, ax = plt.subplots(figsize=(10, 2.2))
    figure.subplots_adjust(left=0.08, right=0.99, bottom=0.25, top=0.95)
    ax.step([p for p, _ in changes], [n for _, n in changes], where="post", color="#7a4ab5")
    ax.set_xlabel("event position")
    ax.set_ylabel("active lessons")
    ax.grid(alpha=0.25)
    return _svg(figure)


def cumulative_spend_svg(spend: Sequence[tuple[str, float]]) -> str:
    """Dollars spent on LLM calls so far, against time: (time, cumulative dollars)."""
    plt = _pyplot()
    figure, ax = plt.subplots(figsize=(10, 2.2))
    figure.subplots_adjust(left=0.08, right=0.99, bottom=0.25, top=0.95)
    ax.plot([datetime.fromisoformat(t) for t, _ in spend], [d for _, d in spend],
            color="#b54a4a")  # fmt: skip
    ax.set_xlabel("time (UTC)")
    ax.set_ylabel("LLM spend, $")
    ax.grid(alpha=0.25)
    return _svg(figure)
