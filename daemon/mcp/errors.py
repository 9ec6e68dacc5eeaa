"""The typed refusals of the MCP tools.

A tool that cannot give its answer says why as one JSON object, `{"error": kind, "message":
..., ...}`, in an `is_error` result: the kernel's verdict kinds are those of `accelopt check`
(nkibench.errors.ErrorKind: `rejected`, `compile`, `incorrect`, `cheat`, `task`...), and the
server adds its own refusals (`RefusalKind`). An agent branches on `error`, never on the text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from mcp.types import CallToolResult, TextContent

from nkibench.errors import ErrorKind

__all__ = ["Refusal", "RefusalKind"]

RefusalKind = Literal[
    "budget",  # the client used its device-seconds of the last hour: `retry_after_s` says when
    "duplicate",  # the same kernel as an earlier candidate of the session: `candidate_id` names it
    "not_promoted",  # a correct submission that the promotion rules turned down, and why
    "unknown_candidate",  # a `parent` that is no candidate of the task
]


@dataclass(frozen=True)
class Refusal(Exception):
    """Why a tool call has no answer; `kind` is a verdict's error kind or a RefusalKind."""

    kind: ErrorKind | RefusalKind
    message: str
    retry_after_s: float | None = None
    """`budget`: when the client may call again."""
    candidate_id: str | None = None
    """The candidate the refusal is about, where one was recorded."""
    details: dict[str, Any] | None = None

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"

    def document(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"error": self.kind, "message": self.message}
        if self.retry_after_s is not None:
            shown["retry_after_s"] = round(self.retry_after_s, 1)
        if self.candidate_id is not None:
            shown["candidate_id"] = self.candidate_id
        if self.details:
            shown.update(self.details)
        return shown

    def result(self) -> CallToolResult:
        document = self.document()
        return CallToolResult(
            content=[TextContent(type="text", text=json.dumps(document))],
            structured_content=document,
            is_error=True,
        )
