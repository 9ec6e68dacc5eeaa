"""`accelopt`: the command line. One exit point (`main`) turns accelopt errors into a message
and an exit status; commands never call sys.exit themselves."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from contextlib import closing
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import click
from rich.table import Table

from daemon.projections import PROJECTIONS, make_projection
from daemon.render import (
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
from nkibench.benchmark import NKISIM_TARGETS, run_nkisim_benchmark
from nkibench.errors import NkiBenchError
from nkibench.harness import check_kernel
from nkibench.importer import import_nkibench
from nkibench.nkisim.machine import TARGETS
from nkibench.task import load_task
from store.benchmark import STORE_TARGETS, run_store_benchmark
from store.engine import make_engine, sqlite_path
from store.migrate import describe, upgrade
from store.projections.library import LibraryProjection, LibraryState
from store.projections.runner import replay
from store.sql import SqlEventStore

__all__ = ["cli", "main"]


@dataclass
class AppContext:
    settings: Settings
    db_override: str | None

    @property
    def database_url(self) -> str:
        return self.settings.database_url(self.db_override)

    def open_store(self, ctx: click.Context) -> SqlEventStore:
        """The event store for this command, closed when the command ends."""
        return ctx.with_resource(closing(SqlEventStore.open(self.database_url)))


def _app(ctx: click.Context) -> AppContext:
    app = ctx.find_object(AppContext)
    assert app is not None
    return app


def _emit_json(value: Any) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, default=str))


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
    engine = make_engine(_app(ctx).database_url)
    try:
        before, after = upgrade(engine)
    finally:
        engine.dispose()
    where = describe(engine.url)
    if as_json:
        _emit_json({"database": where, "from_revision": before, "to_revision": after})
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
    store = _app(ctx).open_store(ctx)

    def show(stored: StoredEvent) -> None:
        if as_json:
            _emit_json(event_json(stored))
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
    store = _app(ctx).open_store(ctx)
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
        _emit_json(
            {
                "projection": name,
                "projection_version": projection.version,
                "position": result.position,
                "started_from": result.started_from,
                "skipped": [asdict(s) for s in result.skipped],
                "state": projection.dump(result.state),
            }
        )
        return
    if isinstance(result.state, LibraryState):
        print_table(library_table(result.state, title=f"{name} as of position {result.position}"))
    else:
        click.echo(json.dumps(projection.dump(result.state), indent=2, ensure_ascii=False))


@cli.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def status_command(ctx: click.Context, as_json: bool) -> None:
    """Every task: state, baseline and best latency, speedup; and the size of the log."""
    store = _app(ctx).open_store(ctx)
    result = replay(store, LibraryProjection(), use_checkpoint=True)
    path = sqlite_path(store.engine.url)
    size = (
        sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())
        if path is not None
        else None
    )
    log = {"events": store.head(), "size_bytes": size, "database": store.describe()}
    if as_json:
        _emit_json({"log": log, "position": result.position, "tasks": library_json(result.state)})
        return
    print_table(library_table(result.state, title="accelopt library"))
    size_text = f", {size / 1e6:.1f} MB on disk" if size is not None else ""
    click.echo(f"log: {log['events']} events in {log['database']}{size_text}")
    click.echo("latencies: (m) measured on hardware, (e) estimated by a cost model")


# --- kernels -------------------------------------------------------------------------------


def _seed_list(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a comma-separated list of integers") from None


@cli.command("check")
@click.argument("task_dir", type=click.Path(path_type=Path))
@click.option("--backend", type=click.Choice(["nkisim"]), default="nkisim", show_default=True)
@click.option(
    "--shapes",
    default="small",
    show_default=True,
    help="A shape set of the task (full = reference.py's own).",
)
@click.option("--target", type=click.Choice(sorted(TARGETS)), default="trn1", show_default=True)
@click.option(
    "--seeds", "seeds_text", metavar="S1,S2,...", help="Correctness seeds (default: the task's)."
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def check_command(
    ctx: click.Context,
    *,
    task_dir: Path,
    backend: str,
    shapes: str,
    target: str,
    seeds_text: str | None,
    as_json: bool,
) -> None:
    """Check a task's kernel for correctness. Exit 0 correct, 1 the kernel failed, 2 bad task."""
    task = load_task(task_dir)
    result = check_kernel(task, shapes=shapes, seeds=_seed_list(seeds_text), target=target)
    if as_json:
        _emit_json(result.to_json())
    elif result.correct:
        click.echo(
            f"{task.name}: correct on seeds {result.seeds} ({shapes} shapes, {backend}); "
            f"worst relative L2 error {result.max_rel_l2:.2e}"
        )
    else:
        click.echo(f"{task.name}: {result.error_kind}: {result.message}")
    if result.error_kind == "task":
        ctx.exit(2)
    ctx.exit(0 if result.correct else 1)


@cli.command("import-nkibench")
@click.argument("root", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.argument("destination", type=click.Path(path_type=Path, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.pass_context
def import_nkibench_command(
    ctx: click.Context, root: Path, destination: Path, as_json: bool
) -> None:
    """Turn an NKIBench tree (summary.json, reference/, kernels/) into task folders."""
    imported = import_nkibench(root, destination)
    if as_json:
        _emit_json([{"task": i.name, "path": str(i.path), "error": i.error} for i in imported])
    else:
        for item in imported:
            click.echo(f"{item.name}: {item.error or 'imported'} ({item.path})")
    ctx.exit(0 if all(i.error is None for i in imported) else 1)


# --- bench ---------------------------------------------------------------------------------


@cli.group()
def bench() -> None:
    """Benchmarks (they create and remove their own databases)."""


@bench.command("nkisim")
@click.option("--shapes", default="full", show_default=True)
@click.option("--tasks", "names", metavar="T1,T2,...", help="Only these suite tasks.")
@click.option("--target", type=click.Choice(sorted(TARGETS)), default="trn1", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def bench_nkisim(shapes: str, names: str | None, target: str, as_json: bool) -> None:
    """nkisim's speed on the suite against NumPy, and the time of a full correctness check."""
    result = run_nkisim_benchmark(
        shapes=shapes, names=names.split(",") if names else None, target=target
    )
    if as_json:
        _emit_json(result)
        return
    table = Table(
        title=f"nkisim on the NKI suite ({shapes} shapes, {target}; wall times, not latencies)"
    )
    for column in ("task", "correct", "nkisim s", "numpy s", "ratio", "check s", "instructions"):
        table.add_column(column, justify="left" if column == "task" else "right")
    for row in result["tasks"]:
        table.add_row(
            row["task"],
            "yes" if row["correct"] else f"no ({row['error_kind']})",
            f"{row['nkisim_s']:.2f}" if row["nkisim_s"] is not None else "-",
            f"{row['numpy_s']:.2f}" if row["numpy_s"] is not None else "-",
            f"{row['ratio']:.2f}" if row["ratio"] is not None else "-",
            f"{row['check_s']:.1f}",
            str(row["instructions"] or "-"),
        )
    print_table(table)
    for key, (op, bound) in NKISIM_TARGETS.items():
        value = result[key]
        shown = "-" if value is None else f"{value:.2f}"
        click.echo(f"{key}: {shown} (target {op} {bound:g})")


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
        _emit_json(result)
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
