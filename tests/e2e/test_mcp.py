"""An outside coding agent works through accelopt (issue 28): the official `mcp` SDK's client
over stdio against `accelopt mcp`, beside a real daemon on the same database, whose queue runs
the agent's jobs (SQLite: the daemon's own workers; PostgreSQL: a fleet worker's).

The agent lists the tools and a task, gets a typed error for a wrong kernel, profiles two
kernels and submits the faster with a lesson; the daemon's library folder and `accelopt export`
follow its promotion; `accelopt events` shows the agent's origin, a replay from zero gives the
library and memory the daemon kept, and the report shows the agent's candidates.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from agents.memory import MemoryProjection
from events.catalog import (
    KernelPromoted,
    PlanProposed,
    ProfileRecorded,
    SearchFinished,
)
from events.codec import canonical_json
from events.projection import Projection
from nkibench.suites import NKI_LEGACY_SUITE as SUITE
from store.engine import make_engine
from store.jobs import open_queue
from store.projections.library import LibraryProjection
from store.projections.runner import replay
from store.sql import SqlEventStore
from tests.support import agent_script
from tests.support.cli import run_cli, search_args
from tests.support.daemon_process import DaemonProcess, WorkerProcess, wait_until
from tests.support.llm_server import running_llm
from tests.support.mcp_client import Agent, stdio_agent

TOOLS = {
    "list_tasks",
    "get_task",
    "lessons",
    "check_kernel",
    "profile_kernel",
    "submit_kernel",
    "history",
}
LESSON = "**One sigmoid activation instead of exp, add and reciprocal**\n\nScalarE does it once."
MODEL = "test-model-7"
SETTLE = timedelta(seconds=0.5)
"""A job submitted while a worker's claim was being written is not the claim's to see."""


async def agent_session(agent: Agent) -> dict[str, Any]:
    """What the agent does, and the answers it got."""
    seen: dict[str, Any] = {"tools": set(await agent.tools())}
    seen["tasks"] = (await agent.call("list_tasks")).result
    seen["task"] = await agent.call("get_task", task="silu")
    seen["wrong"] = await agent.call("check_kernel", task="silu", source=agent_script.WRONG)
    seen["slow"] = await agent.call(
        "profile_kernel", task="silu", source=agent_script.SLOW, plan="narrow tiles", model=MODEL
    )
    seen["fast"] = await agent.call(
        "profile_kernel", task="silu", source=agent_script.FAST, plan="sigmoid", model=MODEL
    )
    seen["submit"] = await agent.call(
        "submit_kernel",
        task="silu",
        source=agent_script.FAST,
        plan="sigmoid",
        parent=None,
        lesson=LESSON,
        model=MODEL,
    )
    seen["lessons"] = (await agent.call("lessons", task="silu")).result
    seen["history"] = (await agent.call("history", task="silu")).result
    return seen


def check_the_session(seen: dict[str, Any]) -> None:
    assert seen["tools"] == TOOLS
    (silu,) = [t for t in seen["tasks"] if t["task"] == "silu"]
    (platform,) = silu["platforms"]
    assert platform["platform"] == "nkisim:trn2"
    assert platform["baseline"]["kind"] == "estimated"
    assert seen["task"].value()["files"]["kernel.py"] == agent_script.BASELINE
    seen["wrong"].refusal("incorrect")
    slow, fast = seen["slow"].value(), seen["fast"].value()
    assert fast["latency"]["kind"] == slow["latency"]["kind"] == "estimated"
    assert fast["latency"]["ms"] < slow["latency"]["ms"]
    assert fast["counters"]
    assert fast["pct_of_peak"] is not None
    assert fast["caveats"]  # the cost model says where its estimate is weak
    submitted = seen["submit"].value()
    assert submitted["promoted"]
    assert submitted["speedup"] > 1.0
    assert submitted["profile"]["candidate_id"] == fast["candidate_id"]
    (lesson,) = [item for item in seen["lessons"] if item["provenance"]["agent"] is not None]
    assert lesson["item_id"] == submitted["lesson_item_id"]
    assert lesson["provenance"]["agent"] == {
        "client": "claude-code-test",
        "client_version": "9.9",
        "model": MODEL,
    }
    fates = {h["candidate_id"]: h for h in seen["history"]}
    assert fates[fast["candidate_id"]]["fate"] == "promoted"
    assert fates[fast["candidate_id"]]["agent"] == f"claude-code-test/{MODEL}"
    assert fates[slow["candidate_id"]]["fate"] == "profiled"


def check_the_daemon_followed(daemon: DaemonProcess, seen: dict[str, Any]) -> None:
    fast = seen["fast"].content["candidate_id"]
    library = daemon.home / "library" / "silu" / "kernel.py"
    wait_until(lambda: library.exists() and fast in library.read_text(), 30, "the library folder")
    assert agent_script.FAST in library.read_text()
    exported = run_cli("--db", daemon.db, "export", "silu")
    assert exported.code == 0, exported.err
    assert agent_script.FAST in exported.out
    assert f"candidate {fast}" in exported.out

    listed = run_cli("--db", daemon.db, "events", "--type", "CandidateGenerated", "--json")
    stored = [line["data"] for line in listed.lines()]
    agents = [data for data in stored if data["origin"] == "agent"]
    assert {d["candidate_id"] for d in agents} == {seen["slow"].content["candidate_id"], fast}
    assert {d["agent"]["client"] for d in agents} == {"claude-code-test"}
    assert {d["agent"]["model"] for d in agents} == {MODEL}
    # the agent's jobs ran on the daemon's queue, each recorded once: the two profiles and the
    # re-verification of the submitted kernel (a check is not recorded)
    jobs = [p.job_id for p in daemon.events(ProfileRecorded) if p.job_id.startswith("agent~")]
    slow = seen["slow"].content["candidate_id"]
    assert sorted(job.split("|", 1)[1] for job in jobs) == sorted(
        [f"{slow}|candidate", f"{fast}|candidate", f"{fast}|reverify"]
    )
    (promoted,) = daemon.events(KernelPromoted, candidate_id=fast)
    assert promoted.latency_kind == "estimated"
    # `accelopt status`: the best and promoted kernels are the agent's, beside the baseline
    status = run_cli("--db", daemon.db, "status", "--json").json()
    (platform,) = next(t for t in status["tasks"] if t["task"] == "silu")["platforms"]
    assert platform["promoted_by"] == platform["best_by"] == "claude-code-test"
    assert platform["agent_profiles"] == 3  # the two profiles and the re-verification
    assert platform["profiles"] > platform["agent_profiles"]  # and the daemon's own


def check_replay_and_report(daemon: DaemonProcess, tmp_path: Path) -> None:
    store = SqlEventStore.open(daemon.db)
    try:
        projections: tuple[Projection[Any], ...] = (LibraryProjection(), MemoryProjection())
        for projection in projections:
            kept = store.load_checkpoint(projection.name)  # what the daemon folded as it ran
            assert kept is not None
            after = [stored.type for stored in store.read_all(after=kept.position)]
            assert after in ([], ["WorkerStopped"]), after  # a fleet worker's stop may follow
            again = replay(store, projection, until=kept.position, use_snapshots=False)
            assert canonical_json(projection.dump(again.state)) == canonical_json(kept.state)
    finally:
        store.close()
    page = tmp_path / "report.html"
    made = run_cli("--db", daemon.db, "report", "--out", str(page))
    assert made.code == 0, made.err
    assert f"agent claude-code-test/{MODEL}" in page.read_text()


def run_agent(env: dict[str, str]) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        async with stdio_agent(
            env, "--shapes", "small", name="claude-code-test", version="9.9"
        ) as agent:
            return await agent_session(agent)

    return anyio.run(main)


def test_an_agent_over_stdio_profiles_submits_and_is_promoted_by_the_daemon_on_sqlite(
    tmp_path: Path,
) -> None:
    daemon = DaemonProcess(tmp_path / "d", "--shapes", "small")
    daemon.drop(SUITE / "silu", "silu")
    daemon.start()
    try:
        wait_until(lambda: daemon.events(ProfileRecorded, purpose="baseline"), 60, "the baseline")
        seen = run_agent(daemon.env)
        check_the_session(seen)
        check_the_daemon_followed(daemon, seen)
        # a server at other shapes than the daemon's would compare with the wrong baselines
        other = run_cli("--db", daemon.db, "mcp", "--shapes", "full")
        assert other.code == 2, other.err
        assert "--shapes full, but the daemon on this database runs --shapes small" in other.err
    finally:
        assert daemon.stop() == 0
    check_replay_and_report(daemon, tmp_path)


@pytest.mark.postgres
def test_the_same_on_postgresql_with_a_fleet_worker(
    tmp_path: Path, fresh_pg_url: Callable[[], str]
) -> None:
    url = fresh_pg_url()
    worker = WorkerProcess(
        tmp_path / "h1", url, "--backend", "nkisim", "--devices", "1", "--host", "h1"
    )
    daemon = DaemonProcess(tmp_path / "d", "--shapes", "small", env={"ACCELOPT_DB": url})
    daemon.drop(SUITE / "silu", "silu")
    worker.start()
    daemon.start()
    try:
        wait_until(lambda: daemon.events(ProfileRecorded, purpose="baseline"), 60, "the baseline")
        seen = run_agent(daemon.env)
        check_the_session(seen)
        check_the_daemon_followed(daemon, seen)
    finally:
        assert daemon.stop() == 0
        assert worker.stop() == 0
    check_replay_and_report(daemon, tmp_path)


def test_two_agents_at_once_are_both_served_below_the_daemons_search(tmp_path: Path) -> None:
    """One device, a search of the daemon's running (the scripted LLM), and two agents
    profiling at the same time: both get their answers, and by the jobs' own times no agent
    job ever started while a job of the search was waiting."""
    with running_llm(agent_script.answer) as llm:
        daemon = DaemonProcess(
            tmp_path / "d",
            "--shapes",
            "small",
            *search_args(iterations=1, beam=1, plans=2, samples=2),
            env=agent_script.llm_env(llm.url),
        )
        daemon.drop(SUITE / "silu", "silu")
        daemon.start()
        try:
            wait_until(lambda: daemon.events(PlanProposed), 60, "the search's first plan")

            async def agent(name: str) -> list[Any]:
                async with stdio_agent(daemon.env, "--shapes", "small", name=name) as client:
                    return [
                        await client.call("profile_kernel", task="silu", source=source)
                        for source in (agent_script.FAST, agent_script.SLOW)
                    ]

            async def both() -> dict[str, list[Any]]:
                answers: dict[str, list[Any]] = {}

                async def run(name: str) -> None:
                    answers[name] = await agent(name)

                async with anyio.create_task_group() as group:
                    for name in ("agent-a", "agent-b"):
                        group.start_soon(run, name)
                return answers

            answers = anyio.run(both)
            wait_until(lambda: daemon.events(SearchFinished), 120, "the daemon's search")
        finally:
            assert daemon.stop() == 0

    for name, (fast, slow) in answers.items():
        assert fast.value()["latency"]["ms"] < slow.value()["latency"]["ms"], name
    engine = make_engine(daemon.db)
    try:
        queue = open_queue(engine)
        jobs = [listed.job for listed in queue.listing()]
        queue.close()
    finally:
        engine.dispose()
    agents = [j for j in jobs if j.job_id.startswith("agent~")]
    searches = [j for j in jobs if not j.job_id.startswith("agent~")]
    assert {j.job_id.split("~")[1] for j in agents} == {"agent-a", "agent-b"}
    assert len(agents) == 4
    assert {j.priority for j in agents} == {-1.0}
    assert min(j.priority for j in searches) >= 0
    for job in agents:
        assert job.started_at is not None
        waiting = [
            s.job_id
            for s in searches
            if s.created_at is not None
            and s.started_at is not None
            and s.created_at < job.started_at - SETTLE
            and s.started_at > job.started_at
        ]
        assert not waiting, f"{job.job_id} started while the search's {waiting} waited"
    # and the search ran while the agents worked: its jobs interleave with theirs
    first = min(j.created_at for j in agents if j.created_at is not None)
    last = max(j.finished_at for j in agents if j.finished_at is not None)
    assert any(first < s.started_at < last for s in searches if s.started_at is not None)
