"""The options the commands share, declared once: the kernel options (`--backend`,
`--target`, `--shapes`, `--devices`) with one meaning and one default everywhere, the search
parameters of `optimize` and `daemon`, `--seeds`, `--json`, and `--db`, which every command
accepts before or after its name."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import click

from agents.config import SearchConfig
from daemon.backends import DeviceListError, parse_devices
from daemon.cli.context import AppContext
from daemon.cli.render import parse_until
from nkibench.backends import BACKENDS
from nkibench.targets import TRAINIUM

__all__ = [
    "KERNEL_OPTIONS",
    "check_out_folder",
    "database_option",
    "device_list",
    "json_option",
    "kernel_options",
    "log_level_option",
    "one_device",
    "search_config",
    "search_options",
    "seed_list",
    "seeds_option",
    "until_option",
    "until_target",
]

F = TypeVar("F", bound=Callable[..., Any])
KERNEL_OPTIONS = ("--backend", "--target", "--shapes", "--devices", "--unsafe-sandbox")
"""The options every kernel command (check, profile, optimize, daemon) takes."""
SEARCH_DEFAULTS = SearchConfig()


def _set_database(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        app = ctx.find_object(AppContext)
        assert app is not None
        app.db_override = value


def database_option(function: F) -> F:
    """`--db` after the command name, the same as before it (`accelopt status --db URL`)."""
    return click.option(
        "--db",
        metavar="URL",
        expose_value=False,
        is_eager=True,
        callback=_set_database,
        help="Database URL (sqlite:///PATH or postgresql://...); the same as --db before the "
        "command. Default: $ACCELOPT_DB, else a SQLite file under $ACCELOPT_HOME.",
    )(function)


def _allow_unsafe(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        app = ctx.find_object(AppContext)
        assert app is not None
        app.unsafe_sandbox = True


def kernel_options(function: F) -> F:
    """--backend, --target, --shapes, --devices, --unsafe-sandbox: the same on every kernel
    command."""
    backends = "; ".join(f"{i.name}: {i.summary} ({i.latency_kind})" for i in BACKENDS.values())
    devices = "; ".join(f"{i.name}: {i.devices}" for i in BACKENDS.values())
    for option in reversed(
        (
            click.option(
                "--backend",
                type=click.Choice(list(BACKENDS)),
                default=None,
                help=f"{backends}. Default: the task's own (nkisim for NKI, triton for Triton; "
                "the daemon: nkisim).",
            ),
            click.option(
                "--target",
                type=click.Choice(sorted(TRAINIUM)),
                default=None,
                help="The Trainium generation (current NKI runs on trn2 and trn3, legacy NKI on "
                "trn1 and trn2). Default: nkisim trn2; neuron this instance's; triton takes "
                "none (its target is the GPU).",
            ),
            click.option(
                "--shapes",
                default=None,
                help="A shape set of the task (full: reference.py's own constants, or every "
                "workload of a task with workloads.jsonl; w0, w1...: one workload). Default: "
                "check and profile the task's smallest (small where it defines one, else "
                "full); optimize and the daemon full.",
            ),
            click.option(
                "--devices",
                metavar="N|I,J|I-J",
                default=None,
                help=f"The devices to run on ({devices}). Default: device 0. A command that "
                "runs one kernel at a time takes one.",
            ),
            click.option(
                "--unsafe-sandbox",
                is_flag=True,
                expose_value=False,
                callback=_allow_unsafe,
                help="Where bubblewrap cannot run, run kernels behind the Python-level checks "
                "alone (loudly) instead of refusing; the same as before the command.",
            ),
        )
    ):
        function = option(function)
    return function


def device_list(text: str | None, backend: str) -> list[str]:
    try:
        return parse_devices(text, backend)
    except DeviceListError as e:
        raise click.BadParameter(str(e), param_hint="--devices") from None


def one_device(text: str | None, backend: str) -> str:
    """The single device of a command that runs one kernel at a time."""
    devices = device_list(text, backend)
    if len(devices) != 1:
        raise click.BadParameter(
            f"this command runs on one device; {text!r} names {len(devices)}",
            param_hint="--devices",
        )
    return devices[0]


def search_options(function: F) -> F:
    """The search's parameters (AccelOpt's T, B, N, K; our F and P), for optimize and daemon."""
    d = SEARCH_DEFAULTS
    for name, default, text in reversed(
        (
            ("--iterations", d.iterations, "T: iterations of the beam search."),
            ("--beam", d.beam, "B: candidates kept per iteration."),
            ("--plans", d.plans, "N: plans per candidate."),
            ("--samples", d.samples, "K: implementations per plan."),
            ("--fixer-attempts", d.fixer_attempts, "F: repairs of a failing candidate."),
            ("--plateau", d.plateau, "P: stop after this many iterations without a gain."),
        )
    ):
        low = 0 if name == "--fixer-attempts" else 1
        function = click.option(
            name, type=click.IntRange(min=low), default=default, show_default=True, help=text
        )(function)
    return function


def search_config(params: dict[str, Any]) -> SearchConfig:
    return SearchConfig(
        iterations=params["iterations"],
        beam=params["beam"],
        plans=params["plans"],
        samples=params["samples"],
        fixer_attempts=params["fixer_attempts"],
        plateau=params["plateau"],
    )


def seed_list(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise click.BadParameter(
            f"{text!r} is not a comma-separated list of integers", param_hint="--seeds"
        ) from None


seeds_option = click.option(
    "--seeds", "seeds_text", metavar="S1,S2,...", help="Correctness seeds (default: the task's)."
)
until_option = click.option(
    "--until",
    metavar="POSITION|ISO-TIME",
    help="As of this position, or of the last event recorded by this time (UTC if no zone is "
    "given). Default: the whole log.",
)


def until_target(until: str | None) -> int | datetime | None:
    """--until's value as a position or a time; a clear error otherwise."""
    try:
        return parse_until(until) if until is not None else None
    except ValueError:
        raise click.BadParameter(
            f"{until!r} is neither a position nor an ISO-8601 time", param_hint="--until"
        ) from None


def check_out_folder(out: Path) -> None:
    """A file `--out` names can be written only into a folder that exists: said before any
    work is done."""
    if not out.parent.is_dir():
        raise click.BadParameter(f"{out.parent} is not a directory", param_hint="--out")


json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
log_level_option = click.option(
    "--log-level",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="info",
    show_default=True,
)
"""The services' (daemon, worker) log level."""
