"""The live pages as a Starlette application: the report following the log (`/`), the page's
sections changed since a log position (`/api/sections`, what the open page fetches), its data
(`/api/report`), the log's head as server-sent events (`/api/stream`, what the page listens
to), and Prometheus metrics (`/metrics`). Every route reads; none writes.

With a token (ACCELOPT_HTTP_TOKEN) every request must carry it (token.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import AsyncIterator, Callable

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from daemon.views.report.view import build_view
from daemon.views.web.follow import Follower
from daemon.views.web.live import LivePage
from daemon.views.web.metrics import StateDisk, metrics_registry
from daemon.views.web.token import token_middleware
from store.sql import SqlEventStore

__all__ = ["make_app"]

STREAM_EVERY_S = 1.0


def make_app(
    store: SqlEventStore,
    *,
    state_disk: Callable[[], StateDisk],
    token: str | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Starlette:
    """The pages of `store`'s log; `state_disk` looks at this host's state disk for /metrics,
    `clock` times the sessions out."""
    follower = Follower(store)
    registry = metrics_registry(follower, store, state_disk)
    live = LivePage(follower, store)

    async def page(request: Request) -> Response:
        tasks = request.query_params.getlist("task") or None
        return HTMLResponse(await asyncio.to_thread(live.page, tasks))

    async def sections(request: Request) -> Response:
        tasks = request.query_params.getlist("task") or None
        since = request.query_params.get("since", "")
        if not since.isascii() or not since.isdigit() or len(since) > 19:
            return PlainTextResponse(
                f"/api/sections: since={since[:40]!r} is not a log position (0 or more)",
                status_code=400,
            )
        return JSONResponse(await asyncio.to_thread(live.changes, tasks, int(since)))

    async def report(request: Request) -> Response:
        tasks = request.query_params.getlist("task") or None

        def data() -> dict[str, object]:
            with follower.lock:
                follower.catch_up()
                view = build_view(follower.report, store.get_texts, tasks=tasks)
                return dataclasses.asdict(view)

        return JSONResponse(await asyncio.to_thread(data))

    async def stream(request: Request) -> Response:
        async def heads() -> AsyncIterator[str]:
            last = -1
            while not await request.is_disconnected():
                head = await asyncio.to_thread(store.head)
                if head != last:
                    last = head
                    yield f"data: {json.dumps({'head': head})}\n\n"
                await asyncio.sleep(STREAM_EVERY_S)

        return StreamingResponse(heads(), media_type="text/event-stream")

    async def metrics(_: Request) -> Response:
        body = await asyncio.to_thread(generate_latest, registry)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    middleware = token_middleware(token, clock)
    return Starlette(
        routes=[
            Route("/", page),
            Route("/api/sections", sections),
            Route("/api/report", report),
            Route("/api/stream", stream),
            Route("/metrics", metrics),
        ],
        middleware=middleware,
    )
