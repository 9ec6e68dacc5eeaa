"""Running untrusted code in a child process that cannot see secrets or outlive its budget.

The child runs inside the OS sandbox (nkibench.sandbox.isolation: bubblewrap) with an
environment built from nothing (no API keys, no database URL: nothing of the parent's
environment but what is listed here), a fresh working directory, resource limits it applies to
itself before reading its request (address space, CPU seconds, file size, open files, no core
dumps), tmpfs of bounded size (nkibench.sandbox.resources: they and the address space share the
job's memory), a disk quota on the folders it writes, measured while it runs
(nkibench.sandbox.disk, in a sandbox of its own), a lifeline to the parent
(nkibench.sandbox.lifeline: it ends itself when the parent dies, however it dies), and its
own process group, which is killed as a whole when the wall-clock timeout passes, when its
folders go over their quota, or when its stdout and stderr grow past their limit (only their
tails are ever read, and the file-size limit, sized for the phases' data files, would let a
loop of prints fill gigabytes of the daemon's disk first).
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any, Literal, Protocol

from nkibench.sandbox.disk import DiskQuota
from nkibench.sandbox.environment import child_environment
from nkibench.sandbox.isolation import Isolation, Mounts, Tmpfs
from nkibench.sandbox.lifeline import LIFELINE_VARIABLE
from nkibench.sandbox.progress import PROGRESS_FD_VARIABLE, Deadline, ProgressWatch
from nkibench.sandbox.resources import split_memory
from nkibench.sandbox.streams import tail
from nkibench.sandbox.warm import WarmChild, WarmPool, ZygoteFailed

__all__ = [
    "AHEAD_KEY",
    "KERNEL_FLOOR_S",
    "RESULT_FD_VARIABLE",
    "RESULT_LIMIT",
    "Cancelled",
    "ChildOutcome",
    "Gate",
    "Limits",
    "apply_limits",
    "run_child",
]

RESULT_LIMIT = 64 * 1024 * 1024
"""Bytes of a phase's result (JSON) the parent reads; a larger one is a failure of the phase.
Results hold per-seed numbers and short messages: kilobytes, a few megabytes with many seeds."""
AHEAD_KEY = "ahead"
"""Marks the first line a child started ahead of its work gets (its entry and limits alone;
nkibench.sandbox.child): its request follows on stdin once its Gate opens."""
RESULT_FD_VARIABLE = "ACCELOPT_RESULT_FD"
"""Names the descriptor the child writes its result to: a file without a name, made and held by
the parent (never a path in the child's folder, which the child could replace with a link)."""


KERNEL_FLOOR_S = 60.0
"""The adaptive kernel limit's floor: a hanging kernel costs a minute or so, not the task's
whole budget."""


@dataclass(frozen=True)
class Limits:
    timeout_s: float
    memory_mb: int | None = 8192
    """The job's memory: its address space and the sandbox's tmpfs together
    (nkibench.sandbox.resources.split_memory); None: no address-space limit, for backends whose
    runtime maps device memory (Neuron, CUDA)."""
    cpu_s: int | None = None
    """Defaults to the longest the child may run (the timeout, or the progress ceiling) times
    the number of CPUs, plus a margin."""
    file_size_mb: int = 4096
    open_files: int = 256
    threads: int = 1
    """BLAS/OpenMP threads the child may use (one profiling job per device or core)."""
    startup_s: float = 0.0
    """The backend's fixed cost of starting a kernel (compiling it), on top of what the task's
    own measured cost allows a kernel child (nkibench.harness.kernel_limits)."""
    adaptive: bool = True
    """Whether a kernel child's limit may be shortened to what the task's measured cost
    allows; False where the task sets its limit itself (which then holds as written)."""
    kernel_floor_s: float = KERNEL_FLOOR_S
    """The least an adaptive kernel limit allows (nkibench.harness.kernel_limits)."""
    progress_until_s: float | None = None
    """A child that reports progress (nkibench.sandbox.progress) and keeps reporting it runs
    past timeout_s up to this ceiling; None: timeout_s ends it, progress or not."""
    disk_mb: int = 4096
    """What one child's folders (its own and those it writes) may hold on disk together
    (nkibench.sandbox.disk); no one file may be larger either."""
    output_mb: int = 16
    """What the child may write to stdout and to stderr, each, before its group is killed
    (checked every CANCEL_POLL_S, so a fast writer overshoots by what it writes in that time)."""


@dataclass(frozen=True)
class ChildOutcome:
    returncode: int | None
    timed_out: bool
    duration_s: float
    stdout_tail: str
    stderr_tail: str
    flooded: bool = False
    """Killed for writing more than its output limit to stdout or stderr."""
    over_quota: str = ""
    """Why the child's folders were over their disk quota when it was stopped or ended
    (empty: they were not)."""
    output_bytes: int = 0
    """The larger of what the child wrote to stdout and to stderr."""
    result: bytes | None = b""
    """What the child wrote on its result channel (empty: nothing; None: more than
    RESULT_LIMIT bytes)."""
    warm: bool = False
    """Forked by a warm process (nkibench.sandbox.warm), not started by its own sandbox."""

    @property
    def signal(self) -> int | None:
        return -self.returncode if self.returncode is not None and self.returncode < 0 else None

    def describe_signal(self) -> str:
        number = self.signal
        return signal.Signals(number).name if number else ""


def apply_limits(limits: dict[str, Any]) -> None:
    """Called by the child on itself, first thing (never a preexec_fn: the parent has threads)."""
    # the longest the child may run: past timeout_s while it reports progress, up to its ceiling
    wall_s = max(limits["timeout_s"], limits.get("progress_until_s") or 0.0)
    cpu = limits.get("cpu_s") or int(wall_s * (os.cpu_count() or 1)) + 10
    size = min(int(limits["file_size_mb"]), int(limits["disk_mb"])) * 1024 * 1024
    settings = [
        (resource.RLIMIT_CPU, int(cpu)),
        (resource.RLIMIT_FSIZE, size),
        (resource.RLIMIT_NOFILE, int(limits["open_files"])),
        (resource.RLIMIT_CORE, 0),
    ]
    address_space = split_memory(limits.get("memory_mb")).address_space_mb
    if address_space is not None:
        settings.append((resource.RLIMIT_AS, address_space * 1024 * 1024))
    for which, value in settings:
        resource.setrlimit(which, (value, value))


class Cancelled(Exception):
    """A child stopped because its parent is shutting down; its work is to be redone."""


CANCEL_POLL_S = 0.05
"""How often a waiting parent looks at the cancel flag and the child's output sizes: a fast
writer (about 1.5 GB/s here) overshoots its output limit by what it writes in this time."""
TERMINATE_GRACE_S = 3.0


Ending = Literal["exited", "timed out", "cancelled", "flooded", "over quota"]


class Gate:
    """When a child started ahead of its work (run_child's `gate`) may begin it. Until then it
    has only applied its limits and imported its phase's modules: no task or kernel code has
    run in it. `open` hands it the rest of its request; `shut` ends it unstarted. The first
    call decides."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._decided = threading.Event()
        self._request: dict[str, Any] | None = None

    def open(self, request: dict[str, Any]) -> None:
        self._decide(request)

    def shut(self) -> None:
        self._decide(None)

    @property
    def opened(self) -> bool:
        return self._decided.is_set() and self._request is not None

    def _decide(self, request: dict[str, Any] | None) -> None:
        with self._lock:
            if not self._decided.is_set():
                self._request = request
                self._decided.set()

    def wait(self, cancel: threading.Event | None) -> dict[str, Any] | None:
        """The rest of the request once the gate opens; None once it is shut, or as soon as
        `cancel` is set."""
        while not self._decided.wait(CANCEL_POLL_S):
            if cancel is not None and cancel.is_set():
                return None
        return self._request


class Started(Protocol):
    """A started child: a cold one (ColdChild) or one a warm process forked
    (nkibench.sandbox.warm.WarmChild)."""

    @property
    def returncode(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def signal_group(self, number: int) -> None: ...


@dataclass
class ColdChild:
    """A child started by its own bubblewrap: its process group is its sandbox's."""

    process: subprocess.Popen[bytes]

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def wait(self, timeout: float | None = None) -> int:
        return self.process.wait(timeout)

    def signal_group(self, number: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, number)


def _cold_start(
    argv: list[str],
    payload: bytes,
    *,
    stdout: IO[bytes],
    stderr: IO[bytes],
    workdir: Path,
    environment: dict[str, str],
    lifeline: int,
    channel: IO[bytes],
    beats: int,
    more: bool = False,
) -> ColdChild:
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=stdout,
        stderr=stderr,
        cwd=workdir,
        env=environment,
        close_fds=True,
        pass_fds=(lifeline, channel.fileno(), *([beats] if beats >= 0 else [])),
        process_group=0,
    )
    _feed(process.stdin, payload, more=more)
    return ColdChild(process)


