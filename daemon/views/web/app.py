"""The live pages as a Starlette application: the report following the log (`/`), its data
(`/api/report`), the log's head as server-sent events (`/api/stream`, what the page listens
to), and Prometheus metrics (`/metrics`). Every route reads; none writes.

With a token (ACCELOPT_HTTP_TOKEN) every request must carry it (token.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import time
from collections.abc import AsyncIterator, Callable

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from daemon.views.report.html import draw_plots, main_fragment, render_report, series_of
from daemon.views.report.view import build_view
from daemon.views.web.follow import Follower
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
    pages = _Pages(follower, store)

    async def page(request: Request) -> Response:
        tasks = request.query_params.getlist("task") or None
        html = await asyncio.to_thread(pages.get, tasks)
        if request.query_params.get("fragment") == "main":
            return HTMLResponse(main_fragment(html))
        return HTMLResponse(html)

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
            Route("/api/report", report),
            Route("/api/stream", stream),
            Route("/metrics", metrics),
        ],
        middleware=middleware,
    )


class _Pages:
    """The page as of the log's head, drawn once per head and task list: every open page asks
    for it again when the head moves, and drawing it is the costly part."""

    def __init__(self, follower: Follower, store: SqlEventStore) -> None:
        self.follower = follower
        self.store = store
        self._drawn: tuple[int, tuple[str, ...], str] | None = None
        self._lock = threading.Lock()

    def get(self, tasks: list[str] | None) -> str:
        with self._lock:  # one drawing at a time: the others then take it
            with self.follower.lock:  # the data, out of the state
                position = self.follower.catch_up()
                key = tuple(tasks or ())
                if self._drawn is not None and self._drawn[:2] == (position, key):
                    return self._drawn[2]
                state = self.follower.report
                view = build_view(state, self.store.get_texts, tasks=tasks,
                                  as_of=f"position {position}")  # fmt: skip
                series = series_of(state, view)
            # the pictures, with the state free for the metrics and the API meanwhile
            html = render_report(draw_plots(view, series), live=True)
            self._drawn = (position, key, html)
            return html
