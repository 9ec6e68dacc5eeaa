"""The MCP server on the official SDK (`mcp.server.mcpserver.MCPServer`): accelopt's tools,
the caller's identity, and its two transports.

Who calls is what the client said of itself when it connected (`clientInfo`: name and version);
the model is what a tool call declares (`model`), else `unknown`. The name is kept as given
(bounded) in the log, and made safe for ids and the budget (`client_key`).

stdio serves one local agent (`claude mcp add accelopt -- accelopt mcp`); `--http HOST:PORT`
serves Streamable HTTP at `/mcp` under the live pages' rule: loopback by default, any other
address only with ACCELOPT_HTTP_TOKEN, which every request must then carry.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, TypeVar, cast

from mcp.server.mcpserver import Context, MCPServer
from pydantic import Field

from daemon.mcp.desk import AgentDesk, Caller
from daemon.mcp.errors import Refusal
from daemon.mcp.models import (
    CheckOutcome,
    HistoryEntry,
    Lesson,
    ProfileOutcome,
    SubmitOutcome,
    TaskDetail,
    TaskSummary,
)
from events.catalog import AgentOrigin

__all__ = ["build_server", "client_key", "serve_http"]

T = TypeVar("T")
NAME_LIMIT = 128
HISTORY_LIMIT = 500
INSTRUCTIONS = (
    "accelopt judges, records and remembers accelerator kernels. Read a task (list_tasks, "
    "get_task) and what was learnt (lessons), check a kernel for correctness (check_kernel), "
    "profile it (profile_kernel: latency labelled measured or estimated, counters, % of peak), "
    "and submit the best (submit_kernel): accelopt re-verifies it on every seed and promotes "
    "it only if it beats the library's kernel. Every profiled kernel is recorded under your "
    "client's name and model. Errors are JSON objects with an `error` kind. See docs/agents.md."
)

TaskName = Annotated[str, Field(description="The task's name, as list_tasks gives it.")]
Source = Annotated[
    str, Field(description="The whole kernel file (kernel.py), in the task's dialect.")
]
Parent = Annotated[
    str | None, Field(description="The candidate_id it was derived from (history lists them).")
]
Model = Annotated[
    str | None,
    Field(description="The model that wrote the kernel, recorded with it (default: unknown)."),
]


def client_key(name: str) -> str:
    """A client's name as ids and the budget use it: letters, digits, `.`, `_`, `-`."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)[:64] or "unknown"


def _caller(ctx: Context, model: str | None) -> Caller:
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    name = (info.name if info is not None else "") or "unknown"
    version = (info.version if info is not None else "") or "unknown"
    origin = AgentOrigin(
        client=name[:NAME_LIMIT], client_version=version[:NAME_LIMIT], model="unknown"
    )
    return Caller(client_key(name), origin).as_model(model)


def _answer(call: Callable[[], T]) -> T:
    """The tool's answer, or its refusal as a typed error result (the SDK passes an is_error
    result through unvalidated)."""
    try:
        return call()
    except Refusal as refusal:
        return cast(T, refusal.result())


def build_server(desk: AgentDesk) -> MCPServer:
    server: MCPServer = MCPServer("accelopt", instructions=INSTRUCTIONS)

    @server.tool()
    def list_tasks() -> list[TaskSummary]:
        """Every task: dialect, state, and per platform (backend:target) the baseline, best and
        promoted latencies, each labelled measured or estimated, whose they are, and % of peak."""
        return _answer(desk.reader.list_tasks)

    @server.tool()
    def get_task(task: TaskName) -> TaskDetail:
        """The task's current revision: kernel.py, reference.py and task.toml; its shape sets,
        workloads, seeds and tolerance; the best kernel's source and its latest profile."""
        return _answer(lambda: desk.reader.get_task(task))

    @server.tool()
    def lessons(task: TaskName) -> list[Lesson]:
        """The optimization memory's lessons that accelopt's planner is shown for this task,
        best evidence first, with their provenance."""
        return _answer(lambda: desk.reader.lessons(task))

    @server.tool()
    def check_kernel(ctx: Context, task: TaskName, source: Source) -> CheckOutcome:
        """Correctness only, in accelopt's sandbox, on every seed of the task; not recorded.
        A failing kernel is an error whose kind is accelopt check's (rejected, compile,
        runtime, constraint, incorrect, cheat, timeout...)."""
        return _answer(lambda: desk.check(_caller(ctx, None), task, source))

    @server.tool()
    def profile_kernel(
        ctx: Context,
        *,
        task: TaskName,
        source: Source,
        plan: Annotated[
            str | None, Field(description="What the kernel changes and why (recorded).")
        ] = None,
        parent: Parent = None,
        model: Model = None,
    ) -> ProfileOutcome:
        """Check and time the kernel on accelopt's devices: latency (measured or estimated),
        counters, roofline and % of peak. Recorded as your candidate; a failing kernel is an
        error with its verdict's kind and candidate_id."""
        return _answer(
            lambda: desk.profile(_caller(ctx, model), task, source, plan=plan, parent=parent)
        )

    @server.tool()
    def submit_kernel(
        ctx: Context,
        *,
        task: TaskName,
        source: Source,
        plan: Annotated[str, Field(description="What the kernel changes and why.")],
        parent: Parent = None,
        lesson: Annotated[
            str | None,
            Field(
                description="A lesson for accelopt's memory (first line: its title); kept only "
                "if the kernel is promoted."
            ),
        ] = None,
        model: Model = None,
    ) -> SubmitOutcome:
        """Offer the kernel to the library. accelopt profiles it, and promotes it only if it
        beats the library's kernel (or the task's own) by more than the noise and a second
        profile on every seed confirms it; the daemon keeps re-verifying it and demotes it if
        it fails later. Refused (`not_promoted`) otherwise."""
        return _answer(
            lambda: desk.submit(
                _caller(ctx, model), task, source=source, plan=plan, parent=parent, lesson=lesson
            )
        )

    @server.tool()
    def history(
        task: TaskName,
        limit: Annotated[int, Field(ge=1, le=HISTORY_LIMIT, description="Newest first.")] = 50,
    ) -> list[HistoryEntry]:
        """The task's candidates, accelopt's and agents', newest first, with their fates
        (rejected, failed, profiled, selected, promoted), reasons and latencies."""
        return _answer(lambda: desk.reader.history(task, limit))

    return server


def serve_http(server: MCPServer, host: str, port: int, token: str | None) -> None:
    """Streamable HTTP at `http://HOST:PORT/mcp`, behind the live pages' token rule, until
    SIGTERM or SIGINT (uvicorn's own handlers)."""
    import uvicorn  # noqa: PLC0415 - only with --http

    from daemon.views.web.token import token_middleware  # noqa: PLC0415 - the web extra

    app = server.streamable_http_app(host=host)
    for middleware in token_middleware(token):
        app.add_middleware(middleware.cls, *middleware.args, **middleware.kwargs)
    config = uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False)
    uvicorn.Server(config).run()
