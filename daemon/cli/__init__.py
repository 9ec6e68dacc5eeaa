"""`accelopt`: the command line. One exit point (`main`) turns accelopt errors into a message
and an exit status; commands never call sys.exit themselves.

The commands live in rooms by what they work on: the event log (log.py), kernels
(kernels.py), the agents (agents.py), porting legacy NKI (port.py), the service (service.py),
the fleet's workers and jobs (fleet.py) and the benchmarks (bench.py); the options they
share are declared once (options.py).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from daemon.cli.agents import memory_group, optimize_command
from daemon.cli.bench import bench
from daemon.cli.context import AppContext
from daemon.cli.fidelity import fidelity_command
from daemon.cli.fleet import jobs_command, worker_command
from daemon.cli.kernels import check_command, import_nkibench_command, profile_command
from daemon.cli.log import db, events_command, replay_command, status_command
from daemon.cli.port import port_command
from daemon.cli.report import report_command
from daemon.cli.service import daemon_command, export_command
from daemon.cli.web import serve_command
from daemon.settings import Settings
from events.errors import AccelOptError
from nkibench.errors import NkiBenchError

__all__ = ["cli", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
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
    ctx.obj = AppContext(Settings.load(), db_override=db_url, unsafe_sandbox=unsafe_sandbox)


bench.add_command(fidelity_command)
for command in (
    db,
    events_command,
    replay_command,
    status_command,
    check_command,
    profile_command,
    import_nkibench_command,
    optimize_command,
    port_command,
    memory_group,
    daemon_command,
    worker_command,
    jobs_command,
    export_command,
    report_command,
    serve_command,
    bench,
):
    cli.add_command(command)


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
