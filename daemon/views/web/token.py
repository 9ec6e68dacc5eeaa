"""The token rule of everything accelopt serves over HTTP (`accelopt serve`, `daemon --http`,
`accelopt mcp --http`): with a token (ACCELOPT_HTTP_TOKEN) every request must carry it
(`Authorization: Bearer`) or a session: `?token=` once sets a cookie holding a session value,
never the token, good for a page's own requests until it expires (sessions.py). Whether a
token is needed at all is `server.parse_bind`'s: on any address but loopback."""

from __future__ import annotations

import hmac
import time
from collections.abc import Awaitable, Callable

from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from daemon.views.web.sessions import SESSION_LIFETIME_S, Sessions

__all__ = ["COOKIE", "token_middleware"]

COOKIE = "accelopt_session"


def token_middleware(
    token: str | None, clock: Callable[[], float] = time.monotonic
) -> list[Middleware]:
    """The middleware that asks every request for `token` (none without a token); `clock`
    times the sessions out."""
    if not token:
        return []
    return [Middleware(_TokenCheck, token=token, sessions=Sessions(clock=clock))]


class _TokenCheck(BaseHTTPMiddleware):
    """The token, by header or `?token=` (which opens a session), or a session's cookie."""

    def __init__(self, app: object, token: str, sessions: Sessions) -> None:
        super().__init__(app)  # type: ignore[arg-type]
        self.token, self.sessions = token, sessions

    async def dispatch(
        self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        given = bearer or request.query_params.get("token")
        if given:
            allowed = hmac.compare_digest(given.encode(), self.token.encode())
        else:
            allowed = self.sessions.valid(request.cookies.get(COOKIE, ""))
        if not allowed:
            return PlainTextResponse("a token is needed (ACCELOPT_HTTP_TOKEN)", status_code=401)
        response = await call_next(request)
        if request.query_params.get("token"):
            # Secure only over https (a TLS proxy's X-Forwarded-Proto counts): a browser keeps
            # no Secure cookie it got over plain http, and loopback pages are served so.
            response.set_cookie(
                COOKIE, self.sessions.issue(), max_age=SESSION_LIFETIME_S, httponly=True,
                samesite="strict", secure=request.url.scheme == "https",
            )  # fmt: skip
        return response
