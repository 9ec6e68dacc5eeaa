"""The live pages served on loopback by a real uvicorn, in this process: with a token, `?token=`
opens a session whose cookie holds a random value, never the token; a cookie holding the token
itself, an unknown session or an expired one is refused like no token; the cookie is Secure
only over https; /metrics shows the state disk's free space, its floor and whether new
jobs pause for it; and /api/sections, on the session too, brings a page far behind up to date
in replies of bounded size."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from functools import partial
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Protocol

import pytest
from prometheus_client.parser import text_string_to_metric_families

from daemon.coordinator.disk import DiskSpace
from daemon.coordinator.disk import state_disk as look_at_disk
from daemon.views.report.sections import page_order
from daemon.views.web import live
from daemon.views.web.server import WebServer
from daemon.views.web.sessions import SESSION_LIFETIME_S, Sessions
from daemon.views.web.token import COOKIE
from store.benchmark import fill
from store.sql import SqlEventStore
from store.synthetic import SyntheticWorkload

TOKEN = "s3cret-token"


class Reply:
    def __init__(self, status: int, headers: dict[str, str], body: str) -> None:
        self.status, self.headers, self.body = status, headers, body

    def cookie(self) -> SimpleCookie:
        return SimpleCookie(self.headers.get("set-cookie", ""))


def get(url: str, headers: dict[str, str] | None = None) -> Reply:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status, found, body = response.status, response.headers, response.read()
    except urllib.error.HTTPError as e:
        status, found, body = e.code, e.headers, e.read()
    return Reply(status, {k.lower(): v for k, v in found.items()}, body.decode())


def session_of(url: str, headers: dict[str, str] | None = None) -> str:
    opened = get(f"{url}metrics?token={TOKEN}", headers)
    assert opened.status == 200
    return opened.cookie()[COOKIE].value


def with_cookie(value: str) -> dict[str, str]:
    return {"Cookie": f"{COOKIE}={value}"}


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Serve(Protocol):
    def __call__(
        self,
        *,
        token: str | None,
        clock: Callable[[], float] = ...,
        state_disk: Callable[[], DiskSpace] | None = None,
        store: SqlEventStore | None = None,
    ) -> str: ...


@pytest.fixture
def serve(
    tmp_path: Path,
    fresh_sqlite_url: Callable[[], str],
    open_stores: Callable[[str], SqlEventStore],
) -> Iterator[Serve]:
    """Starts a server of `store`'s log (a fresh one by default) on a free loopback port;
    gives its base URL."""
    servers: list[WebServer] = []

    def start(
        *,
        token: str | None,
        clock: Callable[[], float] = time.monotonic,
        state_disk: Callable[[], DiskSpace] | None = None,
        store: SqlEventStore | None = None,
    ) -> str:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        store = store or open_stores(fresh_sqlite_url())
        disk = state_disk or partial(look_at_disk, tmp_path, 0)
        server = WebServer(store, "127.0.0.1", port, token, state_disk=disk, clock=clock)
        server.start()
        servers.append(server)
        return server.address

    yield start
    for server in servers:
        server.stop()


def test_the_cookie_holds_a_session_and_never_the_token(serve: Serve) -> None:
    url = serve(token=TOKEN)
    opened = get(f"{url}metrics?token={TOKEN}")
    assert opened.status == 200
    cookie = opened.cookie()[COOKIE]
    assert cookie.value != TOKEN
    assert TOKEN not in opened.headers["set-cookie"]
    assert len(cookie.value) >= 40  # 32 random bytes, base64
    assert cookie["httponly"] is True
    assert cookie["samesite"].lower() == "strict"
    assert cookie["max-age"] == str(SESSION_LIFETIME_S)
    assert not cookie["secure"]  # plain http on loopback: a Secure cookie would be dropped

    assert get(f"{url}metrics", with_cookie(cookie.value)).status == 200
    assert get(url, with_cookie(cookie.value)).status == 200  # the page, by its session
    assert session_of(url) != cookie.value  # each presentation of the token, a new session

    assert get(f"{url}metrics").status == 401
    assert get(f"{url}metrics", with_cookie(TOKEN)).status == 401  # forged: the token itself
    assert get(f"{url}metrics", {"Cookie": f"accelopt_token={TOKEN}"}).status == 401  # as before
    assert get(f"{url}metrics", with_cookie(cookie.value + "x")).status == 401  # unknown
    assert get(f"{url}metrics", {"Authorization": f"Bearer {TOKEN}"}).status == 200
    bearer = get(f"{url}metrics", {"Authorization": f"Bearer {TOKEN}"})
    assert "set-cookie" not in bearer.headers  # a script with the token needs no session
    assert get(f"{url}metrics?token=wrong").status == 401


def test_a_session_expires(serve: Serve) -> None:
    clock = FakeClock()
    url = serve(token=TOKEN, clock=clock)
    session = session_of(url)
    clock.now += SESSION_LIFETIME_S - 1
    assert get(f"{url}metrics", with_cookie(session)).status == 200
    clock.now += 1
    assert get(f"{url}metrics", with_cookie(session)).status == 401
    renewed = session_of(url)  # the token again opens a new one
    assert get(f"{url}metrics", with_cookie(renewed)).status == 200


def test_the_cookie_is_secure_behind_a_tls_proxy(serve: Serve) -> None:
    url = serve(token=TOKEN)
    # uvicorn believes X-Forwarded-Proto from loopback, where such a proxy would sit
    opened = get(f"{url}metrics?token={TOKEN}", {"X-Forwarded-Proto": "https"})
    assert opened.cookie()[COOKIE]["secure"] is True


def test_the_oldest_sessions_are_dropped_past_the_limit() -> None:
    sessions = Sessions(limit=2)
    first, second, third = sessions.issue(), sessions.issue(), sessions.issue()
    assert not sessions.valid(first)
    assert sessions.valid(second)
    assert sessions.valid(third)
    assert not sessions.valid("")


def gauges(url: str) -> dict[str, float]:
    reply = get(f"{url}metrics")
    assert reply.status == 200
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(reply.body)
        for sample in family.samples
        if sample.name.startswith("accelopt_state_disk_")
    }


def test_metrics_show_the_state_disk_and_its_floor(serve: Serve, tmp_path: Path) -> None:
    floor_mb = [0.0]
    url = serve(token=None, state_disk=lambda: look_at_disk(tmp_path, floor_mb[0]))
    above = gauges(url)
    assert above["accelopt_state_disk_new_jobs_paused"] == 0
    assert above["accelopt_state_disk_floor_bytes"] == 0
    assert above["accelopt_state_disk_free_bytes"] > 0

    floor_mb[0] = 2**40  # more than any disk has
    under = gauges(url)
    assert under["accelopt_state_disk_new_jobs_paused"] == 1
    assert under["accelopt_state_disk_floor_bytes"] == 2**60
    assert 0 < under["accelopt_state_disk_free_bytes"] < under["accelopt_state_disk_floor_bytes"]


def test_the_sections_need_the_session_and_a_position(serve: Serve) -> None:
    url = serve(token=TOKEN)
    assert get(f"{url}api/sections?since=0").status == 401
    session = with_cookie(session_of(url))
    reply = get(f"{url}api/sections?since=0", session)
    assert reply.status == 200
    assert json.loads(reply.body) == {"head": 0, "through": 0, "reload": False, "sections": []}
    for since in ("", "-1", "x", "1e3", "9" * 20):
        refused = get(f"{url}api/sections?since={since}", session)
        assert refused.status == 400
        assert "is not a log position" in refused.body
    ahead = json.loads(get(f"{url}api/sections?since=5", session).body)  # another log's page
    assert ahead["reload"] is True


def test_a_page_far_behind_catches_up_in_bounded_parts(
    serve: Serve,
    fresh_sqlite_url: Callable[[], str],
    open_stores: Callable[[str], SqlEventStore],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = open_stores(fresh_sqlite_url())
    fill(store, SyntheticWorkload(seed=5, tasks=6), 600, 10)
    url = serve(token=None, store=store)
    whole = json.loads(get(f"{url}api/sections?since=0").body)  # under 1 MB: in one reply
    assert whole["through"] == whole["head"] == store.head()
    names = sorted({s["id"].split(":", 1)[1] for s in whole["sections"] if ":" in s["id"]})
    assert len(names) == 6
    assert [s["id"] for s in whole["sections"]] == [p.section for p in page_order(names)]

    bound = 20_000
    monkeypatch.setattr(live, "SECTIONS_BYTES", bound)
    since, parts, seen = 0, 0, dict[str, str]()
    while since < store.head():
        reply = json.loads(get(f"{url}api/sections?since={since}").body)
        assert not reply["reload"]
        assert reply["through"] > since  # every reply brings the page further
        size = sum(len(s["html"]) for s in reply["sections"])
        one_position = len({s["version"] for s in reply["sections"]}) == 1
        assert size <= bound or one_position
        assert all(since < s["version"] <= reply["through"] for s in reply["sections"])
        seen |= {s["id"]: s["html"] for s in reply["sections"]}
        since, parts = reply["through"], parts + 1
    assert parts > 2
    assert seen == {s["id"]: s["html"] for s in whole["sections"]}  # the same page in the end
