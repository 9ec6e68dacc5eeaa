"""The real daemon under bubblewrap, as root and as a service user of its own, against task code
that links its files and its siblings' folders to host paths, a reference whose result is
empty, and an LLM whose every kernel is a forgery from the adversarial corpus (issue 23).

What must hold: no host file's content in any event, blob or log line; the host folder's
owner, mode and contents unchanged; the broken task recorded as a typed failure while the
others are served; no forged kernel promoted; SIGTERM still stops the daemon cleanly.
"""

from __future__ import annotations

import itertools
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

from events.catalog import CandidateGenerated, KernelPromoted, ProfileRecorded, SearchFinished
from nkibench.suites import NKI_SUITE
from tests.e2e.test_escape import recorded_texts
from tests.support import DATA, REPOSITORY
from tests.support.agent_script import llm_env
from tests.support.cli import search_args
from tests.support.daemon_process import PROGRAM, DaemonProcess, wait_until
from tests.support.llm_server import Reply, Request, running_llm

SECRET = "HOST-SECRET-" + "5eed" * 6
SERVICE_USER = (65534, 65534)
FORGERIES = sorted(
    path
    for path in (DATA / "adversarial").glob("*.py")
    if "# task: nki/silu\n" in path.read_text() and "# dialect: nki\n" in path.read_text()
)
LINKS = """
import os as _os, sys as _sys
for _name in ("stderr.txt", "stdout.txt", "result.json", "output_0.npy", "trace.jsonl"):
    _os.symlink({secret!r}, _name)
for _sibling in ("kernel", "compare", "estimate", "outputs", "inputs", "expected", "task",
                 "kernel.2", "outputs.2", "reference.2", "compare.2"):
    try:
        _os.symlink({host!r}, "../" + _sibling)
    except OSError:
        pass
"""
EMPTY_RESULT = """
import os as _os, stat as _stat
def _empty_result():
    for _fd in map(int, _os.listdir("/proc/self/fd")):
        try:
            if _fd > 2 and _stat.S_ISREG(_os.fstat(_fd).st_mode):
                _os.ftruncate(_fd, 0)
        except OSError:
            pass
    _os._exit(0)
_empty_result()
"""


def _forged_kernels() -> Iterator[str]:
    return itertools.cycle(path.read_text() for path in FORGERIES)


class ForgingLLM:
    """A plan for every planner call; a corpus forgery for every executor call."""

    def __init__(self) -> None:
        self.kernels = _forged_kernels()
        self.handed: list[str] = []

    def __call__(self, request: Request) -> Reply:
        if request.model == "planner-model":
            return Reply("PLAN: write the answer where the harness will find it.")
        if request.model == "executor-model":
            kernel = next(self.kernels)
            self.handed.append(kernel)
            return Reply(f"Here it is.\n\n```python\n{kernel}```\n")
        return Reply("**Nothing to learn**\n\nNo optimization found.")


def _task(target: Path, extra: str) -> None:
    shutil.copytree(NKI_SUITE / "silu", target)
    reference = target / "reference.py"
    reference.write_text(reference.read_text() + extra)


def _state(folder: Path) -> tuple[int, int, int, list[str]]:
    status = folder.stat()
    return status.st_uid, status.st_gid, stat.S_IMODE(status.st_mode), sorted(os.listdir(folder))


SYSTEM_PYTHON = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")


@dataclass
class User:
    """Who the daemon runs as: root (its children drop to nobody), or a service user of its
    own (the children stay that user, in a user namespace)."""

    root: Path
    prefix: list[str]
    program: list[str]
    env: dict[str, str]

    @property
    def service(self) -> bool:
        return bool(self.prefix)


