"""The MCP server's pure parts: each client's device budget and when it says to come back,
client names made safe for ids, and agents' candidates told apart by their job ids."""

from __future__ import annotations

import pytest

from agents.search import ids
from daemon.mcp.budget import HOUR_S, DeviceBudget
from daemon.mcp.errors import Refusal
from daemon.mcp.route import DaemonDisagrees, RouteOptions
from daemon.mcp.server import client_key
from events.catalog import DaemonStarted, agent_of_job


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_client_is_refused_once_its_hour_holds_its_budget_and_told_when_to_come_back() -> None:
    clock = Clock()
    budget = DeviceBudget(10.0, clock=clock)
    budget.admit("a")
    budget.charge("a", 6.0)
    clock.now += 100
    budget.admit("a")  # 6 of 10 used: admitted
    budget.charge("a", 6.0)
    budget.admit("b")  # another client's hour is its own
    with pytest.raises(Refusal) as refused:
        budget.admit("a")
    assert refused.value.kind == "budget"
    # 12 used: once the first 6 age out (an hour after they were charged) it is under 10
    assert refused.value.retry_after_s == pytest.approx(HOUR_S - 100)
    clock.now += HOUR_S - 100
    budget.admit("a")
    assert budget.used("a") == 6.0


def test_client_names_become_safe_id_parts() -> None:
    assert client_key("claude-code") == "claude-code"
    assert client_key("../x~y|z") == ".._x_y_z"
    assert client_key("") == "unknown"
    assert len(client_key("n" * 500)) == 64


def test_an_agents_profile_jobs_name_its_client_and_the_daemons_none() -> None:
    session = ids.agent_session_id("claude-code", "silu", "ab" * 32)
    candidate = ids.agent_candidate_id(session, "f" * 64)
    job = ids.profile_job_id(session, candidate, "candidate")
    assert agent_of_job(job) == "claude-code"
    search = ids.search_id("silu", "ab" * 32, 1)
    assert agent_of_job(ids.profile_job_id(search, ids.baseline_id(search), "baseline")) is None


def _started(**run: str | None) -> DaemonStarted:
    return DaemonStarted(host="h", pid=1, version="0", watch_dir=None, sandbox="bubblewrap", **run)


def test_the_servers_options_default_to_the_running_daemons_and_may_not_contradict_them() -> None:
    daemon = _started(backend="triton", target="NVIDIA H100 80GB HBM3", shapes="small")
    given = RouteOptions(backend=None, target=None, shapes=None, devices=["0"])
    assert given.with_daemons(daemon, "pid 1") == RouteOptions(
        "triton", "NVIDIA H100 80GB HBM3", "small", ["0"]
    )
    agreeing = RouteOptions("triton", None, "small", ["0"])
    assert agreeing.with_daemons(daemon, "pid 1").target == "NVIDIA H100 80GB HBM3"
    with pytest.raises(DaemonDisagrees) as refused:
        RouteOptions(None, None, "full", ["0"]).with_daemons(daemon, "pid 1 on h")
    assert refused.value.exit_code == 2
    assert refused.value.message.startswith(
        "--shapes full, but the daemon on this database runs --shapes small (pid 1 on h)"
    )
    # a daemon recorded before it named its target and shapes holds nothing against them
    older = _started(backend="nkisim", target=None, shapes=None)
    assert RouteOptions(None, "trn1", "full", []).with_daemons(older, "pid 1") == RouteOptions(
        "nkisim", "trn1", "full", []
    )
    assert given.with_daemons(None, "pid 1") == given
