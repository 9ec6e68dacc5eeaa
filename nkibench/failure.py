"""The typed failure of one phase of a check, as the harness and backends raise it."""

from __future__ import annotations

from nkibench.errors import ErrorKind

__all__ = ["PhaseFailure"]


class PhaseFailure(Exception):
    def __init__(self, kind: ErrorKind, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.kind, self.message, self.line = kind, message, line