@pytest.fixture(params=["root", "service-user"])
def user(request: pytest.FixtureRequest) -> Iterator[User]:
    root = Path(tempfile.mkdtemp(prefix="accelopt-trust-"))
    if request.param == "root":
        yield User(root, [], list(PROGRAM), {})
    else:
        # The development interpreter may sit where no other user can reach (pyenv under
        # /root); the system's interpreter of the same version runs the same packages.
        if not SYSTEM_PYTHON.exists():
            pytest.fail(f"{SYSTEM_PYTHON} is missing: the service user needs an interpreter")
        root.chmod(0o755)
        os.chown(root, *SERVICE_USER)
        packages = [p for p in sys.path if p.endswith("site-packages")]
        setpriv = f"--reuid={SERVICE_USER[0]} --regid={SERVICE_USER[1]} --clear-groups"
        yield User(
            root,
            ["setpriv", *setpriv.split()],
            [str(SYSTEM_PYTHON), *PROGRAM[1:]],
            {"PYTHONPATH": os.pathsep.join([str(REPOSITORY), *packages])},
        )
    shutil.rmtree(root, ignore_errors=True)


def test_the_daemon_follows_no_link_reads_no_host_file_and_promotes_no_forgery(
    user: User,
) -> None:
    root, service = user.root, user.service
    secret, host = root / "secret.txt", root / "host_dir"
    secret.write_text(SECRET + "\n")
    host.mkdir()
    (host / "keep.txt").write_text("mine")
    for path in (secret, host, host / "keep.txt"):
        if service:  # the daemon user's own files: the ones a confused parent could hand out
            os.chown(path, *SERVICE_USER)
    secret.chmod(0o600)
    host.chmod(0o700)
    before = _state(host)

    staging = root / "staging"
    links = LINKS.format(secret=str(secret), host=str(host))
    _task(staging / "linker", links)
    _task(staging / "dier", links + "_sys.stderr.write('the reference died\\n')\n_os._exit(1)\n")
    _task(staging / "empty", EMPTY_RESULT)
    shutil.copytree(NKI_SUITE / "silu", staging / "silu")
    if service:
        for path in [root / "staging", *(root / "staging").rglob("*")]:
            os.chown(path, *SERVICE_USER)

    script = ForgingLLM()
    with running_llm(script) as llm:
        daemon = DaemonProcess(
            root,
            *search_args(iterations=1, beam=1, plans=2, samples=3),
            env={**llm_env(llm.url), **user.env},
            prefix=user.prefix,
            program=user.program,
        )
        if service:
            for path in (root / "kernels", root):
                os.chown(path, *SERVICE_USER)
        daemon.start()
        try:
            for name in ("linker", "dier", "empty", "silu"):
                shutil.copytree(staging / name, daemon.watch / name)
            wait_until(lambda: daemon.events(SearchFinished, task="silu"), 240, "silu's search")
            for name in ("linker", "dier", "empty"):
                wait_until(
                    partial(daemon.events, ProfileRecorded, task=name), 120, f"{name}'s profile"
                )
            assert daemon.alive()
        finally:
            assert daemon.stop() == 0

    texts = recorded_texts(daemon.db)
    assert SECRET not in texts
    assert llm.requests
    assert all(SECRET not in str(request.messages) for request in llm.requests)
    assert SECRET not in daemon.log_text()
    assert _state(host) == before
    assert (host / "keep.txt").read_text() == "mine"

    (empty,) = daemon.events(ProfileRecorded, task="empty")
    assert empty.error_kind == "task"
    assert "an empty result" in (empty.error_message or "")
    dier = daemon.events(ProfileRecorded, task="dier")[0]
    assert dier.error_kind == "task"
    assert "the reference died" in (dier.error_message or "")
    linker = daemon.events(ProfileRecorded, task="linker")[0]
    assert linker.correct, linker.error_message
    baseline = daemon.events(ProfileRecorded, task="silu", purpose="baseline")[0]
    assert baseline.correct

    assert len(script.handed) >= 3, "the search asked for too few kernels to prove anything"
    candidates = daemon.events(CandidateGenerated, task="silu")
    assert candidates
    profiles = {p.candidate_id: p for p in daemon.events(ProfileRecorded, task="silu")}
    for candidate in candidates:
        profile = profiles.get(candidate.candidate_id)
        assert profile is None or not profile.correct, (candidate.candidate_id, profile)
    assert daemon.events(KernelPromoted, task="silu") == []
