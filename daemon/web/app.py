"""The live pages as a Starlette application: the report following the log (`/`), its data
(`/api/report`), the log's head as server-sent events (`/api/stream`, what the page listens
to), and Prometheus metrics (`/metrics`). Every route reads; none writes.

With a token (ACCELOPT_HTTP_TOKEN) every request must carry it: `Authorization: Bearer`, or
`?token=` once, which sets a cookie for the page's own requests."""

from __future__ import annotations

import asyncio
import dataclasses
import hmac
import json
from collections.abc import AsyncIterator, Awaitable, Callable

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from daemon.report.html import main_fragment, render_report, report_view
from daemon.report.view import build_view
from daemon.web.follow import Follower
from daemon.web.metrics import metrics_registry
from store.sql import SqlEventStore

__all__ = ["make_app"]

STREAM_EVERY_S = 1.0
COOKIE = "accelopt_token"


def make_app(store: SqlEventStore, *, token: str | None = None) -> Starlette:
    follower = Follower(store)
    registry = metrics_registry(follower, store)

    async def page(request: Request) -> Response:
        tasks = request.query_params.getlist("task") or None
        html = await asyncio.to_thread(_page, follower, store, tasks)
        if request.query_params.get("fragment") == "main":
            return HTMLResponse(main_fragment(html))
        return HTMLResponse(html)

    async def report(request: Request) -> Response:
        tasks = request.query_params.getlist("task") or None

        def data() -> dict[str, object]:
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

    middleware = [Middleware(_TokenCheck, token=token)] if token else []
    return Starlette(
        routes=[
            Route("/", page),
            Route("/api/report", report),
            Route("/api/stream", stream),
            Route("/metrics", metrics),
        ],
        middleware=middleware,
    )


def _page(follower: Follower, store: SqlEventStore, tasks: list[str] | None) -> str:
    position = follower.catch_up()
    view = report_view(follower.report, store.get_texts, tasks=tasks, as_of=f"position {position}")
    return render_report(view, live=True)


class _TokenCheck(BaseHTTPMiddleware):
    def __init__(self, app: object, token: str) -> None:
        super().__init__(app)  # type: ignore[arg-type]
        self.token = token

    async def dispatch(
        self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        given = (
            request.headers.get("authorization", "").removeprefix("Bearer ").strip()
            or request.query_params.get("token")
            or request.cookies.get(COOKIE)
            or ""
        )
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return PlainTextResponse("a token is needed (ACCELOPT_HTTP_TOKEN)", status_code=401)
        response = await call_next(request)
        if request.query_params.get("token"):
            response.set_cookie(COOKIE, self.token, httponly=True, samesite="strict")
        return response
