"""What a child wrote to a file the parent holds without a name (its stdout and stderr, a
zygote's log): read through the parent's own descriptor, so nothing a child does to its
folders changes what is read."""

from __future__ import annotations

import os
from typing import IO

__all__ = ["STREAM_TAIL", "tail"]

STREAM_TAIL = 4000
"""Bytes of a stream's end that are read (a child's error is at the end)."""


def tail(stream: IO[bytes], limit: int = STREAM_TAIL) -> str:
    """The last `limit` bytes of a stream's file, decoded (undecodable bytes replaced)."""
    size = os.fstat(stream.fileno()).st_size
    start = max(0, size - limit)
    return os.pread(stream.fileno(), size - start, start).decode("utf-8", "replace")
