"""The official `mcp` SDK's client against `accelopt mcp`, over stdio (a child process, as
Claude Code starts it) or Streamable HTTP, for the tests: each call's answer as the agent sees
it, its structured content and whether it is an error."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.types import Implementation

from tests.support.daemon_process import PROGRAM

__all__ = ["Agent", "Answer", "stdio_agent"]


@dataclass(frozen=True)
class Answer:
    error: bool
    content: dict[str, Any]

    @property
    def result(self) -> Any:
        """A list-returning tool's list (the SDK wraps it as `result`)."""
        return self.value()["result"]

    def value(self) -> dict[str, Any]:
        """The answer of a call that succeeded."""
        assert not self.error, self.content
        return self.content

    def refusal(self, kind: str) -> dict[str, Any]:
        """The typed error of a refused call, which must be of `kind`."""
        assert self.error, self.content
        assert self.content["error"] == kind, self.content
        return self.content


class Agent:
    """One MCP client, named as a coding agent names itself when it connects."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def tools(self) -> list[str]:
        return [tool.name for tool in (await self.client.list_tools()).tools]

    async def call(self, tool: str, **arguments: Any) -> Answer:
        result = await self.client.call_tool(tool, arguments)
        assert result.structured_content is not None, result.content
        return Answer(bool(result.is_error), result.structured_content)


@contextlib.asynccontextmanager
async def stdio_agent(
    env: Mapping[str, str], *args: str, name: str = "test-agent", version: str = "1.0"
) -> AsyncIterator[Agent]:
    """`accelopt mcp *args` as a child process with `env`, and a client connected to it."""
    command: Sequence[str] = PROGRAM
    server = StdioServerParameters(
        command=command[0], args=[*command[1:], "mcp", *args], env=dict(env)
    )
    info = Implementation(name=name, version=version)
    async with Client(server, client_info=info, read_timeout_seconds=120) as client:
        yield Agent(client)
