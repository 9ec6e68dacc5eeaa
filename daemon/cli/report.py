"""`accelopt report`: one self-contained HTML file (or JSON) of the log as of any moment."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from daemon.cli.context import app_context
from daemon.cli.options import (
    check_out_folder,
    database_option,
    json_option,
    until_option,
    until_target,
)
from daemon.cli.render import emit_json, write_file
from daemon.views.report.fleet import busy_by_device, listed_jobs
from daemon.views.report.html import render_report, report_view
from daemon.views.report.model import ReportProjection
from daemon.views.report.view import build_view
from store.projections.runner import replay

__all__ = ["report_command"]


@click.command("report")
@click.option("--task", "tasks", multiple=True, help="Only this task (repeatable).")
@until_option
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path("accelopt-report.html"),
    show_default=True,
    help="The HTML file to write.",
)
@json_option
@database_option
@click.pass_context
def report_command(
    ctx: click.Context, tasks: tuple[str, ...], until: str | None, out: Path, as_json: bool
) -> None:
    """The library, each task's latencies and search tree with diffs, the memory's timeline,
    the LLM spend and the fleet's busy time, as one HTML file that works offline."""
    target = until_target(until)
    if not as_json:
        check_out_folder(out)
    store = app_context(ctx).open_store(ctx)
    result = replay(store, ReportProjection(), until=target)
    unknown = sorted(set(tasks) - set(result.state.tasks))
    if unknown:
        raise click.BadParameter(
            f"no task named {', '.join(unknown)} in the log", param_hint="--task"
        )
    as_of = f"position {result.position}" + (f" (--until {until})" if until else "")
    fleet = busy_by_device(listed_jobs(store.engine)) if target is None else []
    if as_json:  # the same view, without the pictures
        data = build_view(result.state, store.get_texts, tasks=tasks or None, as_of=as_of)
        emit_json(dataclasses.asdict(dataclasses.replace(data, fleet=fleet)))
        return
    view = report_view(result.state, store.get_texts, tasks=tasks or None, as_of=as_of,
                       fleet=fleet)  # fmt: skip
    page = render_report(view)
    write_file(out, page)
    click.echo(
        f"{out}: {len(view.tasks)} tasks, {view.totals['candidates']} candidates, "
        f"{view.totals['promotions']} promotions, as of {as_of}",
        err=True,
    )
