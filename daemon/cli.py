"""`accelopt`: the command line. One exit point (`main`) turns accelopt errors into a message
and an exit status; commands never call sys.exit themselves."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime

import click
from rich.table import Table

from daemon.agent_cli import memory_group, optimize_command
from daemon.context import AppContext, app_context
from daemon.daemon_cli import bench_daemon, daemon_command, export_command
from daemon.kernel_cli import (
    bench_cost_model,
    bench_gpu,
    bench_nkibench,
    bench_nkisim,
    check_command,
    import_nkibench_command,
    profile_command,
)
from daemon.projections import PROJECTIONS, make_projection, present
from daemon.render import (
    emit_json,
    event_json,
    library_json,
    library_table,
    parse_until,
    print_table,
    stored_event_line,
)
from daemon.settings import Settings
from events.envelope import StoredEvent
from events.errors import AccelOptError
from nkibench.errors import NkiBenchError
from store.benchmark import STORE_TARGETS, run_store_benchmark
from store.engine import make_engine, sqlite_path
from store.migrate import describe, upgrade
from store.projections.library import LibraryProjection, LibraryState
from store.projections.runner import replay

__all__ = ["cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    "db_url",
    metavar="URL",
    help="Database URL (sqlite:///PATH or postgresql://...). "
    "Default: $ACCELOPT_DB, else a SQLite file under $ACCELOPT_HOME or ~/.local/state/accelopt.",
)
@click.pass_context
def cli(ctx: click.Context, db_url: str | None) -> None:
    """accelopt keeps a team's accelerator kernels getting faster, and records why."""
    ctx.obj = AppContext(settings=Settings(), db_override=db_url)


# --- db ------------------------------------------------------------------------------------


@cli.group()
def db() -> None:
    """The event database."""


@db.command("upgrade")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
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


@cli.command("events")
@click.option("--since", type=click.IntRange(min=0), default=0, help="Only events after N.")
@click.option("--type", "types", multiple=True, metavar="TYPE", help="Only this type (repeat).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most N events.")
@click.option("--follow", is_flag=True, help="Keep printing new events as they are recorded.")
@click.option("--json", "as_json", is_flag=True, help="JSON lines.")
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


@cli.command("replay")
@click.option(
    "--projection",
    "name",
    required=True,
    type=click.Choice(sorted(PROJECTIONS)),
    help="Which projection to rebuild.",
)
@click.option(
    "--until",
    metavar="POSITION|ISO-TIME",
    help="Rebuild as of this position, or of the last event recorded by this time (UTC if "
    "no zone is given). Default: the whole log.",
)
@click.option(
    "--skip-unknown",
    is_flag=True,
    help="Report events that do not decode (unknown type, bad payload) and continue.",
)
@click.option("--no-snapshots", is_flag=True, help="Fold from position 0, ignoring snapshots.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
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
    try:
        target: int | datetime | None = parse_until(until) if until is not None else None
    except ValueError:
        raise click.BadParameter(
            f"{until!r} is neither a position nor an ISO-8601 time", param_hint="--until"
        ) from None
    store = app_context(ctx).open_store(ctx)
    projection = make_projection(name)
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


@cli.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def status_command(ctx: click.Context, as_json: bool) -> None:
    """Every task: state, baseline and best latency, speedup; and the size of the log."""
    store = app_context(ctx).open_store(ctx)
    result = replay(store, LibraryProjection(), use_checkpoint=True)
    path = sqlite_path(store.engine.url)
    size = (
        sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())
        if path is not None
        else None
    )
    log = {"events": store.head(), "size_bytes": size, "database": store.describe()}
    if as_json:
        emit_json({"log": log, "position": result.position, "tasks": library_json(result.state)})
        return
    print_table(library_table(result.state, title="accelopt library"))
    size_text = f", {size / 1e6:.1f} MB on disk" if size is not None else ""
    click.echo(f"log: {log['events']} events in {log['database']}{size_text}")
    click.echo("latencies: (m) measured on hardware, (e) estimated by a cost model")


# --- bench ---------------------------------------------------------------------------------


@cli.group()
def bench() -> None:
    """Benchmarks (they create and remove their own databases and workspaces)."""


@bench.command("store")
@click.option("--events", "count", type=click.IntRange(min=1000), default=1_000_000)
@click.option(
    "--db",
    "bench_db",
    metavar="URL",
    help="Benchmark PostgreSQL at this URL (in a fresh schema, dropped after). "
    "Default: a SQLite file in a temporary directory.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def bench_store(count: int, bench_db: str | None, as_json: bool) -> None:
    """Append and replay throughput of the event log, and replay memory."""
    result = run_store_benchmark(bench_db, events=count)
    if as_json:
        emit_json(result)
        return
    table = Table(title=f"event store benchmark: {result['database']} ({result['settings']})")
    for column in ("metric", "value", "target"):
        table.add_column(column)
    for key in (
        "events",
        "append_single_per_s",
        "append_batch_per_s",
        "replay_per_s",
        "replay_peak_rss_mb",
    ):
        op, bound = STORE_TARGETS.get(key, ("", None))
        table.add_row(key, f"{result[key]:,}", f"{op} {bound:,.0f}" if bound else "")
    print_table(table)


cli.add_command(check_command)
cli.add_command(profile_command)
cli.add_command(import_nkibench_command)
bench.add_command(bench_nkisim)
bench.add_command(bench_nkibench)
bench.add_command(bench_cost_model)
bench.add_command(bench_gpu)
bench.add_command(bench_daemon)
cli.add_command(optimize_command)
cli.add_command(daemon_command)
cli.add_command(export_command)
cli.add_command(memory_group)


def main(argv: Sequence[str] | None = None) -> None:
    """The one exit point of the CLI."""
    try:
        code = cli.main(args=argv, prog_name="accelopt", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("accelopt: interrupted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except (AccelOptError, NkiBenchError) as e:
        click.echo(f"accelopt: error: {e.message}", err=True)
        sys.exit(e.exit_code)
    except BrokenPipeError:  # `accelopt events | head`
        sys.stderr.close()
        sys.exit(0)
    sys.exit(code if isinstance(code, int) else 0)
