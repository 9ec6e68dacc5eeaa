"""Errors of nkibench, and the kinds of failure a kernel check reports.

nkibench stands alone (it imports nothing from the rest of accelopt), so its errors have a
root of their own; the CLI renders them like accelopt's errors.
"""

from typing import ClassVar, Literal

__all__ = [
    "CHILD_ERROR_KINDS",
    "ERROR_KINDS",
    "BackendUnavailable",
    "ConstraintViolation",
    "ErrorKind",
    "KernelError",
    "NkiBenchError",
    "PhaseFailure",
    "TaskError",
    "recordable",
]

ErrorKind = Literal[
    "rejected",  # the static check refused the kernel source (forbidden import or name),
    #             before it ran (in the parent, or on the real modules in the kernel's child)
    "compile",  # the kernel does not load: syntax error, no `kernel`, bad call signature
    "runtime",  # the kernel failed while running: Python error, out-of-bounds access,
    #             read of memory never written
    "constraint",  # a documented hardware or NKI rule broken: partition > 128, PSUM bank,
    #               matmul operand limits, buffer legality, reduction axis, dtype rules,
    #               an affine_range loop whose result depends on iteration order
    "unsupported",  # an NKI API nkisim does not implement (not a kernel bug)
    "timeout",  # wall-clock limit reached; the process group was killed
    "resource",  # memory, file-size or other resource limit reached
    "incorrect",  # ran, but outputs differ from the reference (values, shape, count)
    "measurement",  # correct, but timing it failed (the profiler or the device broke)
    "cheat",  # caught gaming the check or the timer at run time: torch computing in run(),
    #          a tensor subclass as output, a patched module, work on a side stream, results
    #          cached across calls, inputs mutated (Triton kernels)
    "task",  # the task folder itself is broken (reference.py, task.toml)
    "job_failed",  # no verdict: every run of its job failed on the infrastructure (a worker
    #               died, a device was lost) until the queue gave it up; set by the daemon
]
ERROR_KINDS: tuple[ErrorKind, ...] = (
    "rejected",
    "compile",
    "runtime",
    "constraint",
    "unsupported",
    "timeout",
    "resource",
    "incorrect",
    "measurement",
    "cheat",
    "task",
    "job_failed",
)
CHILD_ERROR_KINDS: tuple[ErrorKind, ...] = tuple(k for k in ERROR_KINDS if k != "job_failed")
"""The kinds a sandboxed child may report. `job_failed` is the daemon's alone: it says no
verdict was reached, which spares a promoted kernel its demotion, so a kernel that could
report it of itself would never be demoted."""


class NkiBenchError(Exception):
    """Base of nkibench's errors; `exit_code` is what the CLI exits with."""

    exit_code: ClassVar[int] = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class TaskError(NkiBenchError):
    """A task folder that cannot be used; the message names the file and the problem."""

    exit_code: ClassVar[int] = 2


class BackendUnavailable(NkiBenchError):
    """The backend asked for cannot run here; the message says what is missing."""

    exit_code: ClassVar[int] = 2


class KernelError(Exception):
    """A fault of the kernel (or of the interpreter's coverage) found while running it, of one
    error kind, with a message meant for the person or the LLM who wrote the kernel: what
    rule, which tensor, what to do instead."""

    kind: ClassVar[ErrorKind] = "runtime"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ConstraintViolation(KernelError):
    """A documented NKI or hardware rule is broken (the Neuron compiler would refuse it)."""

    kind: ClassVar[ErrorKind] = "constraint"


class PhaseFailure(Exception):
    """The typed failure of one phase of a check, as the harness and backends raise it."""

    def __init__(self, kind: ErrorKind, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.kind, self.message, self.line = kind, message, line


MESSAGE_LIMIT = 8000
"""Characters of a failure's message kept: what a person or an LLM can act on, not a
kernel's megabytes of output."""


def recordable(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """A message fit to record: NUL and other control characters (but newline and tab)
    replaced by U+FFFD, and at most `limit` characters, the cut said."""
    cleaned = "".join(
        c if c in "\n\t" or not (ord(c) < 32 or ord(c) == 127) else "\ufffd" for c in text
    )
    if len(cleaned) <= limit:
        return cleaned
    return cleaned[:limit] + f" [... {len(cleaned) - limit} more characters]"
