"""The daemon's PostgreSQL lock across a lost session: it is taken again by a new session, also
when the first attempt meets the server still away (once, the next check reused the dead
connection and the daemon died of a PendingRollbackError)."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest
import sqlalchemy as sa

import daemon.coordinator.lock as lock_module
from daemon.coordinator.lock import AnotherDaemon, DaemonLock
from store.errors import StoreError


def _end_sessions_of_this_process(admin: sa.Engine) -> int:
    with admin.begin() as connection:
        ended = connection.execute(
            sa.text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE application_name LIKE :name"
            ),
            {"name": f"accelopt daemon pid {os.getpid()} on %"},
        ).scalar_one()
    return int(ended)


@pytest.mark.postgres
def test_a_lost_session_is_taken_again_after_the_server_came_back(
    fresh_pg_url: Callable[[], str], pg_admin: sa.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = fresh_pg_url()
    held = DaemonLock.acquire(url)
    try:
        assert _end_sessions_of_this_process(pg_admin) == 1
        real = lock_module._advisory_session

        def server_away(*_args: object) -> None:
            raise StoreError("taking the daemon lock: connection refused")

        monkeypatch.setattr(lock_module, "_advisory_session", server_away)
        with pytest.raises(StoreError, match="connection refused"):
            held.check()  # the session is gone and the server does not answer yet
        monkeypatch.setattr(lock_module, "_advisory_session", real)
        held.check()  # the server is back: a new session takes the lock
        held.check()  # and keeps it
        with pytest.raises(AnotherDaemon):
            DaemonLock.acquire(url).release()
    finally:
        held.release()
    DaemonLock.acquire(url).release()  # released with the daemon
