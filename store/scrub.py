"""Keeping secrets out of what is recorded.

Every text accelopt writes down, an event's data, a blob, a log line, a prompt sent to the
LLM, passes through a Scrubber that replaces the values of the secrets it knows (API keys, the
database password, anything the environment names a key, token, secret or password) before
it is written or sent. The event log is immutable: a secret that reached it could never be
taken out again. The OS sandbox is what keeps kernels from reading secrets; this is the second
wall, for whatever still carries one (an error message, a traceback).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["REDACTED", "Scrubber"]

REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 8
"""Shorter values ("EMPTY", "test") would redact ordinary words; real keys are longer."""


class Scrubber:
    __slots__ = ("_values",)

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # longest first, so a secret that contains another is replaced whole
        found = {s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}
        self._values = tuple(sorted(found, key=len, reverse=True))

    def __bool__(self) -> bool:
        return bool(self._values)

    def text(self, text: str) -> str:
        for value in self._values:
            if value in text:
                text = text.replace(value, REDACTED)
        return text

    def value(self, value: Any) -> Any:
        """A JSON-like value with every string scrubbed (keys included)."""
        if not self._values:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {
                self.text(k) if isinstance(k, str) else k: self.value(v) for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return type(value)(self.value(v) for v in value)
        return value

    def extended(self, secrets: Iterable[str]) -> Scrubber:
        return Scrubber([*self._values, *secrets])
