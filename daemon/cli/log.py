"""The event log's commands of `accelopt`: `db upgrade`, `events`, `replay` and `status`."""

from __future__ import annotations

import json
from dataclasses import asdict

import click

from daemon.cli.context import app_context
from daemon.cli.options import database_option, json_option, until_option, until_target
from daemon.cli.render import (
    daemon_line,
    emit_json,
    event_json,
    library_json,
    library_table,
    print_table,
    stored_event_line,
)
from daemon.coordinator.disk import state_disk
from daemon.projections import PROJECTIONS, make_projection, present
from events.envelope import StoredEvent
from store.engine import make_engine, sqlite_path
from store.jobs import open_queue
from store.migrate import describe, upgrade
from store.projections.library import LibraryProjection, LibraryState
from store.projections.runner import replay

__all__ = ["db", "events_command", "replay_command", "status_command"]

POSITION_MAX = 2**63 - 1
"""Positions are 64-bit integers in both databases."""


# --- db ------------------------------------------------------------------------------------


@click.group()
def db() -> None:
    """The event database."""


@db.command("upgrade")
@json_option
@database_option
@click.pass_context
def db_upgrade(ctx: click.Context, as_json: bool) -> None:
    """Create the database or migrate it to this accelopt's schema."""
    engine = make_engine(app_context(ctx).database_url)
    try:
        before, after = upgrade(engine)
    finally:
        engine.dispose()
    where = describe(engine.url)
    if as_json:
        emit_json({"database": where, "from_revision": before, "to_revision": after})
    elif before == after:
        click.echo(f"{where}: already at schema revision {after}")
    else:
        click.echo(f"{where}: schema revision {before or '(empty)'} -> {after}")


# --- events --------------------------------------------------------------------------------


@click.command("events")
@click.option(
    "--since",
    type=click.IntRange(min=0, max=POSITION_MAX),
    default=0,
    help="Only events after position N.",
)
@click.option("--type", "types", multiple=True, metavar="TYPE", help="Only this type (repeat).")
@click.option(
    "--limit", type=click.IntRange(min=1, max=POSITION_MAX), default=None, help="At most N events."
)
@click.option("--follow", is_flag=True, help="Keep printing new events as they are recorded.")
@click.option("--json", "as_json", is_flag=True, help="JSON lines.")
@database_option
@click.pass_context
def events_command(
    ctx: click.Context,
    *,
    since: int,
    types: tuple[str, ...],
    limit: int | None,
    follow: bool,
    as_json: bool,
) -> None:
    """The event log, oldest first, as stored (before upcasting)."""
    store = app_context(ctx).open_store(ctx)

    def show(stored: StoredEvent) -> None:
        if as_json:
            emit_json(event_json(stored))
        else:
            click.echo(stored_event_line(stored))

    wanted = set(types) or None
    shown = 0
    for stored in store.read_all(after=since, types=list(types) or None, limit=limit):
        show(stored)
        shown += 1
        since = stored.position
    if not follow or (limit is not None and shown >= limit):
        return
    with store.subscribe(after=since) as subscription:
        for stored in subscription:
            if wanted is None or stored.type in wanted:
                show(stored)
                shown += 1
                if limit is not None and shown >= limit:
                    return


# --- replay and status ---------------------------------------------------------------------


@click.command("replay")
@click.option(
    "--projection",
    "name",
    required=True,
    type=click.Choice(sorted(PROJECTIONS)),
    help="Which projection to rebuild.",
)
@until_option
@click.option(
    "--skip-unknown",
    is_flag=True,
    help="Report events that do not decode (unknown type, bad payload) and continue.",
)
@click.option("--no-snapshots", is_flag=True, help="Fold from position 0, ignoring snapshots.")
@json_option
@database_option
@click.pass_context
def replay_command(
    ctx: click.Context,
    *,
    name: str,
    until: str | None,
    skip_unknown: bool,
    no_snapshots: bool,
    as_json: bool,
) -> None:
    """A projection's state rebuilt from the log, as of now or any earlier moment."""
    target = until_target(until)
    app = app_context(ctx)
    store = app.open_store(ctx)
    projection = make_projection(name, app.settings)
    result = replay(
        store,
        projection,
        until=target,
        use_snapshots=not no_snapshots,
        skip_undecodable=skip_unknown,
    )
    for skipped in result.skipped:
        click.echo(
            f"accelopt: skipped event at position {skipped.position} "
            f"of type {skipped.type!r}: {skipped.reason}",
            err=True,
        )
    if as_json:
        emit_json(
            {
                "projection": name,
                "projection_version": projection.version,
                "position": result.position,
                "started_from": result.started_from,
                "skipped": [asdict(s) for s in result.skipped],
                "state": present(projection, result.state, store),
            }
        )
        return
    if isinstance(result.state, LibraryState):
        print_table(library_table(result.state, title=f"{name} as of position {result.position}"))
    else:
        click.echo(
            json.dumps(present(projection, result.state, store), indent=2, ensure_ascii=False)
        )


@click.command("status")
@json_option
@database_option
@click.pass_context
def status_command(ctx: click.Context, as_json: bool) -> None:
    """Every task: state, baseline and best latency, speedup; and the size of the log."""
    app = app_context(ctx)
    store = app.open_store(ctx)
    result = replay(store, LibraryProjection(), use_checkpoint=True)
    disk = state_disk(app.settings.state_dir(), app.settings.min_free_mb)
    path = sqlite_path(store.engine.url)
    size = (
        sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())
        if path is not None
        else None
    )
    log = {"events": store.head(), "size_bytes": size, "database": store.describe()}
    daemons = {host: asdict(d) for host, d in sorted(result.state.daemons.items())}
    queue = open_queue(store.engine)
    try:
        jobs = queue.counts()  # the queue's, not the log's: a failed job is given up there
    finally:
        queue.close()
    if as_json:
        emit_json(
            {
                "log": log,
                "position": result.position,
                "tasks": library_json(result.state),
                "daemons": daemons,
                "jobs": jobs,
                "state_disk": {
                    "path": str(disk.path),
                    "free_bytes": disk.free_bytes,
                    "floor_bytes": disk.floor_bytes,
                    "new_jobs_paused": disk.low,
                },
            }
        )
        return
    print_table(library_table(result.state, title="accelopt library"))
    size_text = f", {size / 1e6:.1f} MB on disk" if size is not None else ""
    click.echo(f"log: {log['events']} events in {log['database']}{size_text}")
    click.echo("jobs: " + ", ".join(f"{count} {state}" for state, count in jobs.items()))
    for host, daemon in daemons.items():
        click.echo(daemon_line(host, daemon))
    if disk.low:
        click.echo(f"NEW JOBS PAUSED on this host: {disk.describe()}")
    click.echo("latencies: (m) measured on hardware, (e) estimated by a cost model")


# --- bench ---------------------------------------------------------------------------------
