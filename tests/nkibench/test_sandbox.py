"""The sandbox: what a child process can see, how it is limited, and how it dies."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import types
import uuid
from pathlib import Path
from typing import Any

import pytest

from nkibench.sandbox.folders import SessionFolders
from nkibench.sandbox.isolation import UNPRIVILEGED, Isolation, Mounts
from nkibench.sandbox.process import Limits, run_child
from tests.support import REPOSITORY
from tests.support.processes import wait_for_none

SECRETS = {
    "ACCELOPT_LLM_API_KEY": "sk-accelopt-secret",
    "OPENAI_API_KEY": "sk-openai-secret",
    "ACCELOPT_DB": "postgresql://admin:hunter2@db/accelopt",
    "AWS_SECRET_ACCESS_KEY": "aws-secret",
}


def probe(
    tmp_path: Path,
    request: dict[str, Any],
    limits: Limits,
    *,
    isolation: Isolation | None = None,
    marker: str | None = None,
) -> tuple[dict[str, Any] | None, Any]:
    isolation = isolation or Isolation.detect()
    with SessionFolders(tmp_path, isolation.child_uid) as folders:
        outcome = run_child(
            "tests.support.sandbox_probe",
            request,
            workdir=folders.fresh("work"),
            limits=limits,
            isolation=isolation,
            environment={"ACCELOPT_PROBE_MARK": marker} if marker else None,
        )
    result = json.loads(outcome.result) if outcome.result else None
    return result, outcome


def test_the_child_sees_none_of_the_parents_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    result, outcome = probe(tmp_path, {"probe": "env"}, Limits(timeout_s=30))
    assert outcome.returncode == 0, outcome.stderr_tail
    assert result is not None
    environment = result["env"]
    for name, value in SECRETS.items():
        assert name not in environment
        assert value not in json.dumps(environment)
    assert not any(key.startswith("ACCELOPT") for key in environment)
    # a fresh folder of its own, under a root only the parent sees
    assert environment["HOME"] == result["cwd"]
    assert Path(result["cwd"]).name == "work"
    assert Path(result["cwd"]).parent.parent == tmp_path


def test_resource_limits_are_applied(tmp_path: Path) -> None:
    """The address space is memory_mb less the tmpfs' eighth (nkibench.sandbox.resources)."""
    limits = Limits(timeout_s=30, memory_mb=1536, cpu_s=40, file_size_mb=64, open_files=128)
    result, outcome = probe(tmp_path, {"probe": "limits"}, limits)
    assert outcome.returncode == 0, outcome.stderr_tail
    assert result == {
        "RLIMIT_AS": (1536 - 1536 // 8) * 1024 * 1024,
        "RLIMIT_CPU": 40,
        "RLIMIT_FSIZE": 64 * 1024 * 1024,
        "RLIMIT_NOFILE": 128,
        "RLIMIT_CORE": 0,
    }


def test_memory_beyond_the_limit_is_refused(tmp_path: Path) -> None:
    result, _ = probe(
        tmp_path, {"probe": "memory", "megabytes": 2048}, Limits(timeout_s=30, memory_mb=768)
    )
    assert result == {"memory_error": True}


def test_a_hung_child_and_its_children_are_gone_within_the_timeout_plus_a_second(
    tmp_path: Path,
) -> None:
    """Its grandchildren too, the one that left the process group (setsid) included: the
    whole PID namespace goes with the child."""
    marker = uuid.uuid4().hex
    started = time.monotonic()
    result, outcome = probe(tmp_path, {"probe": "hang"}, Limits(timeout_s=2.0), marker=marker)
    elapsed = time.monotonic() - started
    assert result is None
    assert outcome.timed_out
    assert elapsed < 2.0 + 1.0
    assert wait_for_none(marker, 1.0) == [], "a grandchild survived the kill"


def test_a_child_flooding_stdout_is_killed_at_its_output_limit(tmp_path: Path) -> None:
    """Only the tail of stdout is ever read; the file-size limit (sized for the phases' data
    files, 4 GiB) would let a loop of writes fill the disk first."""
    started = time.monotonic()
    result, outcome = probe(tmp_path, {"probe": "flood"}, Limits(timeout_s=60, output_mb=2))
    assert result is None
    assert (outcome.flooded, outcome.timed_out) == (True, False)
    assert time.monotonic() - started < 10
    written = outcome.output_bytes
    assert 2 * 1024**2 < written < 256 * 1024**2  # the file-size limit: 4096 MiB
    assert outcome.stdout_tail.endswith("x" * 100)


def test_without_the_os_sandbox_a_setsid_grandchild_escapes_the_group_kill(
    tmp_path: Path,
) -> None:
    """Why the OS sandbox is the boundary: the same child, unconfined, leaves a process
    behind (the unsafe fallback says so loudly)."""
    marker = uuid.uuid4().hex
    _, outcome = probe(
        tmp_path,
        {"probe": "hang"},
        Limits(timeout_s=2.0),
        isolation=Isolation.unsafe("the test asks"),
        marker=marker,
    )
    assert outcome.timed_out
    survivors = wait_for_none(marker, 1.0)
    try:
        assert len(survivors) == 1
    finally:
        for pid in survivors:
            os.kill(pid, signal.SIGKILL)


def test_an_escaping_child_sees_no_secret_no_file_no_network_and_no_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    database = tmp_path / "accelopt.db"
    database.write_bytes(b"SQLite format 3\0 the event log")
    outside = tmp_path / "escaped.txt"
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.5)
        port = listener.getsockname()[1]
        result, outcome = probe(
            tmp_path,
            {"probe": "escape", "outside": str(outside), "database": str(database), "port": port},
            Limits(timeout_s=30),
        )
        with pytest.raises(TimeoutError):
            listener.accept()  # nothing arrived
    assert outcome.returncode == 0, outcome.stderr_tail
    assert result is not None
    seen = json.dumps(result["environments"])
    for value in SECRETS.values():
        assert value not in seen
    assert len(result["pids"]) <= 3, result["pids"]  # bubblewrap's init, the child, its `ls`
    assert result["write_outside"].startswith("refused"), result["write_outside"]
    assert not outside.exists()
    assert result["read_database"].startswith("refused"), result["read_database"]
    assert result["connect"].startswith("refused"), result["connect"]
    assert result["capabilities"] == "0000000000000000"
    if os.geteuid() == 0:
        assert result["uid"] == UNPRIVILEGED[0]


