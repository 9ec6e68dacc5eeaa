"""A fleet worker's procrastinate calls across a database restart (store.jobs.patient): a call
that meets the server away is tried again until it answers, for at most the patience; a
statement's own error is not waited out. On procrastinate's in-memory connector, failing its
first calls as a server that is away fails them."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import psycopg
import pytest
from procrastinate.exceptions import ConnectorException
from procrastinate.manager import JobManager
from procrastinate.testing import InMemoryConnector

from store.jobs import patient
from store.jobs.patient import PatientJobManager


class Away(InMemoryConnector):
    """Its first `failures` calls fail with `error`, as procrastinate's psycopg connector
    raises it (a ConnectorException caused by the driver's error)."""

    def __init__(self, failures: int, error: psycopg.Error | None = None) -> None:
        super().__init__()
        self.failures = failures
        self.error = error or psycopg.OperationalError("connection refused")
        self.listens = 0

    def _fail(self) -> None:
        if self.failures:
            self.failures -= 1
            raise ConnectorException("Database error.") from self.error

    async def generic_execute(self, query: str, suffix: Any, **arguments: Any) -> Any:
        self._fail()
        return await super().generic_execute(query, suffix, **arguments)

    async def listen_notify(self, on_notification: Any, channels: Any) -> None:
        self.listens += 1
        self._fail()
        await super().listen_notify(on_notification, channels)


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(patient, "RETRY_S", 0.01)


def manager(connector: Away, patience_s: float = 30.0) -> PatientJobManager:
    return PatientJobManager(JobManager(connector=connector), patience_s=patience_s)


def test_a_heartbeat_and_a_fetch_wait_the_server_out() -> None:
    connector = Away(3)
    asyncio.run(manager(connector).update_heartbeat(7))
    assert connector.failures == 0
    assert connector.queries == [("update_heartbeat", {"worker_id": 7})]  # once it answered
    connector.failures = 2
    assert asyncio.run(manager(connector).fetch_job(["q"], 7)) is None  # nothing queued
    assert [name for name, _ in connector.queries] == ["update_heartbeat", "fetch_job"]


def test_a_statements_own_error_is_not_waited_out() -> None:
    connector = Away(1, psycopg.errors.UndefinedTable("relation does not exist"))
    with pytest.raises(ConnectorException):
        asyncio.run(manager(connector).update_heartbeat(7))
    assert connector.queries == []


def test_the_wait_ends_with_the_patience() -> None:
    connector = Away(10**6)
    started = time.monotonic()
    with pytest.raises(ConnectorException) as raised:
        asyncio.run(manager(connector, patience_s=0.2).update_heartbeat(7))
    assert isinstance(raised.value.__cause__, psycopg.OperationalError)
    assert 0.2 <= time.monotonic() - started < 5
    assert connector.failures < 10**6 - 1  # it did try again meanwhile


def test_the_listener_listens_again_once_the_server_answers() -> None:
    """procrastinate's own listener ends for good when its new connection fails."""
    connector = Away(2)

    async def notified(**_: Any) -> None:
        return None

    asyncio.run(manager(connector).listen_for_jobs(on_notification=notified, queues=["q"]))
    assert connector.listens == 3
    assert connector.notify_channels == ["procrastinate_queue_v1#q"]
