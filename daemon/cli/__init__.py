"""`accelopt`: the command line. One exit point (`main`) turns accelopt errors into a message
and an exit status; commands never call sys.exit themselves.

The commands live in rooms by what they work on: the event log (log.py), kernels
(kernels.py), the training data a run leaves (dataset.py), FlashInfer-Bench's files
(flashinfer.py), the agents (agents.py), porting legacy NKI (port.py), the service
(service.py), the fleet's workers and jobs (fleet.py) and the benchmarks (bench.py); the
options they share are declared once (options.py). The group names them in COMMANDS and
imports a room only when one of its commands runs (lazy.py): `--help`, `status` and `events`
start without the LLM client, the job queue, the backends' libraries, the web extra or
flashinfer_bench.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from daemon.cli.lazy import LazyCommand, LazyGroup
from events.errors import AccelOptError
from nkibench.errors import NkiBenchError

__all__ = ["cli", "main"]


COMMANDS = {
    "bench": LazyCommand(
        "daemon.cli.bench:bench",
        "Benchmarks (they create and remove their own databases and workspaces).",
    ),
    "check": LazyCommand(
        "daemon.cli.kernels:check_command", "Check a task's kernel for correctness."
    ),
    "daemon": LazyCommand(
        "daemon.cli.service:daemon_command",
        "Watch a kernel directory and keep its kernels getting faster, in the foreground "
        "(under systemd: Type=notify).",
    ),
    "db": LazyCommand("daemon.cli.log:db", "The event database."),
    "events": LazyCommand(
        "daemon.cli.log:events_command",
        "The event log, oldest first, as stored (before upcasting).",
    ),
    "export": LazyCommand(
        "daemon.cli.service:export_command",
        "The task's promoted kernel with its provenance header (candidate, position, speedup), "
        "or as a FlashInfer-Bench Solution with its Traces.",
    ),
    "export-dataset": LazyCommand(
        "daemon.cli.dataset:export_dataset_command",
        "One JSON line per profiled candidate (task, platform, parent, plan, kernel, verdict, "
        "latency and its kind, counters, model, origin, dollars), as of now or any earlier "
        "moment.",
    ),
    "import-flashinfer": LazyCommand(
        "daemon.cli.flashinfer:import_flashinfer_command",
        "Turn a FlashInfer Trace dataset's definitions into task folders (reference, workloads, "
        "the best Triton solution as the kernel).",
    ),
    "import-nkibench": LazyCommand(
        "daemon.cli.kernels:import_nkibench_command",
        "Turn an NKIBench tree (summary.json, reference/, kernels/) into task folders.",
    ),
    "jobs": LazyCommand(
        "daemon.cli.fleet:jobs_command",
        "The job queue: queued, running, done and failed jobs, their runs and their worker.",
    ),
    "mcp": LazyCommand(
        "daemon.cli.mcp:mcp_command",
        "Serve accelopt's judge, ledger and memory as MCP tools to coding agents (stdio, or "
        "Streamable HTTP with --http).",
    ),
    "memory": LazyCommand(
        "daemon.cli.agents:memory_group",
        "The optimization memory: the lessons the planner is shown, with their provenance.",
    ),
    "optimize": LazyCommand(
        "daemon.cli.agents:optimize_command",
        "Run the AccelOpt loop on one task in the foreground; a killed run resumes where it "
        "stopped when started again.",
    ),
    "port": LazyCommand(
        "daemon.cli.port:port_command",
        "Port a legacy-NKI task (neuronxcc.nki) to current NKI with the executor, verified by "
        "nkisim on every seed (a failing port goes to the fixer).",
    ),
    "profile": LazyCommand(
        "daemon.cli.kernels:profile_command",
        "Check a kernel, time it, and put it against the task's roofline (% of peak).",
    ),
    "replay": LazyCommand(
        "daemon.cli.log:replay_command",
        "A projection's state rebuilt from the log, as of now or any earlier moment.",
    ),
    "report": LazyCommand(
        "daemon.cli.report:report_command",
        "The library, each task's latencies and search tree with diffs, the memory's timeline, "
        "the LLM spend and the fleet's busy time, as one HTML file that works offline.",
    ),
    "serve": LazyCommand(
        "daemon.cli.web:serve_command",
        "The report, live: pages that follow the log, their JSON API (/api/report) and "
        "Prometheus metrics (/metrics).",
    ),
    "status": LazyCommand(
        "daemon.cli.log:status_command",
        "Every task: state, baseline and best latency, speedup; and the size of the log.",
    ),
    "worker": LazyCommand(
        "daemon.cli.fleet:worker_command",
        "Serve this host's devices to the fleet's coordinator (PostgreSQL), one job per device "
        "at a time, until SIGTERM or SIGINT (under systemd: accelopt-worker@.service).",
    ),
}
"""Every command: its module and attribute, imported only when the command runs, and its
short help (the first sentence of its docstring: tests/daemon/test_cli_lazy.py holds them
equal)."""


@click.group(
    cls=LazyGroup,
    lazy=COMMANDS,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option(
    "--db",
    "db_url",
    metavar="URL",
    help="Database URL (sqlite:///PATH or postgresql://...); every command also takes it "
    "after its name. Default: $ACCELOPT_DB, else a SQLite file under $ACCELOPT_HOME or "
    "~/.local/state/accelopt.",
)
@click.option(
    "--unsafe-sandbox",
    is_flag=True,
    help="Where bubblewrap cannot run, run kernels behind the Python-level checks alone "
    "(loudly) instead of refusing (also ACCELOPT_UNSAFE_SANDBOX=1).",
)
@click.pass_context
def cli(ctx: click.Context, db_url: str | None, unsafe_sandbox: bool) -> None:
    """accelopt keeps a team's accelerator kernels getting faster, and records why."""
    from daemon.cli.context import AppContext  # noqa: PLC0415 - the store: not for --help
    from daemon.settings import Settings  # noqa: PLC0415

    ctx.obj = AppContext(Settings.load(), db_override=db_url, unsafe_sandbox=unsafe_sandbox)


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