def test_a_folder_first_on_sys_path_is_no_window_into_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`python job.py` puts job.py's folder first on sys.path (a home, /tmp): it was bound into
    every child, which read what lay there. Folders that hold installed distributions (a user
    site, a `pip install --target` folder) are still import roots, and so is a package imported
    from the plain folder, alone. A relative path is never bound."""
    scripts = tmp_path / "scripts"
    scripts.mkdir(mode=0o755)
    notes = scripts / "notes.txt"
    notes.write_text("a password in a plain folder\n")
    notes.chmod(0o644)
    site = tmp_path / "target"
    (site / "somepackage-1.0.dist-info").mkdir(parents=True)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.syspath_prepend(str(scripts))
    helpers = scripts / "helpers"  # a package imported from that folder: it, not the folder
    helpers.mkdir()
    (helpers / "__init__.py").write_text("")
    imported = types.ModuleType("accelopt_test_helpers")
    imported.__file__ = str(helpers / "__init__.py")
    monkeypatch.setitem(sys.modules, "accelopt_test_helpers", imported)
    visible = Isolation.detect().visible(Mounts())
    assert str(scripts) not in visible
    assert str(site) in visible
    assert str(helpers) in visible
    # nor a relative entry of a PATH or LD_LIBRARY_PATH that a backend binds: the working folder
    monkeypatch.chdir(scripts)
    assert str(scripts) not in Isolation.detect().visible(Mounts(read_only=(".", "bin")))
    result, outcome = probe(
        tmp_path, {"probe": "escape", "outside": str(scripts / "x"), "database": str(notes)},
        Limits(timeout_s=30),
    )  # fmt: skip
    assert outcome.returncode == 0, outcome.stderr_tail
    assert result is not None
    assert result["read_database"].startswith("refused"), result["read_database"]


@pytest.mark.slow
@pytest.mark.parametrize("isolation", ["bubblewrap", "unsafe"])
def test_a_parent_killed_during_the_childs_start_leaves_nothing_running(
    tmp_path: Path, isolation: str
) -> None:
    """SIGKILL the parent at 50 random moments of its child's start-up: before bubblewrap
    sets its parent-death signal, before the child's lifeline is held, while Python starts.
    Nothing of the child survives any of them. Unconfined, only the lifeline can end the
    child (the old parent-death check read the parent's PID after Python's start-up, when an
    early-dead parent had already become PID 1, and left 2 runs in 5 with a kernel running)."""
    window_s = _start_up_window(tmp_path / "measure", isolation)
    rng = random.Random(20261126)
    survivors: dict[int, list[int]] = {}
    for attempt in range(50):
        marker = uuid.uuid4().hex
        folder = tmp_path / f"run{attempt}"
        folder.mkdir()
        spawner = _spawn(folder, marker, isolation)
        time.sleep(rng.uniform(0.0, window_s))
        spawner.kill()
        spawner.wait()
        alive = wait_for_none(marker, 3.0)
        if alive:
            survivors[attempt] = alive
            for pid in alive:
                os.kill(pid, signal.SIGKILL)
    assert survivors == {}


def _spawn(folder: Path, marker: str, isolation: str) -> subprocess.Popen[bytes]:
    spawner = subprocess.Popen(
        [sys.executable, "-m", "tests.support.spawner", str(folder), marker, isolation],
        cwd=REPOSITORY,
        stdout=subprocess.PIPE,
    )
    assert spawner.stdout is not None
    assert spawner.stdout.readline() == b"spawning\n"
    return spawner


def _start_up_window(folder: Path, isolation: str) -> float:
    """How long, from the spawner's word, until the child runs its own code; the kills are
    spread over one and a half times that."""
    folder.mkdir()
    marker = uuid.uuid4().hex
    started = time.monotonic()
    spawner = _spawn(folder, marker, isolation)
    running = 5 if isolation == "bubblewrap" else 1  # bwrap x2, the child, its two sleeps
    try:
        while len(wait_for_none(marker, 0.0)) < running:
            assert time.monotonic() - started < 30
            time.sleep(0.01)
        return 1.5 * (time.monotonic() - started)
    finally:
        spawner.kill()
        spawner.wait()
        wait_for_none(marker, 3.0)


def test_a_kernel_child_reads_its_inputs_writes_its_outputs_and_never_sees_the_expected(
    tmp_path: Path,
) -> None:
    """The expected outputs sit in a folder of the session that a kernel's child is not given:
    a kernel that copied them would pass every check."""
    from nkibench.backend import Phase
    from nkibench.harness import run_phase

    isolation = Isolation.detect()
    with SessionFolders(tmp_path, isolation.child_uid) as folders:
        data, hidden, out = (folders.fresh(n) for n in ("inputs", "expected", "outputs"))
        (data / "seed_0").mkdir()
        (data / "seed_0" / "input_0.npy").write_bytes(b"input")
        (hidden / "expected_0.npy").write_bytes(b"the answer")
        request = {
            "data_dir": str(data),
            "out_dir": str(out),
            "expected_file": str(hidden / "expected_0.npy"),
        }
        seen = run_phase(
            "kernel",
            Phase("tests.support.peek:peek_phase", "kernel"),
            request,
            folders,
            Limits(timeout_s=30),
            isolation=isolation,
            writes=[out],
            reads=[data],
        )
        assert (data / "seed_0" / "input_0.npy").read_bytes() == b"input"
    assert seen["read_input"] == "done"
    assert seen["write_input"].startswith("refused")
    assert seen["read_expected"].startswith("refused")
    assert seen["list_expected"].startswith("refused")
    assert seen["write_output"] == "done"
