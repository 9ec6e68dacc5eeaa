"""The warm process: a trusted process inside the sandbox that has imported a backend's phases
once (torch and triton: seconds per process) and forks a fresh child for each phase.

`python -m nkibench.sandbox.zygote` runs under bubblewrap like any child, as the children's
user, with the folders of every evaluation it serves bound in (the warm root,
nkibench.sandbox.warm). It talks to the parent over a SOCK_SEQPACKET socket named by
ZYGOTE_FD_VARIABLE, one JSON message per packet:

    parent: {"preload": [module or module:function]} zygote: {"ready": true} or an error
    parent: {"spawn": spec} + descriptors           zygote: {"started": true} or an error
                                                    zygote: {"exited": returncode}
    parent: {"signal": n}   (to the running child's group; 9 also ends every other process)

Each child, forked from the zygote's main thread (it has no other), makes itself what a cold
child is before any task or kernel code runs: a session and process group of its own, the
parent's descriptors as stdin, stdout, stderr, result, lifeline and progress, an environment
built from nothing, its own folder as working directory, and then, for good, Landlock
(nkibench.sandbox.landlock): it reads the system, Python and the folders it reads, writes its
own folder, the folders it writes and the sandbox's /dev/shm (emptied after each child),
opens the device nodes it needs and writes its own /proc entries (the CUDA driver names its
threads there: cuInit fails with error 304 without), and nothing else (not /tmp, not another
child's folder, not the zygote's); it can neither signal nor trace a process
outside its own domain (the zygote, another child), nor reach an abstract Unix socket or a TCP
port. Then it runs nkibench.sandbox.child's main, as a cold child does.

Nothing of one child reaches the next: the zygote never runs task or kernel code and is not
dumpable (no process of its user may read or write its memory); it is the subreaper of its
children, and once a child has ended it kills every other process of the sandbox's PID
namespace (what the child started, however detached) and reaps them before it says so, and
before it forks again. CUDA is never initialised in the zygote (a forked CUDA context is
unusable): it refuses to start if a preload did.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import importlib
import json
import os
import select
import signal
import socket
import stat
import sys
import tempfile
import traceback
from typing import Any

from nkibench.sandbox import landlock, stopwatch

__all__ = ["ZYGOTE_FD_VARIABLE", "main"]

ZYGOTE_FD_VARIABLE = "ACCELOPT_ZYGOTE_FD"
MESSAGE_LIMIT = 256 * 1024
"""The largest packet either side reads (specs name folders and environment variables)."""
DESCRIPTORS = ("stdin", "stdout", "stderr", "result", "lifeline", "progress")
"""The descriptors a spawn carries, in order (progress only where the phase beats)."""
CHILD_FDS = {"result": 3, "lifeline": 4, "progress": 5}
"""Where the child finds them (named in its environment, as a cold child does)."""
LANDLOCK_ABI = 1
FIRST_FREE_FD = 64
SCRATCH = ("/dev/shm",)
"""The sandbox's shared-memory tmpfs, writable by every child of the zygote in turn and
emptied between them (a cold child has its own). Not /tmp: the warm root may be bound there."""
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    # prctl is variadic: each argument a C long, as the kernel reads them
    arguments = (ctypes.c_ulong(value), *(ctypes.c_ulong(0) for _ in range(3)))
    if libc.prctl(ctypes.c_int(option), *arguments) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option})")


def _send(channel: socket.socket, message: dict[str, Any]) -> None:
    channel.send(json.dumps(message).encode())


def _preload(entries: list[str]) -> None:
    """Import each "module", or import "module:function" and call the function (what a phase
    would otherwise load in every child: torch's dispatch machinery, say)."""
    for entry in entries:
        module, _, function = entry.partition(":")
        imported = importlib.import_module(module)
        if function:
            getattr(imported, function)()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        raise RuntimeError("a preload initialised CUDA: a forked child could not use the GPU")


def _become_child(spec: dict[str, Any], fds: dict[str, int], ready: int) -> None:
    """In the forked child: its descriptors, environment, folder and confinement; then the
    phase. Writes b"ok" on `ready` once confined, or why it could not be."""
    stopwatch.restart()
    os.setsid()
    # above every number used below first: a received descriptor may hold one of them
    high = {name: fcntl.fcntl(fd, fcntl.F_DUPFD, FIRST_FREE_FD) for name, fd in fds.items()}
    for fd in fds.values():
        os.close(fd)
    for name, target in (("stdin", 0), ("stdout", 1), ("stderr", 2)):
        os.dup2(high[name], target)
    environment: dict[str, str] = dict(spec["environment"])
    for name, target in CHILD_FDS.items():
        if name in high:
            os.dup2(high[name], target)
            environment[spec["variables"][name]] = str(target)
    keep = {0, 1, 2, ready, *(CHILD_FDS[n] for n in CHILD_FDS if n in high)}
    for entry in os.listdir("/proc/self/fd"):
        number = int(entry)
        if number not in keep:
            with contextlib.suppress(OSError):  # the listing's own, closed already
                os.close(number)
    os.environ.clear()
    os.environ.update(environment)
    # what a preload cached of the zygote's environment: tempfile keeps the folder it first
    # found (the zygote's, which the child cannot write) for good
    tempfile.tempdir = None
    os.chdir(spec["workdir"])
    landlock.restrict(
        read_only=spec["read_only"],
        writable=spec["writable"],
        devices=spec["devices"],
        min_abi=LANDLOCK_ABI,
    )
    os.write(ready, b"ok")
    os.close(ready)


def _fork(spec: dict[str, Any], fds: dict[str, int]) -> tuple[int, str | None]:
    """Fork a child for `spec`; its pid, and why it could not be confined (None: it was)."""
    sys.stdout.flush()
    sys.stderr.flush()
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_r)
        ready = fcntl.fcntl(ready_w, fcntl.F_DUPFD, FIRST_FREE_FD)
        os.close(ready_w)
        try:
            _become_child(spec, fds, ready)
        except BaseException:
            os.write(ready, traceback.format_exc(limit=3)[-2000:].encode())
            os._exit(125)
        code = 0
        try:
            # nkibench.sandbox.child, imported already by the preload
            importlib.import_module(spec["module"]).main()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    os.close(ready_w)
    for fd in fds.values():
        os.close(fd)
    said = b""
    while chunk := os.read(ready_r, 4096):
        said += chunk
    os.close(ready_r)
    return pid, None if said == b"ok" else (said.decode("utf-8", "replace") or "no answer")


