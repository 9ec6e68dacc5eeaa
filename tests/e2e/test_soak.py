"""`accelopt bench soak` end to end: a minute of churn on the real daemon, with its agents on
the scripted LLM server, ends with work done, nothing left running and a clean exit."""

from __future__ import annotations

import io
import json
import subprocess

import pytest
from rich.console import Console

from daemon.bench.soak.report import TRENDED
from daemon.bench.soak.table import soak_table
from tests.support.daemon_process import PROGRAM


@pytest.mark.timeout(240)
def test_a_one_minute_soak_reports_work_done_and_a_clean_stop() -> None:
    done = subprocess.run(
        [*PROGRAM, "bench", "soak", "--minutes", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=200,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    assert set(result["trends"]) == set(TRENDED)
    for trend in result["trends"].values():
        assert {"slope_per_h", "se_per_h", "bound_per_h", "verdict", "first", "last"} <= set(trend)
        assert trend["samples"] >= 10
    assert result["minutes"] == 1
    assert result["churn"]["actions"] >= 4
    assert result["churn"]["errors"] == []
    assert result["events_per_min"] > 0
    assert result["jobs_completed"] > 0
    assert result["searches_finished"] > 0
    assert result["plans"] > 0
    assert result["llm_calls"] > 0
    assert result["llm_calls_answered"] >= result["llm_calls"]  # a drain may leave one unrecorded
    assert result["clock"]["snapshots"] > 0
    assert result["jobs_left_running"] == 0
    assert result["exit_code"] == 0
    assert result["daemon_died_at_s"] is None
    assert result["children_left"] == result["orphans"] == []
    assert result["log_errors"] == {}
    assert "samples_raw" not in result
    printed = io.StringIO()
    Console(file=printed, width=200).print(soak_table(result))  # the table, from the same run
    for row in ("resident memory, MB", "jobs left running after the stop", "stop time, s (wall)"):
        assert row in printed.getvalue()
