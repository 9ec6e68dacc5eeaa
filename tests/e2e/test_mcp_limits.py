"""`accelopt mcp` on its own devices (no daemon holds the database), at its limits (issue 28):
hostile input through the tools is contained like any kernel, a client over its device budget
is refused with a typed error that says when to come back, and the Streamable HTTP transport
keeps the live pages' loopback-and-token rule."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

from daemon.revisions import record_task
from events.catalog import CandidateGenerated, CandidateRejected
from nkibench.sandbox.parse_child import SOURCE_LIMIT
from nkibench.suites import GPU_SUITE, NKI_SUITE
from nkibench.task.spec import load_task
from store.engine import make_engine
from store.migrate import upgrade
from store.recorder import Recorder
from store.sql import SqlEventStore
from tests.support import DATA
from tests.support.cli import events_of
from tests.support.daemon_process import HOST_SETTINGS, PROGRAM, wait_until
from tests.support.mcp_client import stdio_agent

ADVERSARIAL = DATA / "adversarial"
ESCAPE = (ADVERSARIAL / "typing_sys_os.py").read_text()  # typing.sys.modules["os"]
TORCH_FALLBACK = (ADVERSARIAL / "torch_sigmoid_fallback.py").read_text()  # PyTorch in run()
TOKEN = "mcp-test-token-" + "4b1d" * 4


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A database holding two task revisions, as a daemon or `optimize` records them, and the
    environment of an `accelopt mcp` on it."""
    root = tmp_path_factory.mktemp("mcp")
    db = f"sqlite:///{root / 'accelopt.db'}"
    engine = make_engine(db)
    upgrade(engine)
    engine.dispose()
    store = SqlEventStore.open(db)
    try:
        gpu_silu = shutil.copytree(GPU_SUITE / "silu", root / "tasks" / "gpu_silu")
        for folder in (NKI_SUITE / "silu", gpu_silu):
            record_task(Recorder(store), load_task(folder), None)
    finally:
        store.close()
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("ACCELOPT_")},
        **{k: os.environ[k] for k in HOST_SETTINGS if k in os.environ},
        "ACCELOPT_HOME": str(root / "state"),
        "ACCELOPT_DB": db,
    }


def test_hostile_input_is_contained_and_a_client_over_its_budget_is_refused(
    recorded: dict[str, str],
) -> None:
    budget = {**recorded, "ACCELOPT_MCP_DEVICE_S_PER_HOUR": "0.05"}

    async def nki() -> dict[str, Any]:
        async with stdio_agent(budget, "--shapes", "small", name="hostile") as agent:
            return {
                "path": await agent.call("check_kernel", task="../silu", source=ESCAPE),
                "unknown": await agent.call("get_task", task="no_such_task"),
                "huge": await agent.call(
                    "profile_kernel", task="silu", source="#" * (SOURCE_LIMIT + 1)
                ),
                "parent": await agent.call(
                    "profile_kernel", task="silu", source=ESCAPE, parent="c" + "0" * 500
                ),
                "escape": await agent.call("profile_kernel", task="silu", source=ESCAPE),
                "over": await agent.call(
                    "profile_kernel", task="silu", source=(NKI_SUITE / "silu/kernel.py").read_text()
                ),
            }

    async def gpu() -> dict[str, Any]:
        async with stdio_agent(
            recorded, "--backend", "triton", "--shapes", "small", name="hostile"
        ) as agent:
            return {
                "torch": await agent.call("check_kernel", task="gpu_silu", source=TORCH_FALLBACK),
                "dialect": await agent.call("profile_kernel", task="silu", source=ESCAPE),
            }

    async def both() -> dict[str, Any]:  # two servers, overlapped: the Triton one starts slowly
        found: dict[str, Any] = {}

        async def into(run: Callable[[], Awaitable[dict[str, Any]]]) -> None:
            found.update(await run())

        async with anyio.create_task_group() as group:
            group.start_soon(into, nki)
            group.start_soon(into, gpu)
        return found

    seen = anyio.run(both)
    assert "'../silu' is not a task name" in seen["path"].refusal("task")["message"]
    assert "no task named 'no_such_task'" in seen["unknown"].refusal("task")["message"]
    huge = seen["huge"].refusal("rejected")
    assert "over the 256 KiB limit of kernel.py" in huge["message"]
    assert "is no candidate of silu" in seen["parent"].refusal("unknown_candidate")["message"]
    escape = seen["escape"].refusal("rejected")
    assert "the standard library's sys module" in escape["message"]
    over = seen["over"].refusal("budget")
    assert 0 < over["retry_after_s"] <= 3600

    # the escape was recorded as the agent's candidate and rejected; nothing else was
    candidates = events_of(recorded["ACCELOPT_DB"], CandidateGenerated)
    assert [c.candidate_id for c in candidates] == [escape["candidate_id"]]
    (rejected,) = events_of(recorded["ACCELOPT_DB"], CandidateRejected)
    assert rejected.candidate_id == escape["candidate_id"]
    assert rejected.reason == "static_check"

    torch = seen["torch"]
    assert "run() computed with PyTorch" in torch.refusal("cheat")["message"]
    assert "this server runs triton" in seen["dialect"].refusal("task")["message"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_http_needs_a_token_off_loopback_and_then_asks_every_request_for_it(
    recorded: dict[str, str],
) -> None:
    bind = f"0.0.0.0:{_free_port()}"
    refused = subprocess.run(
        [*PROGRAM, "mcp", "--http", bind],
        env=recorded,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 2
    assert "needs a token: set ACCELOPT_HTTP_TOKEN" in refused.stderr

    port = bind.rsplit(":", 1)[1]
    url = f"http://127.0.0.1:{port}/mcp"
    server = subprocess.Popen(
        [*PROGRAM, "mcp", "--http", bind],
        env={**recorded, "ACCELOPT_HTTP_TOKEN": TOKEN},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_until(lambda: _listening(int(port)) or server.poll() is not None, 60, "the server")
        assert server.poll() is None
        hello = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        accept = {"Accept": "application/json, text/event-stream"}
        for headers in ({}, {"Authorization": "Bearer wrong-token"}):
            answer = httpx2.post(url, json=hello, headers={**accept, **headers}, timeout=10)
            assert answer.status_code == 401, answer.text

        async def served() -> list[str]:
            client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"})
            transport = streamable_http_client(url, http_client=client)
            info = Implementation(name="http-agent", version="1")
            async with client, Client(transport, client_info=info) as agent:
                tasks = await agent.call_tool("list_tasks", {})
                assert tasks.structured_content is not None
                return [t["task"] for t in tasks.structured_content["result"]]

        assert anyio.run(served) == ["gpu_silu", "silu"]
    finally:
        server.terminate()
        server.wait(timeout=30)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0