def _warm_start(
    held: contextlib.ExitStack,
    warm: WarmPool,
    module: str,
    payload: bytes,
    *,
    workdir: Path,
    writable: Sequence[Path],
    read_only: Sequence[Path],
    environment: dict[str, str],
    fds: dict[str, int],
) -> WarmChild | None:
    """A child forked by one of `warm`'s zygotes (held by `held` while the child lives), given
    the descriptors a cold child inherits, each at the number its environment names; None
    where the pool cannot serve it (the child then starts cold: the pool's failure is never
    the kernel's, and the pool keeps why)."""
    variables = {"result": RESULT_FD_VARIABLE, "lifeline": LIFELINE_VARIABLE}
    if "progress" in fds:
        variables["progress"] = PROGRESS_FD_VARIABLE
    spec = warm.spec(
        workdir=workdir,
        writable=writable,
        read_only=read_only,
        environment={k: v for k, v in environment.items() if k not in variables.values()},
        variables=variables,
    )
    reader, writer = os.pipe()
    try:
        zygote = held.enter_context(warm.zygote())
        child = zygote.spawn({**spec, "module": module}, {"stdin": reader, **fds})
    except ZygoteFailed as e:
        os.close(writer)
        warm.failed(e)
        return None
    finally:
        os.close(reader)
    _feed(os.fdopen(writer, "wb"), payload)
    return child


