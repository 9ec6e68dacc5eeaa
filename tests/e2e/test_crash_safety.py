"""Crash safety on SQLite: a writer killed with SIGKILL at random moments, 20 times."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from events.codec import canonical_json
from store.projections.library import LibraryProjection
from store.projections.runner import ProjectionRunner, replay
from store.sql import SqlEventStore
from tests.support.crash_writer import BATCH

KILLS = 20


def check_invariants(path: Path) -> int:
    """The invariants after a crash; returns the number of events."""
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        count, low, high = connection.execute(
            "SELECT count(*), min(position), max(position) FROM events"
        ).fetchone()
        if count:
            assert (low, high) == (1, count), "positions are not dense"
        torn = connection.execute(
            "SELECT json_extract(metadata, '$.batch') AS b, count(*) FROM events "
            "GROUP BY b HAVING count(*) != ?",
            (BATCH,),
        ).fetchall()
        assert torn == [], f"partial batches: {torn}"
        gaps = connection.execute(
            "SELECT stream_id FROM events GROUP BY stream_id "
            "HAVING count(*) != max(stream_version) OR min(stream_version) != 1"
        ).fetchall()
        assert gaps == [], f"stream versions with gaps: {gaps}"
    return int(count)


def test_sigkill_loses_nothing_recorded_and_projections_stay_exact(
    fresh_sqlite_url: Callable[[], str],
) -> None:
    url = fresh_sqlite_url()
    path = Path(url.removeprefix("sqlite:///"))
    rng = random.Random(20261125)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    previous = 0
    for kill in range(KILLS):
        writer = subprocess.Popen(
            [sys.executable, "-m", "tests.support.crash_writer", url, str(kill)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert writer.stdout is not None
        assert writer.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.02, 0.4))
        writer.send_signal(signal.SIGKILL)
        assert writer.wait(timeout=30) == -signal.SIGKILL
        writer.stdout.close()

        count = check_invariants(path)
        assert count >= previous, "committed events disappeared"
        previous = count

        store = SqlEventStore.open(url)
        try:
            projection = LibraryProjection()
            saved = store.load_checkpoint(projection.name)
            if saved is not None:
                assert saved.position <= count
                rebuilt = replay(store, projection, until=saved.position, use_snapshots=False)
                assert rebuilt.position == saved.position
                assert canonical_json(projection.dump(rebuilt.state)) == canonical_json(
                    saved.state
                ), f"kill {kill}: persisted projection differs from a rebuild"
        finally:
            store.close()
    assert previous > KILLS * BATCH  # the writers got real work done between kills

    store = SqlEventStore.open(url)
    try:
        runner = ProjectionRunner(store, LibraryProjection())
        runner.catch_up()
        full = replay(store, LibraryProjection(), use_snapshots=False)
        assert runner.position == full.position == previous
        assert canonical_json(LibraryProjection().dump(runner.state)) == canonical_json(
            LibraryProjection().dump(full.state)
        )
        assert full.state.tasks, "the workload produced no tasks"
    finally:
        store.close()
