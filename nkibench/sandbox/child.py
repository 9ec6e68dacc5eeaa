"""The sandboxed child: `python -m nkibench.sandbox.child` reads one request on stdin, applies
its resource limits to itself, runs one phase of a check, and writes the phase's result (JSON)
to the descriptor the parent named (nkibench.sandbox.process.RESULT_FD_VARIABLE). The parent
treats what arrives there as data: in a child that ran task or kernel code, anything may have
written it.

The request names the phase's function as "module:function" (the backend's phase table,
nkibench.backend.Phase); the module is imported here, after the limits apply, so that nothing
of a backend loads in a child that does not run it. This module imports only the standard
library and nkibench.sandbox's process, progress and stopwatch helpers before the request is
read. A request that asks for timings (`accelopt bench gpu --breakdown`) gets the child's own
account of its time beside its result (nkibench.sandbox.stopwatch).

A child started ahead of its work (nkibench.sandbox.process.Gate) first gets a line of its
own: the phase's entry and the limits, marked AHEAD_KEY. It applies the limits and imports the
phase's module (trusted code: no task or kernel code has run), then waits on stdin for the
request, which the parent writes when the work may begin.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from nkibench.sandbox.lifeline import hold
from nkibench.sandbox.process import AHEAD_KEY, RESULT_FD_VARIABLE, apply_limits
from nkibench.sandbox.progress import PROGRESS_FD_KEY, PROGRESS_FD_VARIABLE
from nkibench.sandbox.stopwatch import REQUEST_KEY, RESULT_KEY, report, span

__all__ = ["SKIP_TEARDOWN", "main"]

SKIP_TEARDOWN = "SKIP_TEARDOWN"
"""A phase module's attribute: True where its child ends without the interpreter's teardown
once its result is written (nothing the parent reads depends on it; a forked child of a warm
process never has one)."""


def _phase(entry: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    module, _, function = entry.partition(":")
    with span("imports"):  # the backend's own (torch and triton for a GPU's phases)
        imported = importlib.import_module(module)
    phase: Callable[[dict[str, Any]], dict[str, Any]] = getattr(imported, function)
    return phase


def _task_code_failure(failure: Exception) -> dict[str, Any]:
    """The result a TaskCodeFailed carries; any other exception is raised again. Only a phase
    that loaded nkibench.sandbox.reference can raise one, so a phase that never does (the parse
    child: no numpy) does not pay for importing it."""
    reference = sys.modules.get("nkibench.sandbox.reference")
    if reference is None or not isinstance(failure, reference.TaskCodeFailed):
        raise failure
    result: dict[str, Any] = failure.result
    return result


def main() -> None:
    hold()  # first: a child whose parent is gone ends here, before anything loads
    channel = os.fdopen(int(os.environ.pop(RESULT_FD_VARIABLE)), "wb")
    first = json.loads(sys.stdin.buffer.readline())  # json.dumps writes no newline
    apply_limits(first["limits"])  # before anything of the task or the kernel runs
    request = first
    try:
        phase = _phase(first["entry"])
        # started ahead: the imports are done, and the request comes when the work may begin
        request = json.loads(sys.stdin.buffer.read()) if first.get(AHEAD_KEY) else first
        beats = os.environ.pop(PROGRESS_FD_VARIABLE, None)
        if beats is not None:  # a phase that reports progress finds its pipe in the request
            request[PROGRESS_FD_KEY] = int(beats)
        result = phase(request)
    except MemoryError:
        result = {
            "ok": False,
            "kind": "resource",
            "message": "out of memory (the memory limit was reached)",
        }
    except Exception as failure:
        result = _task_code_failure(failure)
    if request.get(REQUEST_KEY) and isinstance(result, dict):
        result[RESULT_KEY] = report()
    with channel:
        channel.write(json.dumps(result).encode())
    module = sys.modules.get(str(first["entry"]).partition(":")[0])
    if getattr(module, SKIP_TEARDOWN, False) is True:  # the phase's module says so
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
