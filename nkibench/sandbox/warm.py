"""Warm processes, parent side: a pool of zygotes (nkibench.sandbox.zygote) per backend and
device, each a sandboxed process that imported the backend's phases once and forks a fresh,
confined child for each phase that runs there.

A cold child (nkibench.sandbox.process) pays for bubblewrap, the interpreter and the imports
(torch and triton: 5 to 11 s per child on an H100 machine, `accelopt bench gpu --breakdown`)
before its work starts; a warm child pays for a fork. What the cold child's own sandbox gives
it, the warm child gets from the zygote's sandbox (bubblewrap: no network, its own PID, IPC
and mount namespaces, the children's user) and from its own confinement (Landlock: only its
folders, no signal or trace beyond itself); the zygote clears the namespace between children.

Every folder a warm child sees lives under the pool's root, which is bound into each zygote
when it starts: sessions make their folders there (`root`), and a child whose folders are
elsewhere runs cold. The root is made here, with mode 0711 where the children run as another
user (they must pass through it, never list it); the parent still makes every folder in it
(nkibench.sandbox.folders) and never opens a path a child made.

Zygotes start on first use and serve one child at a time; an idle one waits for the next.
One that misbehaves (no answer in time, a malformed message, a death) is killed with its
sandbox and replaced: a child never depends on what a zygote did for another.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nkibench.sandbox import landlock
from nkibench.sandbox.environment import child_environment
from nkibench.sandbox.folders import SessionFolders
from nkibench.sandbox.isolation import Isolation, Mounts, Tmpfs
from nkibench.sandbox.lifeline import LIFELINE_VARIABLE
from nkibench.sandbox.streams import tail
from nkibench.sandbox.zygote import DESCRIPTORS, MESSAGE_LIMIT, SCRATCH, ZYGOTE_FD_VARIABLE

__all__ = ["WarmChild", "WarmPool", "ZygoteFailed"]

START_TIMEOUT_S = 300.0
"""Importing torch and triton on a loaded host: seconds, rarely a minute."""
ANSWER_TIMEOUT_S = 30.0
"""A zygote's answer to a spawn or a kill (a fork, a namespace cleared of a child's GPU
processes); past it, the zygote is killed with its sandbox."""
ZYGOTE_TMPFS = Tmpfs(16 * 1024 * 1024, 256 * 1024 * 1024)
"""The sandbox's /tmp (the zygote's alone) and /dev/shm (each child's in turn, emptied
between them): not the phases' data, whose folders are on disk."""
IDLE_KEPT = 2
"""Idle zygotes kept per pool (jobs on one device run one at a time, or nearly)."""
WRITABLE_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/proc")
"""What a child may write beyond its folders, without making or removing anything: the
sandbox's own device nodes (it reads the rest of /dev), and /proc, where the CUDA driver
names its threads (/proc/PID/task/TID/comm; Landlock keeps other processes' entries closed)."""


class ZygoteFailed(OSError):
    """A zygote did not start, did not answer, or could not confine a child: the sandbox's
    failure, never the kernel's."""


