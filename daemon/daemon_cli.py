"""The service commands of `accelopt`: `daemon` (watch a directory and keep optimizing) and
`export` (a task's promoted kernel, with its provenance header)."""

from __future__ import annotations

import os
from pathlib import Path

import click
from rich.table import Table

from agents.config import SearchConfig
from daemon.bench import DAEMON_TARGETS, run_daemon_benchmark
from daemon.context import app_context
from daemon.library import export_text, promotions
from daemon.logs import configure_logging
from daemon.render import emit_json, print_table
from daemon.service import Daemon, DaemonOptions
from events.errors import AccelOptError
from nkibench.cost.tables import GENERATIONS

__all__ = ["bench_daemon", "daemon_command", "export_command", "parse_devices"]

DEFAULTS = SearchConfig()


def parse_devices(text: str | None, backend: str) -> list[str]:
    """nkisim: a count ("2") or a list of cores ("0,1"); neuron: NeuronCores ("0,1" or "0-3")."""
    if text is None:
        return ["0"]
    if backend == "nkisim" and text.isdigit():
        count = int(text)
        if count < 1:
            raise click.BadParameter("at least one device", param_hint="--devices")
        return [str(i) for i in range(count)]
    devices: list[str] = []
    for part in text.split(","):
        if "-" in part:
            low, _, high = part.partition("-")
            if not (low.isdigit() and high.isdigit()) or int(low) > int(high):
                raise click.BadParameter(
                    f"{part!r} is not a range like 0-3", param_hint="--devices"
                )
            devices += [str(i) for i in range(int(low), int(high) + 1)]
        elif part.isdigit():
            devices.append(part)
        else:
            raise click.BadParameter(f"{part!r} is not a device number", param_hint="--devices")
    return devices


@click.command("daemon")
@click.option(
    "--watch",
    "watch",
    required=True,
    type=click.Path(path_type=Path, file_okay=False),
    help="The kernel directory: one task folder per task.",
)
@click.option(
    "--db",
    "db_url",
    metavar="URL",
    help="The event database (overrides --db before the command and ACCELOPT_DB).",
)
@click.option(
    "--backend",
    type=click.Choice(["nkisim", "neuron", "triton"]),
    default="nkisim",
    show_default=True,
    help="nkisim (estimated), neuron (Trainium, measured), triton (NVIDIA GPUs, measured).",
)
@click.option(
    "--devices",
    metavar="N|I,J|I-J",
    help="nkisim: workers (a count or CPU list); neuron: NeuronCores; triton: GPUs. Default: one.",
)
@click.option(
    "--target",
    type=click.Choice(sorted(GENERATIONS)),
    default=None,
    help="Trainium generation [nkisim: trn1; neuron: this instance's].",
)
@click.option(
    "--shapes",
    default="full",
    show_default=True,
    help="The shape set to profile at (full: the reference's own constants).",
)
@click.option(
    "--observer",
    type=click.Choice(["auto", "inotify", "polling"]),
    default="auto",
    show_default=True,
    help="How to watch the directory (polling for NFS and the like).",
)
@click.option(
    "--iterations", type=click.IntRange(min=1), default=DEFAULTS.iterations, show_default=True
)
@click.option("--beam", type=click.IntRange(min=1), default=DEFAULTS.beam, show_default=True)
@click.option("--plans", type=click.IntRange(min=1), default=DEFAULTS.plans, show_default=True)
@click.option("--samples", type=click.IntRange(min=1), default=DEFAULTS.samples, show_default=True)
@click.option("--plateau", type=click.IntRange(min=1), default=DEFAULTS.plateau, show_default=True)
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
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
)
@click.pass_context
def daemon_command(
    ctx: click.Context,
    *,
    watch: Path,
    db_url: str | None,
    backend: str,
    devices: str | None,
    target: str | None,
    shapes: str,
    observer: str,
    iterations: int,
    beam: int,
    plans: int,
    samples: int,
    plateau: int,
    rest_h: float,
    reverify_hours: float,
    log_level: str,
) -> None:
    """Watch a kernel directory and keep its kernels getting faster, in the foreground (under
    systemd: Type=notify). Stops cleanly on SIGTERM or SIGINT."""
    app = app_context(ctx)
    configure_logging(level=log_level)
    options = DaemonOptions(
        watch=watch,
        backend=backend,
        devices=parse_devices(devices, backend),
        target=target,
        shapes=shapes,
        observer=observer,  # type: ignore[arg-type]
        search=SearchConfig(
            iterations=iterations, beam=beam, plans=plans, samples=samples, plateau=plateau
        ),
        rest_s=rest_h * 3600,
        reverify_s=reverify_hours * 3600,
    )
    url = db_url or app.database_url
    if url.startswith("sqlite:///"):
        Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    ctx.exit(Daemon(app.settings, url, options).run())


@click.command("export")
@click.argument("task")
@click.option(
    "--out", type=click.Path(path_type=Path, dir_okay=False), help="Write here instead of stdout."
)
@click.pass_context
def export_command(ctx: click.Context, task: str, out: Path | None) -> None:
    """The task's promoted kernel with its provenance header (candidate, position, speedup)."""
    store = app_context(ctx).open_store(ctx)
    promoted = promotions(store).get(task)
    if promoted is None:
        raise AccelOptError(f"task {task!r} has no promoted kernel (yet)")
    text = export_text(store, promoted)
    if out is None:
        click.echo(text, nl=False)
    else:
        staging = out.with_name(f".{out.name}.tmp")
        staging.write_text(text, encoding="utf-8")
        os.replace(staging, out)
        click.echo(f"{task}: {promoted.event.candidate_id} written to {out}", err=True)


@click.command("daemon")
@click.option("--drops", type=click.IntRange(min=2), default=20, show_default=True)
@click.option(
    "--idle",
    "idle_s",
    type=click.FloatRange(min=5),
    default=30.0,
    show_default=True,
    help="Seconds of idleness to measure CPU over.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def bench_daemon(drops: int, idle_s: float, as_json: bool) -> None:
    """Time from a task folder appearing to its baseline; idle CPU and memory."""
    result = run_daemon_benchmark(drops=drops, idle_s=idle_s)
    if as_json:
        emit_json(result)
        return
    table = Table(title=f"the daemon: {drops} task folders dropped one at a time (nkisim, small)")
    for column in ("metric", "value", "target"):
        table.add_column(column)
    for key, unit in (
        ("p50_s", "s"),
        ("p95_s", "s"),
        ("max_s", "s"),
        ("idle_cpu_percent", "% of a core"),
        ("rss_mb", "MB"),
    ):
        op, bound = DAEMON_TARGETS.get(key, ("", None))
        table.add_row(key, f"{result[key]:.3g} {unit}", f"{op} {bound:g}" if bound else "")
    print_table(table)
