"""The fleet's commands: `accelopt worker` (serve this host's devices) and `accelopt jobs`
(what the queue holds, and who runs it)."""

from __future__ import annotations

import platform
from datetime import datetime
from typing import Any

import click
from rich.table import Table

from daemon.backends import parse_devices
from daemon.cli.context import app_context
from daemon.cli.options import database_option, device_list, json_option, log_level_option
from daemon.cli.render import emit_json, print_table
from daemon.process.allocator import limit_arenas
from daemon.process.logs import configure_logging
from daemon.workers.host import SLEEP_BACKEND, WorkerOptions, run_worker
from nkibench.backends import BACKENDS
from nkibench.targets import TRAINIUM
from store.jobs import JobListing, open_queue

__all__ = ["jobs_command", "worker_command"]


@click.command("worker")
@click.option(
    "--backend",
    type=click.Choice([*BACKENDS, SLEEP_BACKEND]),
    required=True,
    help="What its jobs run on (sleep: no kernel, each job sleeps; for `accelopt bench fleet`).",
)
@click.option(
    "--devices",
    metavar="N|I,J|I-J",
    required=True,
    help="This host's devices it serves, one job at a time each (nkisim and sleep: a count "
    "of CPU workers, or indices).",
)
@click.option(
    "--target",
    type=click.Choice(sorted(TRAINIUM)),
    default=None,
    help="The Trainium generation its jobs are for (default: the backend's own).",
)
@click.option(
    "--host",
    default=None,
    help="This host's name in the fleet (default: the machine's); its devices are HOST/DEVICE.",
)
@click.option(
    "--quarantine-after",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Jobs a device fails in a row (backend errors, failed timing) before it rests.",
)
@click.option(
    "--quarantine-seconds",
    "quarantine_s",
    type=click.FloatRange(min=0),
    default=300.0,
    show_default=True,
    help="How long a quarantined device rests before it is tried again.",
)
@log_level_option
@database_option
@click.pass_context
def worker_command(
    ctx: click.Context,
    /,
    *,
    backend: str,
    devices: str,
    target: str | None,
    host: str | None,
    quarantine_after: int,
    quarantine_s: float,
    log_level: str,
) -> None:
    """Serve this host's devices to the fleet's coordinator (PostgreSQL), one job per device
    at a time, until SIGTERM or SIGINT (under systemd: accelopt-worker@.service)."""
    limit_arenas()
    app = app_context(ctx)
    configure_logging(level=log_level, scrubber=app.scrubber)
    parsed = (
        parse_devices(devices, "nkisim")  # a count, like nkisim's CPU workers
        if backend == SLEEP_BACKEND
        else device_list(devices, backend)
    )
    options = WorkerOptions(
        backend=backend,
        devices=parsed,
        target=target,
        host=host or platform.node(),
        quarantine_after=quarantine_after,
        quarantine_s=quarantine_s,
        unsafe_sandbox=app.unsafe_sandbox,
    )
    ctx.exit(run_worker(app.settings, app.database_url, options))


@click.command("jobs")
@json_option
@database_option
@click.pass_context
def jobs_command(ctx: click.Context, as_json: bool) -> None:
    """The job queue: queued, running, done and failed jobs, their runs and their worker."""
    store = app_context(ctx).open_store(ctx)
    queue = open_queue(store.engine)
    try:
        listed = queue.listing()
        devices = queue.devices()
    finally:
        queue.close()
    if as_json:
        emit_json({"devices": devices, "jobs": [_json(item) for item in listed]})
        return
    counts = {s: sum(1 for i in listed if i.status == s) for s in STATUSES}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items())
    retried = sum(1 for i in listed if i.runs > 1)
    fleet = f"; {devices} devices leased" if devices is not None else ""
    click.echo(f"jobs: {summary}; {retried} retried{fleet}")
    table = Table("job", "task", "status", "runs", "worker", "queue", "started", "finished")
    for item in listed:
        table.add_row(
            item.job.job_id,
            item.job.task,
            item.status,
            str(item.runs),
            item.job.worker or "",
            item.queue or "",
            _time(item.job.started_at),
            _time(item.job.finished_at),
        )
    print_table(table)


STATUSES = ("queued", "running", "done", "failed")


def _time(moment: datetime | None) -> str:
    return moment.isoformat(timespec="milliseconds") if moment is not None else ""


def _json(item: JobListing) -> dict[str, Any]:
    job = item.job
    return {
        "job_id": job.job_id,
        "task": job.task,
        "kind": job.kind,
        "status": item.status,
        "runs": item.runs,
        "retried": item.runs > 1,
        "worker": job.worker,
        "queue": item.queue,
        "priority": job.priority,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
    }
