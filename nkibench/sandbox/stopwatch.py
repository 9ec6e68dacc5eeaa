"""A child's own account of where its time went (`accelopt bench gpu --breakdown`): seconds
per named span, summed, and the child's time from its start to its result. Diagnostics only:
the child reports them (nkibench.sandbox.child) only when its request asks, the parent reads
them as untrusted data (nkibench.sandbox.results.check_timings) and never judges by them.
Recording costs two clock reads per span, so the spans are always recorded."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["REQUEST_KEY", "RESULT_KEY", "SPANS", "report", "restart", "span"]

SPANS = (
    "imports",
    "cuda_init",
    "inputs",
    "reference",
    "compile",
    "checked_runs",
    "compare",
    "timed_runs",
    "eager",
    "outputs",
)
"""The spans a child may report: the breakdown's columns, in order."""
REQUEST_KEY = "timings"
"""A request's flag that asks for the report, and the result's key that carries it."""
RESULT_KEY = REQUEST_KEY

_started = [time.perf_counter()]
"""When the child started (a list: restart() sets it again in a forked child)."""
_spans: dict[str, float] = {}


@contextmanager
def span(name: str) -> Iterator[None]:
    """Add the seconds the block takes to `name` (one of SPANS)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        _spans[name] = _spans.get(name, 0.0) + time.perf_counter() - started


def report() -> dict[str, object]:
    """The spans so far, and the seconds since this module loaded (the child's start)."""
    return {"spans": dict(_spans), "total_s": time.perf_counter() - _started[0]}


def restart() -> None:
    """Start the account afresh: a child forked by a warm process (nkibench.sandbox.zygote)
    starts at its fork, not when the zygote loaded this module."""
    _started[0] = time.perf_counter()
    _spans.clear()
