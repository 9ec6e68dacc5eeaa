"""Keeping secrets out of what is recorded.

Every text accelopt writes down, an event's data, a blob, a log line, a prompt sent to the
LLM, passes through a Scrubber that replaces the values of the secrets it knows (API keys, the
database password, anything the environment names a key, token, secret or password) before
it is written or sent. The event log is immutable: a secret that reached it could never be
taken out again. The OS sandbox is what keeps kernels from reading secrets; this is the second
wall, for whatever still carries one (an error message, a traceback).

A secret is also looked for in the forms an endpoint or a library may echo it in: base64
(standard and URL-safe, at each of the three byte alignments it can have inside a longer
encoded text: only the characters that depend on the secret's bytes alone are matched),
hexadecimal (either case) and percent-encoding.
"""

from __future__ import annotations

import base64
import urllib.parse
from collections.abc import Iterable
from typing import Any

__all__ = ["REDACTED", "Scrubber"]

REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 8
"""Shorter values ("EMPTY", "test") would redact ordinary words; real keys are longer."""


def _base64_cores(secret: bytes) -> set[str]:
    """The runs of base64 characters that encode the secret's bytes alone, at each alignment
    (the secret after 0, 1 or 2 other bytes), in both alphabets."""
    cores = set()
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + secret)
        first = -(-8 * offset // 6)  # the first character with no bit of the bytes before
        last = 8 * (offset + len(secret)) // 6  # past the last character of whole secret bits
        core = encoded[first:last]
        cores |= {core.decode(), core.translate(bytes.maketrans(b"+/", b"-_")).decode()}
    return cores


def encoded_forms(secret: str) -> set[str]:
    """The secret as it is written and in the encodings it may come back in."""
    raw = secret.encode()
    forms = {secret, raw.hex(), raw.hex().upper(), urllib.parse.quote(secret, safe="")}
    forms.add(urllib.parse.quote_plus(secret))
    return forms | _base64_cores(raw)


class Scrubber:
    __slots__ = ("_secrets", "_values")

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets = frozenset(s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH)
        forms = {form for s in self._secrets for form in encoded_forms(s)}
        # longest first, so a secret that contains another is replaced whole
        self._values = tuple(sorted(forms, key=len, reverse=True))

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
        return Scrubber([*self._secrets, *secrets])
