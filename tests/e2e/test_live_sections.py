"""The live page of a 100-task log, in headless Chromium, follows the log section by section: one
event for one task brings that task's section, its library row and the summary line over the
wire (0.3 % of the page here, about 1 % of a 200,000-event page), the other sections keep their
DOM nodes, a new task whose name is markup is placed in order and shown as text, and a page
behind by more than one reply holds catches up in parts without a reload. The page is opened
with the token and follows the log on its session's cookie.

ACCELOPT_LIVE_TEST_EVENTS=200000 (with `--timeout 1800`) measures a long log's page the same way
(minutes: the log is filled, the page drawn and loaded; the sizes and times are printed with
`-s`)."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from daemon.coordinator.disk import state_disk
from daemon.views.web import live
from daemon.views.web.server import WebServer
from events.catalog import CandidateGenerated, PlanProposed
from events.codec import encode
from store.benchmark import fill
from store.sql import SqlEventStore
from store.synthetic import SyntheticWorkload
from tests.support.browser import Browser, browser, needs_chromium
from tests.support.daemon_process import wait_until

TOKEN = "s3cret-token"
TASKS = 100
EVENTS = int(os.environ.get("ACCELOPT_LIVE_TEST_EVENTS", "4000"))
"""In 1,000 appends (of 4 events at least) to a random task each: all 100 tasks are in it."""
STREAM = "live-sections-test"


@pytest.fixture
def served(
    tmp_path: Path,
    fresh_sqlite_url: Callable[[], str],
    open_stores: Callable[[str], SqlEventStore],
) -> Iterator[tuple[str, SqlEventStore]]:
    """A log of 100 synthetic tasks, served with a token on a free loopback port."""
    store = open_stores(fresh_sqlite_url())
    fill(store, SyntheticWorkload(seed=7, tasks=TASKS), EVENTS, max(4, EVENTS // 1000))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = WebServer(store, "127.0.0.1", port, TOKEN,
                       state_disk=partial(state_disk, tmp_path, 0))  # fmt: skip
    server.start()
    try:
        yield server.address, store
    finally:
        server.stop()


def sections(page: Browser) -> list[tuple[str, str]]:
    """(id, version) of the page's sections, in page order."""
    found: list[list[str]] = page.driver.execute_script(
        "return Array.from(document.querySelectorAll('[data-section]'),"
        " n => [n.getAttribute('data-section'), n.getAttribute('data-version')]);"
    )
    return [(section, version) for section, version in found]


def mark(page: Browser, *section_ids: str) -> None:
    """A property on each section's node, which a node drawn anew lacks."""
    page.driver.execute_script(
        "for (const id of arguments[0]) {"
        " for (const n of document.querySelectorAll('[data-section]'))"
        "  if (n.getAttribute('data-section') === id) n.keptNode = id; }",
        list(section_ids),
    )


def marked(page: Browser) -> set[str]:
    found: list[str] = page.driver.execute_script(
        "return Array.from(document.querySelectorAll('[data-section]'))"
        ".filter(n => n.keptNode).map(n => n.keptNode);"
    )
    return set(found)


def fetched(page: Browser) -> list[dict[str, Any]]:
    """The /api/sections replies the page fetched, with their body sizes (Resource Timing)."""
    found: list[dict[str, Any]] = page.driver.execute_script(
        "return performance.getEntriesByType('resource')"
        ".filter(e => new URL(e.name).pathname === '/api/sections')"
        ".map(e => ({url: e.name, bytes: e.encodedBodySize}));"
    )
    return found


def candidate(task: str, candidate_id: str) -> Any:
    return encode(
        CandidateGenerated(
            task=task, search_id="live-search", iteration=1, candidate_id=candidate_id,
            parent_candidate_id=None, plan_id=None, sample_index=0, origin="executor",
            kernel_hash="0" * 64, source_blob="0" * 64, llm_call_id=None,
        )
    )  # fmt: skip


def plan(task: str) -> Any:
    return encode(
        PlanProposed(
            task=task, search_id="live-search", iteration=0, plan_id="live-plan",
            plan_index=0, parent_candidate_id="none", plan_blob="0" * 64, llm_call_id="none",
        )
    )  # fmt: skip


@needs_chromium
def test_one_event_brings_only_its_sections_and_the_rest_keep_their_nodes(
    served: tuple[str, SqlEventStore], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, store = served
    with browser() as page:
        page.open(f"{url}?token={TOKEN}")  # the page's own requests go on the session cookie
        page_bytes = page.driver.execute_script(
            "return performance.getEntriesByType('navigation')[0].encodedBodySize;"
        )
        before = dict(sections(page))
        assert sum(s.startswith("task:") for s in before) == TASKS
        changed = {"summary", "row:task0042", "task:task0042"}
        mark(page, *before)
        candidates = int(page.attribute("[data-section='task:task0042']", "data-candidates")[0])

        appended = time.monotonic()
        store.append(STREAM, [candidate("task0042", "cand-live")])
        wait_until(lambda: page.count("tr#c-cand-live") == 1, 60, "the new candidate shown")
        shown_after = time.monotonic() - appended
        after = dict(sections(page))
        head = str(store.head())
        assert {s for s in after if after[s] != before[s]} == changed
        assert {after[s] for s in changed} == {head}  # each one's version: this event's
        assert int(page.attribute("[data-section='task:task0042']", "data-candidates")[0]) == (
            candidates + 1
        )
        assert marked(page) == set(before) - changed  # every other node is the same node
        replies = fetched(page)
        assert len(replies) == 1
        update_bytes = replies[0]["bytes"]
        assert 0 < update_bytes < page_bytes / 20

        # a new task, its name markup: placed in order, shown as text, nothing else redrawn
        mark(page, *after)
        name = 'task0050<img src=x onerror="document.title=1">'
        store.append(STREAM, [plan(name)])
        wait_until(lambda: f"task:{name}" in dict(sections(page)), 60, "the new task")
        order = [s for s, _ in sections(page)]
        assert order.index(f"row:{name}") == order.index("row:task0050") + 1
        assert order.index(f"task:{name}") == order.index("task:task0050") + 1
        assert page.count("img") == 0
        assert name in page.driver.find_element("css selector", "tbody#library-rows").text
        redrawn = {"summary", "economy"}  # the economy's table has a row per task
        assert marked(page) == set(after) - redrawn

        # behind by more than a reply holds: the changes come one log position a reply, the
        # page asking again until it is at the head, and nothing else is drawn anew
        monkeypatch.setattr(live, "SECTIONS_BYTES", 1)
        now = dict(sections(page))
        mark(page, *now)
        asked = len(fetched(page))
        tasks = ("task0003", "task0061", "task0099")
        store.append(STREAM, [candidate(t, f"cand-behind-{t}") for t in tasks])
        wait_until(lambda: page.count("tr[id^='c-cand-behind-']") == 3, 60, "the 3 candidates")
        wait_until(lambda: dict(sections(page))["summary"] == str(store.head()), 10, "the head")
        assert len(fetched(page)) - asked == 3  # one reply per position
        touched = {"summary", *(f"{kind}:{t}" for t in tasks for kind in ("row", "task"))}
        assert marked(page) == set(now) - touched  # no reload: every other node kept
        assert page.console() == []
        print(
            f"\n100 tasks, {EVENTS} events: page {page_bytes:,} B; one event's update "
            f"{update_bytes:,} B ({update_bytes / page_bytes:.2%}), on the page "
            f"{shown_after:.2f} s after the append"
        )