def _feed(stdin: IO[bytes] | None, payload: bytes, *, more: bool = False) -> None:
    """Write `payload` to the child's stdin, then close it unless `more` is to follow."""
    assert stdin is not None
    try:
        stdin.write(payload)
        stdin.flush()
        if not more:
            stdin.close()
    except BrokenPipeError:
        pass  # the child died at start; its outcome says why


def _wait(
    process: Started,
    deadline: Deadline,
    cancel: threading.Event | None,
    streams: Sequence[int],
    output_bytes: int,
    *,
    quota: DiskQuota | None,
) -> Ending:
    """Wait for the child until it exits, the deadline (its limit, or a ceiling while it makes
    progress), a cancel, one of its output `streams` (file descriptors) growing past
    `output_bytes`, or its folders over their `quota`; the caller kills the group."""
    while True:
        now = time.monotonic()
        if deadline.passed(now):
            return "timed out"
        try:
            process.wait(timeout=deadline.wait_s(now, CANCEL_POLL_S))
            return "exited"
        except subprocess.TimeoutExpired:
            if any(os.fstat(fd).st_size > output_bytes for fd in streams):
                return "flooded"
            if quota is not None and quota.exceeded():
                return "over quota"
            if cancel is not None and cancel.is_set():
                process.signal_group(signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=TERMINATE_GRACE_S)
                return "cancelled"


def _deadline(started: float, limits: Limits, watch: ProgressWatch | None) -> Deadline:
    """The child's timeout from `started`, and its ceiling while it makes progress."""
    return Deadline(
        started + limits.timeout_s,
        started + max(limits.timeout_s, limits.progress_until_s or 0.0),
        watch,
    )


def _result(channel: IO[bytes]) -> bytes | None:
    """What the child wrote on its result channel: None when larger than RESULT_LIMIT (the
    caller says so), else the bytes, empty when it wrote nothing."""
    size = os.fstat(channel.fileno()).st_size
    if size > RESULT_LIMIT:
        return None
    return os.pread(channel.fileno(), size, 0)