class Zygote:
    """One warm process and the socket the parent holds to it."""

    def __init__(self, pool: WarmPool) -> None:
        self.broken = False
        self._folders = pool.folders("zygote-")
        self._home = self._folders.fresh("home")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        lifeline, self._held = os.pipe()
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (held for the zygote's life)
        argv = pool.isolation.command(
            [sys.executable, "-s", "-P", "-m", "nkibench.sandbox.zygote"],
            workdir=self._home,
            writable=[pool.root],
            read_only=[],
            mounts=pool.mounts,
            tmpfs=ZYGOTE_TMPFS,
        )
        try:
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=self._log,
                cwd=self._home,
                env={
                    **child_environment(self._home, 1, pool.environment),
                    ZYGOTE_FD_VARIABLE: str(theirs.fileno()),
                    LIFELINE_VARIABLE: str(lifeline),
                },
                close_fds=True,
                pass_fds=(theirs.fileno(), lifeline),
                process_group=0,
            )
        finally:
            theirs.close()
            os.close(lifeline)
        self.channel = ours
        self._send({"preload": list(pool.preload)})
        answer = self.answer(START_TIMEOUT_S)  # a silent one is stopped, and ZygoteFailed
        if not answer.get("ready"):
            self.stop()
            raise ZygoteFailed(f"the warm process did not start: {answer.get('error', answer)}")

    def _send(self, message: dict[str, Any], fds: Sequence[int] = ()) -> None:
        data = json.dumps(message).encode()
        try:
            if fds:
                socket.send_fds(self.channel, [data], list(fds))
            else:
                self.channel.send(data)
        except OSError as e:
            self.broken = True
            raise ZygoteFailed(f"the warm process is gone: {e}") from None

    def _receive(self, timeout_s: float | None) -> dict[str, Any]:
        """The zygote's next message, bounded in size and time; anything else breaks it."""
        readable, _, _ = select.select([self.channel], [], [], timeout_s)
        if not readable:
            raise subprocess.TimeoutExpired("zygote", timeout_s or 0.0)
        try:
            packet = self.channel.recv(MESSAGE_LIMIT)
            message = json.loads(packet) if packet else None
        except (OSError, ValueError):
            message = None
        if not isinstance(message, dict):
            self.broken = True
            self.stop()
            raise ZygoteFailed(f"the warm process ended or broke: {tail(self._log, 2000)}")
        return message

    def answer(self, timeout_s: float) -> dict[str, Any]:
        """A reply the parent waits for (a zygote silent past `timeout_s` is broken)."""
        try:
            return self._receive(timeout_s)
        except subprocess.TimeoutExpired:
            self.stop()
            raise ZygoteFailed(f"the warm process did not answer in {timeout_s:g} s") from None

    def spawn(self, spec: dict[str, Any], fds: dict[str, int]) -> WarmChild:
        names = [n for n in DESCRIPTORS if n in fds]
        self._send({"spawn": {**spec, "descriptors": names}}, [fds[n] for n in names])
        answer = self.answer(ANSWER_TIMEOUT_S)
        if answer.get("started") is not True:
            raise ZygoteFailed(f"the warm process could not start a child: {answer.get('error')}")
        return WarmChild(self)

    def stop(self) -> None:
        """Kill the zygote with its sandbox (bubblewrap's PID namespace goes with it)."""
        self.broken = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        for closing in (self.channel.close, self._log.close, self._folders.close):
            closing()
        if self._held >= 0:
            os.close(self._held)
            self._held = -1