def _returncode(status: int) -> int:
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def _clear() -> None:
    """Kill and reap every process of the sandbox but the zygote and bubblewrap's init: what
    a child left behind (the zygote is their subreaper, so each comes back here to be reaped);
    then empty the scratch it shared with the next child."""
    with contextlib.suppress(ProcessLookupError):  # nobody else
        os.kill(-1, signal.SIGKILL)
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    _clear_scratch()


def _clear_scratch() -> None:
    """Empty the sandbox's /dev/shm, which every child may use, once no process of the last
    child is left: nothing in it reaches the next child. What another file system holds there
    (a bind) is left alone: it is not the tmpfs's to empty."""
    for folder in SCRATCH:
        try:
            device = os.lstat(folder).st_dev
            entries = [entry.path for entry in os.scandir(folder)]
        except FileNotFoundError:
            continue
        _remove(entries, device)


def _remove(paths: list[str], device: int) -> None:
    """Remove `paths` and what they hold on file system `device` (never through a link, never
    into another file system), iteratively: a child may have nested folders deeper than any
    recursion limit."""
    pending = [(path, False) for path in paths]
    while pending:
        path, emptied = pending.pop()
        try:
            found = os.lstat(path)
        except FileNotFoundError:
            continue
        if found.st_dev != device:
            continue
        if not stat.S_ISDIR(found.st_mode):
            with contextlib.suppress(OSError):
                os.unlink(path)
        elif emptied:
            with contextlib.suppress(OSError):  # a folder that holds another file system
                os.rmdir(path)
        else:
            pending.append((path, True))
            with contextlib.suppress(OSError), os.scandir(path) as entries:
                pending.extend((entry.path, False) for entry in entries)


def _serve_child(channel: socket.socket, pid: int) -> None:
    """Wait for the child (relaying signals the parent sends), then clear the namespace and
    report its return code."""
    watched = os.pidfd_open(pid)
    try:
        while True:
            readable, _, _ = select.select([channel.fileno(), watched], [], [])
            if watched in readable:
                break
            packet = channel.recv(MESSAGE_LIMIT)
            if not packet:
                _clear()
                os._exit(0)  # the parent is gone
            number = int(json.loads(packet).get("signal", 0))
            if number:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, number)
                if number == signal.SIGKILL:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(-1, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(watched)
    _clear()
    _send(channel, {"exited": _returncode(status)})


def main() -> None:
    channel = socket.socket(fileno=int(os.environ.pop(ZYGOTE_FD_VARIABLE)))
    _prctl(PR_SET_DUMPABLE, 0)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    try:
        first = json.loads(channel.recv(MESSAGE_LIMIT))
        if landlock.abi_version() < LANDLOCK_ABI:
            raise landlock.LandlockUnavailable("Landlock is not available in the sandbox")
        _preload(list(first["preload"]))
    except Exception as e:
        _send(channel, {"ready": False, "error": f"{type(e).__name__}: {e}"[:2000]})
        return
    _send(channel, {"ready": True})
    while True:
        packet, descriptors, _, _ = socket.recv_fds(channel, MESSAGE_LIMIT, len(DESCRIPTORS))
        if not packet:
            return
        spec = json.loads(packet)["spawn"]
        fds = dict(zip(spec["descriptors"], descriptors, strict=True))
        pid, problem = _fork(spec, fds)
        if problem is not None:
            os.waitpid(pid, 0)
            _clear()
            _send(channel, {"started": False, "error": problem})
            continue
        _send(channel, {"started": True})
        _serve_child(channel, pid)


if __name__ == "__main__":
    main()
