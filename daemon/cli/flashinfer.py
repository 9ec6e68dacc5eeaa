"""The FlashInfer-Bench commands of `accelopt`: `import-flashinfer` (a Trace dataset's
definitions as task folders) and the flashinfer format of `export` (a task's kernel as a
Solution with its Traces). flashinfer_bench and torch are imported inside the commands only
(daemon.flashinfer.package says how to install them where missing), so `--help` stays fast."""

from __future__ import annotations

from pathlib import Path

import click

from daemon.cli.context import app_context
from daemon.cli.options import database_option, json_option
from daemon.cli.render import emit_json
from daemon.flashinfer.package import FlashInferError, require
from nkibench.task.spec import TaskSpec, load_task
from store.base import EventStore
from store.errors import DatabaseNotFound
from store.projections.library import LibraryProjection
from store.projections.runner import replay

__all__ = ["export_flashinfer_format", "import_flashinfer_command"]


@click.command("import-flashinfer")
@click.argument("root", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.argument("destination", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--definition",
    "definitions",
    multiple=True,
    metavar="NAME",
    help="Import this definition (repeatable); default: every definition of the dataset.",
)
@click.option(
    "--solution",
    metavar="NAME",
    help="The baseline kernel of its definition; default: the best Triton solution by its traces.",
)
@click.option(
    "--allow-torch-compute",
    is_flag=True,
    help="Let the tasks' run() compute with PyTorch (task.toml allow_torch_compute), for "
    "solutions that do part of their work in torch.",
)
@json_option
@database_option
@click.pass_context
def import_flashinfer_command(
    ctx: click.Context,
    *,
    root: Path,
    destination: Path,
    definitions: tuple[str, ...],
    solution: str | None,
    allow_torch_compute: bool,
    as_json: bool,
) -> None:
    """Turn a FlashInfer Trace dataset's definitions into task folders (reference, workloads,
    the best Triton solution as the kernel).

    Exit 0 every definition imported, 1 some skipped (each with its reason), 2 a dataset that
    does not load."""
    require()
    from daemon.flashinfer.importer import import_flashinfer  # noqa: PLC0415 - imports torch

    result = import_flashinfer(
        root, destination, list(definitions) or None, solution, allow_torch_compute
    )
    if as_json:
        emit_json(result.to_json())
    else:
        for item in result.imported:
            click.echo(
                f"{item['definition']}: imported with solution {item['solution']} "
                f"({item['standing']}, {item['workloads']} workloads) -> {item['path']}"
            )
        for item in result.skipped:
            click.echo(f"{item['definition']}: skipped: {item['reason']}")
    ctx.exit(1 if result.skipped else 0)


def _task(store: EventStore | None, task: str) -> TaskSpec:
    """A task folder given as a path, else the folder of the task of that name in the log."""
    if Path(task).is_dir():
        return load_task(Path(task))
    if store is None:
        raise FlashInferError(f"no task folder {task}, and no log to find a task of that name")
    library = replay(store, LibraryProjection(), use_checkpoint=True).state
    revision = library.revisions.get(task)
    if revision is None:
        raise FlashInferError(f"no task {task!r} in the log, and no folder of that name")
    return load_task(Path(revision.task_dir))


def export_flashinfer_format(
    ctx: click.Context, task_name: str, out: Path | None, kernel_file: Path | None
) -> None:
    """`accelopt export TASK --format flashinfer`: see daemon.flashinfer.export."""
    require()
    from daemon.flashinfer.logged import (  # noqa: PLC0415 - imports torch
        chosen_kernel,
        export_logged,
    )

    store: EventStore | None
    try:
        store = app_context(ctx).open_store(ctx)
    except DatabaseNotFound:
        if not Path(task_name).is_dir():
            raise
        store = None  # a task folder never profiled here: its kernel, without Traces
    task = _task(store, task_name)
    source, origin = chosen_kernel(store, task, kernel_file)
    destination = out or Path(f"{task.name}-flashinfer")
    if destination.exists() and not destination.is_dir():
        raise FlashInferError(f"{destination} is not a directory (--out names the dataset folder)")
    summary = export_logged(store, task, source, origin, destination)
    emit_json(summary)