def run_child(
    module: str,
    request: dict[str, Any],
    *,
    workdir: Path,
    limits: Limits,
    isolation: Isolation,
    writable: Sequence[Path] = (),
    read_only: Sequence[Path] = (),
    mounts: Mounts | None = None,
    environment: Mapping[str, str] | None = None,
    cancel: threading.Event | None = None,
    quota: DiskQuota | None = None,
    warm: WarmPool | None = None,
    launcher: Sequence[str] = (),
    gate: Gate | None = None,
) -> ChildOutcome:
    """Run `python -m module` in the sandbox with `request` on stdin; wait at most the timeout.
    With `warm` (nkibench.sandbox.warm), a warm process forks the child instead, where the
    child's folders lie under its root (its module then runs in the zygote's child). With a
    `launcher` (a profiler's command line, which starts the program after it), the child
    starts cold, that program in the sandbox starting it. With a `gate`, the child starts cold
    ahead of its work: it gets its phase's entry and its limits, imports, and waits; its
    request, with what the gate opens with, follows when it opens, and its timeout counts from
    then. A gate shut, or a cancel before it opens, kills the child and raises Cancelled.

    The child may write to `workdir` and `writable`, read `read_only` (the task's folder) and
    the Python it runs on, and nothing else. On timeout the child's whole process group gets
    SIGKILL. When `cancel` is set (the daemon drains), the group gets SIGTERM, then SIGKILL
    after a grace period, and Cancelled is raised: the work was not done and nothing about it
    may be recorded. Stdout, stderr and the result go to nameless files the parent holds
    (stdout and stderr bounded by the output limit, the result read up to RESULT_LIMIT); the
    streams' tails and the result come back. `workdir` and `writable` must be folders the
    caller made fresh for this child (nkibench.sandbox.folders): nothing here creates, chowns
    or opens a path in them. `quota` measures those folders while the child runs and once it
    has ended.
    """
    writable = [workdir, *writable]
    payload = json.dumps({**request, "limits": asdict(limits)}).encode()
    # json.dumps writes no newline: a first line is a whole document (nkibench.sandbox.child)
    first = payload
    if gate is not None:
        ahead = {"entry": request.get("entry"), "limits": asdict(limits), AHEAD_KEY: True}
        first = json.dumps(ahead).encode() + b"\n"
    lifeline, held = os.pipe()  # the child reads; only this process ever holds `held`
    # the child writes its beats; only the child holds `beats` once it has started
    watched, beats = os.pipe() if limits.progress_until_s is not None else (-1, -1)
    progress = {PROGRESS_FD_VARIABLE: str(beats)} if beats >= 0 else {}
    watch = ProgressWatch(watched) if watched >= 0 else None
    started = time.monotonic()
    deadline = _deadline(started, limits, watch)
    try:
        # Nameless files (unlinked at once) in the parent's own temporary folder: the child
        # gets descriptors, and nothing it does to its folder changes what the parent reads.
        with (
            tempfile.TemporaryFile() as stdout,
            tempfile.TemporaryFile() as stderr,
            tempfile.TemporaryFile() as channel,
            contextlib.ExitStack() as held_zygote,
        ):
            environment = {
                **child_environment(workdir, limits.threads, environment),
                LIFELINE_VARIABLE: str(lifeline),
                RESULT_FD_VARIABLE: str(channel.fileno()),
                **progress,
            }
            process: Started | None = None
            # warm where a zygote sees every folder and mount of the child's (and no launcher
            # is to start it)
            if (
                warm is not None
                and not launcher
                and gate is None
                and isolation.contained
                and warm.covers([*writable, *read_only])
                and (mounts or Mounts()).within(warm.mounts)
            ):
                process = _warm_start(
                    held_zygote,
                    warm,
                    module,
                    payload,
                    workdir=workdir,
                    writable=writable,
                    read_only=read_only,
                    environment=environment,
                    fds={
                        "stdout": stdout.fileno(),
                        "stderr": stderr.fileno(),
                        "result": channel.fileno(),
                        "lifeline": lifeline,
                        **({"progress": beats} if beats >= 0 else {}),
                    },
                )
            if process is None:
                # -s: no user site-packages; -P: the working directory is not on the import
                # path. The environment is ours (child_environment), so PYTHONPATH is trusted.
                argv = isolation.command(
                    [*launcher, sys.executable, "-s", "-P", "-m", module],
                    workdir=workdir,
                    writable=writable,
                    read_only=read_only,
                    mounts=mounts or Mounts(),
                    tmpfs=Tmpfs.of(split_memory(limits.memory_mb)),
                )
                process = _cold_start(
                    argv,
                    first,
                    stdout=stdout,
                    stderr=stderr,
                    workdir=workdir,
                    environment=environment,
                    lifeline=lifeline,
                    channel=channel,
                    beats=beats,
                    more=gate is not None,
                )
            for fd in (lifeline, beats):
                if fd >= 0:
                    os.close(fd)
            lifeline = beats = -1
            ending: Ending = "exited"
            try:
                if gate is not None:
                    rest = gate.wait(cancel)
                    if rest is None:
                        raise Cancelled(f"{module} was started ahead and not wanted")
                    started = time.monotonic()
                    deadline = _deadline(started, limits, watch)
                    assert isinstance(process, ColdChild)
                    payload = json.dumps({**request, **rest, "limits": asdict(limits)}).encode()
                    _feed(process.process.stdin, payload)
                ending = _wait(
                    process,
                    deadline,
                    cancel,
                    (stdout.fileno(), stderr.fileno()),
                    limits.output_mb * 1024 * 1024,
                    quota=quota,
                )
            finally:
                # The group goes in every case: a kernel's stray children die with it.
                process.signal_group(signal.SIGKILL)
                process.wait()
            if ending == "cancelled":
                raise Cancelled(f"{module} was stopped: the process is shutting down")
            # what a child wrote just before it ended is over the quota too
            over = ending == "over quota" or (quota is not None and quota.exceeded(now=True))
            return ChildOutcome(
                returncode=process.returncode,
                timed_out=ending == "timed out",
                duration_s=time.monotonic() - started,
                stdout_tail=tail(stdout),
                stderr_tail=tail(stderr),
                flooded=ending == "flooded",
                over_quota=quota.describe() if over and quota is not None else "",
                output_bytes=max(os.fstat(f.fileno()).st_size for f in (stdout, stderr)),
                result=_result(channel),
                warm=isinstance(process, WarmChild),
            )
    finally:
        for fd in (lifeline, held, watched, beats):
            if fd >= 0:
                os.close(fd)
