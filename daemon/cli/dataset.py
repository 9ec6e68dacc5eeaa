"""`accelopt export-dataset`: the log's profiled candidates as JSON lines, the training data a
run leaves (daemon/views/dataset.py makes the lines)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from daemon.cli.context import app_context
from daemon.cli.options import check_out_folder, database_option, until_option, until_target
from daemon.cli.render import replaced_whole
from daemon.views.dataset import dataset_lines
from store.projections.runner import resolve_until

__all__ = ["export_dataset_command"]


@click.command("export-dataset")
@click.option(
    "--out",
    required=True,
    metavar="FILE.jsonl",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The JSON-lines file to write; it is replaced whole when the export is done, and left "
    "as it was if the export fails.",
)
@until_option
@database_option
@click.pass_context
def export_dataset_command(ctx: click.Context, out: Path, until: str | None) -> None:
    """One JSON line per profiled candidate (task, platform, parent, plan, kernel, verdict,
    latency and its kind, counters, model, origin, dollars), as of now or any earlier moment.

    A candidate's line is made at its first profile, failed ones included; the baselines and the
    swept tunables are in, each with its origin. The export as of a position is a prefix of the
    export of the whole log. The fields are in docs/usage.md.
    """
    target = until_target(until)
    check_out_folder(out)
    store = app_context(ctx).open_store(ctx)
    position = resolve_until(store, target)
    count = 0
    with replaced_whole(out) as handle:
        for line in dataset_lines(store, until=position):
            handle.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
            count += 1
    click.echo(f"{out}: {count} profiled candidates, as of position {position}", err=True)
