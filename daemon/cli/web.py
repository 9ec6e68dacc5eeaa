"""`accelopt serve`: the live pages of a log, without a daemon (another host's, a copy)."""

from __future__ import annotations

import threading
from functools import partial

import click

from daemon.cli.context import app_context
from daemon.cli.options import database_option, log_level_option
from daemon.coordinator.disk import state_disk
from daemon.process.logs import configure_logging
from daemon.process.signals import stop_on_signals
from daemon.views.web.server import DEFAULT_BIND, WebServer, parse_bind

__all__ = ["serve_command"]


@click.command("serve")
@click.option(
    "--bind",
    default=DEFAULT_BIND,
    show_default=True,
    metavar="HOST:PORT",
    help="Where to serve (an address other than loopback needs ACCELOPT_HTTP_TOKEN).",
)
@log_level_option
@database_option
@click.pass_context
def serve_command(ctx: click.Context, bind: str, log_level: str) -> None:
    """The report, live: pages that follow the log, their JSON API (/api/report) and
    Prometheus metrics (/metrics). Read-only. Stops on SIGTERM or SIGINT."""
    app = app_context(ctx)
    host, port = parse_bind(bind, app.settings.http_token)
    configure_logging(level=log_level, scrubber=app.scrubber)
    store = app.open_store(ctx)
    disk = partial(state_disk, app.settings.state_dir(), app.settings.min_free_mb)
    server = WebServer(store, host, port, app.settings.http_token, state_disk=disk)
    stop = threading.Event()
    with stop_on_signals(lambda _signal: stop.set()):
        server.start()
        click.echo(f"serving {server.address}", err=True)
        while not stop.wait(1.0) and server.alive():
            pass
        server.stop()
