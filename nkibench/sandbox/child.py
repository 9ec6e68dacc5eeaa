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
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from nkibench.sandbox.lifeline import hold
from nkibench.sandbox.process import RESULT_FD_VARIABLE, apply_limits
from nkibench.sandbox.progress import PROGRESS_FD_KEY, PROGRESS_FD_VARIABLE
from nkibench.sandbox.stopwatch import REQUEST_KEY, RESULT_KEY, report, span

__all__ = ["main"]


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
    request = json.loads(sys.stdin.buffer.read())
    beats = os.environ.pop(PROGRESS_FD_VARIABLE, None)
    if beats is not None:  # a phase that reports progress finds its pipe in the request
        request[PROGRESS_FD_KEY] = int(beats)
    apply_limits(request["limits"])  # before anything of the task or the kernel runs
    try:
        result = _phase(request["entry"])(request)
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


if __name__ == "__main__":
    main()
