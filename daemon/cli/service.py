"""The service commands of `accelopt`: `daemon` (watch a directory and keep optimizing) and
`export` (a task's promoted kernel, with its provenance header, or as FlashInfer-Bench files)."""

from __future__ import annotations

from pathlib import Path

import click

from daemon.cli.context import app_context
from daemon.cli.options import (
    check_out_folder,
    database_option,
    device_list,
    kernel_options,
    log_level_option,
    search_config,
    search_options,
)
from daemon.cli.render import write_file
from daemon.coordinator.library import export_text
from daemon.coordinator.service import Daemon, DaemonOptions
from daemon.process.allocator import limit_arenas
from daemon.process.logs import configure_logging
from daemon.views.web.server import parse_bind
from events.errors import AccelOptError
from nkibench.task.toml import FULL
from store.projections.library import LibraryProjection
from store.projections.runner import replay

__all__ = ["daemon_command", "export_command"]

DAEMON_BACKEND = "nkisim"
"""The backend a daemon serves unless told (it watches many tasks, so none is "the task's")."""


@click.command("daemon")
@click.option(
    "--watch",
    "watch",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="The kernel directory: one task folder per task.",
)
@kernel_options
@search_options
@click.option(
    "--observer",
    type=click.Choice(["auto", "inotify", "polling"]),
    default="auto",
    show_default=True,
    help="How to watch the directory (polling for NFS and the like).",
)
@click.option(
    "--rest",
    "rest_h",
    type=click.FloatRange(min=0),
    default=6.0,
    show_default=True,
    help="Hours a plateaued task rests before it is searched again.",
)
@click.option(
    "--reverify-hours",
    type=click.FloatRange(min=0.0005),
    default=24.0,
    show_default=True,
    help="How often promoted kernels are checked again on fresh inputs.",
)
@click.option(
    "--rescan-seconds",
    "rescan_s",
    type=click.FloatRange(min=1),
    default=60.0,
    show_default=True,
    help="How often the whole directory is read again (heals events a watcher missed).",
)
@click.option(
    "--snapshot-seconds",
    "snapshot_s",
    type=click.FloatRange(min=1),
    default=3600.0,
    show_default=True,
    help="How often the projections are snapshotted (a restart replays from the last).",
)
@click.option(
    "--checkpoint-seconds",
    "checkpoint_s",
    type=click.FloatRange(min=1),
    default=600.0,
    show_default=True,
    help="How often SQLite's write-ahead log is folded back into the database file.",
)
@click.option(
    "--max-resident-mb",
    "max_resident_mb",
    type=click.FloatRange(min=0),
    default=2048.0,
    show_default=True,
    help="The daemon's own resident memory past which it drains and exits with status 9, for "
    "systemd to start a fresh one (0: no ceiling).",
)
@click.option(
    "--http",
    "http",
    metavar="HOST:PORT",
    default=None,
    help="Serve the live pages, their JSON API and Prometheus /metrics here (read-only; an "
    "address other than loopback needs ACCELOPT_HTTP_TOKEN). E.g. 127.0.0.1:8765.",
)
@click.option(
    "--flashinfer-trace",
    "flashinfer_trace",
    metavar="DIR",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Keep DIR in FlashInfer's Trace Apply layout (FLASHINFER_TRACE_PATH=DIR): the promoted "
    "kernels of the tasks imported from FlashInfer-Bench, in step with every promotion and "
    "demotion, swapped at once (DIR is a link accelopt keeps; needs accelopt[flashinfer]).",
)
@click.option(
    "--standby",
    is_flag=True,
    help="PostgreSQL: if another daemon holds the database, wait and take over when it goes "
    "(a second coordinator on another host).",
)
@log_level_option
@database_option
@click.pass_context
def daemon_command(
    ctx: click.Context,
    /,
    *,
    watch: Path,
    backend: str | None,
    target: str | None,
    shapes: str | None,
    devices: str | None,
    observer: str,
    rest_h: float,
    reverify_hours: float,
    rescan_s: float,
    snapshot_s: float,
    checkpoint_s: float,
    max_resident_mb: float,
    http: str | None,
    flashinfer_trace: Path | None,
    standby: bool,
    log_level: str,
    **search: int,
) -> None:
    """Watch a kernel directory and keep its kernels getting faster, in the foreground (under
    systemd: Type=notify). Stops cleanly on SIGTERM or SIGINT."""
    limit_arenas()  # before any thread of the daemon's exists
    app = app_context(ctx)
    configure_logging(level=log_level, scrubber=app.scrubber)
    name = backend or DAEMON_BACKEND
    options = DaemonOptions(
        watch=watch,
        backend=name,
        devices=None if devices is None else device_list(devices, name),
        target=target,
        shapes=shapes or FULL,
        observer=observer,  # type: ignore[arg-type]
        search=search_config(search),
        rest_s=rest_h * 3600,
        reverify_s=reverify_hours * 3600,
        rescan_s=rescan_s,
        snapshot_s=snapshot_s,
        revisions_kept_s=app.settings.revisions_kept_days * 86400,
        checkpoint_s=checkpoint_s,
        unsafe_sandbox=app.unsafe_sandbox,
        store_patience_s=app.settings.daemon_store_patience_s,
        max_resident_mb=max_resident_mb or None,
        standby=standby,
        http=parse_bind(http, app.settings.http_token) if http else None,
        flashinfer_trace=flashinfer_trace,
    )
    url = app.database_url
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    ctx.exit(Daemon.open(app.settings, url, options).run())


@click.command("export")
@click.argument("task")
@click.option(
    "--format",
    "form",
    type=click.Choice(["text", "flashinfer"]),
    default="text",
    show_default=True,
    help="text: the kernel's source; flashinfer: a FlashInfer-Bench dataset folder (the task's "
    "definition, the kernel as a Solution, a Trace per measured workload).",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    help="Write here instead of stdout (flashinfer: the dataset folder, default "
    "./TASK-flashinfer).",
)
@click.option(
    "--kernel",
    "kernel_file",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    help="flashinfer: export this kernel file instead of the task's best recorded kernel.",
)
@database_option
@click.pass_context
def export_command(
    ctx: click.Context, task: str, form: str, out: Path | None, kernel_file: Path | None
) -> None:
    """The task's promoted kernel with its provenance header (candidate, position, speedup),
    or as a FlashInfer-Bench Solution with its Traces."""
    if form == "flashinfer":
        from daemon.cli.flashinfer import export_flashinfer_format  # noqa: PLC0415

        export_flashinfer_format(ctx, task, out, kernel_file)
        return
    if kernel_file is not None:
        raise click.BadParameter("goes with --format flashinfer", param_hint="--kernel")
    if out is not None and out.is_dir():
        raise click.BadParameter(f"{out} is a directory", param_hint="--out")
    if out is not None:
        check_out_folder(out)
    store = app_context(ctx).open_store(ctx)
    library = replay(store, LibraryProjection(), use_checkpoint=True).state
    promoted = library.promoted().get(task)
    if promoted is None:
        raise AccelOptError(f"task {task!r} has no promoted kernel (yet)")
    text = export_text(promoted, store.get_text(promoted.kernel_hash))
    if out is None:
        click.echo(text, nl=False)
    else:
        write_file(out, text)
        click.echo(f"{task}: {promoted.candidate_id} written to {out}", err=True)