@dataclass
class WarmChild:
    """A child a zygote forked: Popen's part that nkibench.sandbox.process uses."""

    zygote: Zygote
    returncode: int | None = None
    _signalled: set[int] = field(default_factory=set)

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is not None:
            return self.returncode
        try:
            answer = self.zygote._receive(timeout)
        except ZygoteFailed:
            self.returncode = -signal.SIGKILL  # its sandbox went with the zygote
            return self.returncode
        code = answer.get("exited")
        if not isinstance(code, int) or isinstance(code, bool):
            self.zygote.stop()
            self.returncode = -signal.SIGKILL
        else:
            self.returncode = code
        return self.returncode

    def signal_group(self, number: int) -> None:
        """Signal the child's process group (SIGKILL: and every process it left); a zygote
        that does not see it through is killed with everything in its sandbox."""
        if self.returncode is not None or number in self._signalled:
            return
        self._signalled.add(number)
        try:
            self.zygote._send({"signal": int(number)})
        except ZygoteFailed:
            self.zygote.stop()
            self.returncode = -signal.SIGKILL
            return
        if number == signal.SIGKILL:
            try:
                self.wait(ANSWER_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.zygote.stop()
                self.returncode = -signal.SIGKILL


@dataclass
class WarmPool:
    """The zygotes of one backend on one device: the same sandbox settings, the same
    environment and preloaded modules."""

    isolation: Isolation
    mounts: Mounts
    environment: dict[str, str]
    preload: tuple[str, ...]
    root: Path = field(init=False)
    _idle: list[Zygote] = field(default_factory=list, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    disabled: str | None = field(default=None, init=False)
    """Why no zygote starts here (every child then starts cold), once one failed to."""
    failures: list[str] = field(default_factory=list, init=False)
    """The last few reasons a child that was to be warm started cold."""
    cold_starts: int = field(default=0, init=False)
    """How many children that were to be warm started cold (failures keeps the last few)."""

    def __post_init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="accelopt-warm-"))
        if any(self.covers([self.root], under=Path(s)) for s in SCRATCH):
            raise ValueError(f"{self.root}: the warm root may not lie in a child's scratch")
        if self.isolation.child_uid is not None:
            self.root.chmod(0o711)
        weakref.finalize(self, _discard, self._idle, self.root)

    @classmethod
    def possible(cls, isolation: Isolation) -> str | None:
        """Why warm children cannot run here (None: they can)."""
        if not isolation.contained:
            return "no OS sandbox (a warm child's confinement is a sandbox's part)"
        if landlock.abi_version() < 1:
            return "the kernel has no Landlock (Linux 5.13 and later, enabled)"
        return None

    def folders(self, prefix: str) -> SessionFolders:
        """A private root of folders under the pool's root, which the children's user may pass
        through (not list) where it is not the parent's."""
        return SessionFolders(self.root, self.isolation.child_uid, prefix=prefix, passable=True)

    def covers(self, paths: Sequence[Path], *, under: Path | None = None) -> bool:
        """Whether every one of `paths` lies under the root (a warm child can see it), or
        under `under`."""
        root = os.path.realpath(under or self.root)
        return all(os.path.realpath(p).startswith(root + os.sep) for p in paths)

    def spec(
        self,
        *,
        workdir: Path,
        writable: Sequence[Path],
        read_only: Sequence[Path],
        environment: dict[str, str],
        variables: dict[str, str],
    ) -> dict[str, Any]:
        """What a zygote needs to make a child: what it reads and writes, its environment."""
        return {
            "workdir": str(workdir),
            "writable": [*map(str, writable), *SCRATCH],
            "read_only": [*self.isolation.visible(self.mounts), "/dev", *map(str, read_only)],
            "devices": [*WRITABLE_FILES, *self.mounts.devices],
            "environment": environment,
            "variables": variables,
        }

    @contextlib.contextmanager
    def zygote(self) -> Iterator[Zygote]:
        """An idle zygote (started when none is), back in the pool after its child unless it
        broke."""
        if self.disabled is not None:
            raise ZygoteFailed(self.disabled)
        with self._lock:
            zygote = self._idle.pop() if self._idle else None
        if zygote is None or zygote.process.poll() is not None:
            try:
                zygote = Zygote(self)
            except ZygoteFailed as e:
                # one that cannot start will not start next time: every child goes cold
                self.disabled = str(e)
                raise
        try:
            yield zygote
        finally:
            if zygote.broken or zygote.process.poll() is not None:
                zygote.stop()
            else:
                with self._lock:
                    keep = len(self._idle) < IDLE_KEPT
                    if keep:
                        self._idle.append(zygote)
                if not keep:
                    zygote.stop()

    def start(self) -> float | None:
        """Start a zygote now, before any child asks for one (a benchmark's start, so that
        no task's wall holds it; elsewhere the first child starts it, and it is kept): the
        seconds it took, next to none where one is idle, None where none can start (every
        child then starts cold)."""
        began = time.monotonic()
        try:
            with self.zygote():
                pass
        except ZygoteFailed as e:
            self.failed(e)
            return None
        return time.monotonic() - began

    def failed(self, error: ZygoteFailed) -> None:
        """A child that was to be warm starts cold: say why (the latest few)."""
        with self._lock:
            self.failures = [*self.failures[-9:], str(error)[:500]]
            self.cold_starts += 1

    def describe(self) -> str:
        """For a fingerprint: how children start here, and why some started cold."""
        if self.disabled is not None:
            return f"cold (the warm process failed: {self.disabled[:200]})"
        warm = f"warm (forked, Landlock ABI {landlock.abi_version()})"
        with self._lock:
            failures, count = list(self.failures), self.cold_starts
        if not failures:
            return warm
        return f"{warm}; {count} started cold, the last: {failures[-1][:200]}"

    def close(self) -> None:
        _discard(self._idle, self.root)


def _discard(idle: list[Zygote], root: Path) -> None:
    while idle:
        idle.pop().stop()
    shutil.rmtree(root, ignore_errors=True)
