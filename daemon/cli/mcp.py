"""`accelopt mcp`: the Model Context Protocol server for outside coding agents (daemon.mcp,
docs/agents.md)."""

from __future__ import annotations

import click

from daemon.cli.context import app_context, open_migrated_store
from daemon.cli.options import database_option, device_list, kernel_options, log_level_option
from daemon.mcp.budget import DeviceBudget
from daemon.mcp.desk import AgentDesk
from daemon.mcp.route import JobRoute, RouteOptions, revisions_root
from daemon.mcp.server import build_server, serve_http
from daemon.process.logs import configure_logging
from daemon.views.web.server import parse_bind
from nkibench.backends import DEFAULT_BACKEND

__all__ = ["mcp_command"]


@click.command("mcp")
@click.option(
    "--http",
    "bind",
    metavar="HOST:PORT",
    default=None,
    help="Serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (an address other "
    "than loopback needs ACCELOPT_HTTP_TOKEN, which every request must then carry).",
)
@kernel_options
@log_level_option
@database_option
@click.pass_context
def mcp_command(
    ctx: click.Context,
    *,
    bind: str | None,
    backend: str | None,
    target: str | None,
    shapes: str | None,
    devices: str | None,
    log_level: str,
) -> None:
    """Serve accelopt's judge, ledger and memory as MCP tools to coding agents (stdio, or
    Streamable HTTP with --http). With a daemon on the same database its queue runs the
    agents' jobs, below its searches; without one, this process's own devices do."""
    app = app_context(ctx)
    host_port = parse_bind(bind, app.settings.http_token) if bind is not None else None
    configure_logging(level=log_level, scrubber=app.scrubber)  # stderr: stdout is the protocol
    store = open_migrated_store(ctx)
    isolation = app.isolation()
    own_devices = device_list(devices, backend or DEFAULT_BACKEND)  # where no daemon runs
    options = RouteOptions(backend, target, shapes, own_devices)
    route = JobRoute.open(app.settings, app.database_url, store, options, isolation=isolation)
    ctx.call_on_close(route.close)
    desk = AgentDesk(
        store=store,
        route=route,
        budget=DeviceBudget(app.settings.mcp_device_s_per_hour),
        revisions=revisions_root(app.settings),
    )
    server = build_server(desk)
    click.echo(f"accelopt mcp: jobs run on {route.description}", err=True)
    if host_port is None:
        server.run("stdio")
        return
    host, port = host_port
    click.echo(f"accelopt mcp: serving http://{host}:{port}/mcp", err=True)
    serve_http(server, host, port, app.settings.http_token)
