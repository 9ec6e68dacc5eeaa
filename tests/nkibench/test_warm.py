"""Warm processes (nkibench.sandbox.warm, nkibench.sandbox.zygote): a zygote forks each phase's
child; the child reaches what a cold child does and no more, and nothing it does reaches the
next child."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from nkibench.sandbox import landlock
from nkibench.sandbox import warm as warm_module
from nkibench.sandbox.folders import SessionFolders
from nkibench.sandbox.isolation import Isolation, Mounts
from nkibench.sandbox.process import ChildOutcome, Limits, run_child
from nkibench.sandbox.warm import WarmPool
from tests.nkibench.test_sandbox import SECRETS
from tests.support import REPOSITORY
from tests.support.processes import MARK, wait_for_none
from tests.support.warm_pool import child_of_a_fresh_pool

CHILD = "nkibench.sandbox.child"


@pytest.fixture
def pool() -> Iterator[WarmPool]:
    isolation = Isolation.detect()
    reason = WarmPool.possible(isolation)
    if reason is not None:
        pytest.skip(f"no warm processes here: {reason}")
    preload = (CHILD, "tests.support.warm_probe:ask_for_the_temporary_folder")
    warm = WarmPool(isolation, Mounts(), {}, preload)
    try:
        yield warm
    finally:
        warm.close()


def run(
    pool: WarmPool,
    folders: SessionFolders,
    phase: str,
    request: dict[str, Any] | None = None,
    *,
    timeout_s: float = 60.0,
    reads: list[Path] | None = None,
    marker: str | None = None,
) -> tuple[dict[str, Any] | None, ChildOutcome]:
    outcome = run_child(
        CHILD,
        {**(request or {}), "entry": f"tests.support.warm_probe:{phase}"},
        workdir=folders.fresh("work"),
        limits=Limits(timeout_s=timeout_s, memory_mb=None),
        isolation=pool.isolation,
        read_only=reads or [],
        environment={MARK: marker} if marker else None,
        warm=pool,
    )
    return (json.loads(outcome.result) if outcome.result else None), outcome


def test_a_zygote_forks_each_child_and_serves_the_next(pool: WarmPool) -> None:
    with pool.folders("session-") as folders:
        first, one = run(pool, folders, "echo_phase")
        second, two = run(pool, folders, "echo_phase")
    assert one.warm, one.stderr_tail
    assert two.warm, two.stderr_tail
    assert first is not None
    assert second is not None
    assert first["zygote"] == second["zygote"], "the second child had a zygote of its own"
    assert first["pid"] != second["pid"]
    assert first["cwd"] != second["cwd"]
    assert first["home"] == first["cwd"]
    assert first["tmp"].startswith("refused")  # the zygote's, and the warm root's bind
    # where a compiler's temporary files go: the child's folder, not the one the zygote's
    # preload found (which the child cannot write)
    assert first["temporary"].startswith(f"done: '{first['cwd']}/"), first["temporary"]
    assert first["shm"] == second["shm"] == "done: []"


def test_a_zygote_started_ahead_serves_the_first_child(pool: WarmPool) -> None:
    """`start` (a benchmark's or a daemon's start) leaves an idle zygote: the first child is
    forked by it, and a second `start` finds it idle and starts none."""
    started = pool.start()
    assert started is not None
    assert started > 0
    assert len(pool._idle) == 1
    ahead = pool._idle[0]
    assert pool.start() == pytest.approx(0.0, abs=0.05)
    assert pool._idle == [ahead]
    with pool.folders("session-") as folders:
        _, outcome = run(pool, folders, "echo_phase")
    assert outcome.warm, outcome.stderr_tail
    assert pool._idle == [ahead], "the child was not the idle zygote's"
    assert ahead.process.poll() is None


def test_a_zygote_that_cannot_start_ahead_leaves_children_cold() -> None:
    isolation = Isolation.detect()
    if WarmPool.possible(isolation) is not None:
        pytest.skip("no warm processes here")
    broken = WarmPool(isolation, Mounts(), {}, (CHILD, "tests.support.no_such_module"))
    try:
        assert broken.start() is None
        assert broken.disabled is not None
        assert broken.describe().startswith("cold")
    finally:
        broken.close()


def test_two_children_at_once_get_a_zygote_each(pool: WarmPool) -> None:
    with pool.folders("session-") as folders, ThreadPoolExecutor(2) as threads:
        found = list(threads.map(lambda _: run(pool, folders, "nap_phase"), range(2)))
    assert all(outcome.warm for _, outcome in found), [o.stderr_tail for _, o in found]
    sandboxes = {result["sandbox"] for result, _ in found if result is not None}
    assert len(sandboxes) == 2, found


def test_a_warm_child_reaches_its_folders_and_nothing_else(
    pool: WarmPool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    outside = tmp_path / "escaped.txt"
    with pool.folders("session-") as folders, socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.5)
        sibling = folders.fresh("expected")
        (sibling / "expected_0.npy").write_bytes(b"the answer")
        inputs = folders.fresh("inputs")
        (inputs / "input_0.npy").write_bytes(b"input")
        request = {
            "port": listener.getsockname()[1],
            "sibling": str(sibling / "expected_0.npy"),
            "root": str(folders.root),
            "outside": str(outside),
            "input": str(inputs / "input_0.npy"),
        }
        before, _ = run(pool, folders, "echo_phase")
        found, outcome = run(pool, folders, "escape_phase", request, reads=[inputs])
        with pytest.raises(TimeoutError):
            listener.accept()  # nothing arrived
        after, _ = run(pool, folders, "echo_phase")
        assert (inputs / "input_0.npy").read_bytes() == b"input"  # clearing /dev/shm took none
    assert outcome.warm, outcome.stderr_tail
    assert found is not None, outcome.stderr_tail
    assert not any(value in json.dumps(found["environments"]) for value in SECRETS.values())
    for attempt in (
        "zygote_environ",
        "zygote_mem",
        "zygote_cwd",
        "read_sibling",
        "list_root",
        "write_outside",
        "write_input",
        "connect",
    ):
        assert found[attempt].startswith("refused"), (attempt, found[attempt])
    assert found["read_input"] == "done: b'input'"
    assert found["write_own"].startswith("done")
    assert found["capabilities"] == "0000000000000000"
    assert not outside.exists()
    if landlock.abi_version() >= 6:
        assert found["signal_zygote"].startswith("refused"), found["signal_zygote"]
    # whatever it tried, the same zygote still serves (not stopped, not replaced), and what
    # it left in the sandbox's /tmp and /dev/shm is gone
    assert after is not None
    assert after["zygote"] == found["zygote"]
    assert found["write_shm"].startswith("done")
    assert before is not None
    assert found["write_tmp"].startswith("refused")
    assert after["shm"] == before["shm"] == "done: []"


def test_what_a_warm_child_leaves_running_is_gone_before_the_next_starts(
    pool: WarmPool,
) -> None:
    marker = uuid.uuid4().hex
    with pool.folders("session-") as folders:
        left, one = run(pool, folders, "linger_phase", marker=marker)
        assert wait_for_none(marker, 0.0) == [], "its processes outlived the child"
        seen, two = run(pool, folders, "echo_phase")
    assert one.warm
    assert two.warm
    assert left is not None
    assert seen is not None
    assert len(left["pids"]) >= 5, left["pids"]  # init, zygote, child and its two sleeps
    # the next child sees bubblewrap's init, the zygote and itself: nothing of the first
    assert seen["pids"] == sorted([1, seen["zygote"], seen["pid"]]), seen["pids"]


def test_a_hung_warm_child_is_killed_at_its_limit_and_the_zygote_serves_on(
    pool: WarmPool,
) -> None:
    marker = uuid.uuid4().hex
    with pool.folders("session-") as folders:
        run(pool, folders, "echo_phase")  # the zygote is up: the limit times the child alone
        started = time.monotonic()
        hung, outcome = run(pool, folders, "hang_phase", timeout_s=2.0, marker=marker)
        elapsed = time.monotonic() - started
        assert wait_for_none(marker, 1.0) == [], "a grandchild survived the kill"
        after, again = run(pool, folders, "echo_phase")
    assert hung is None
    assert outcome.timed_out
    assert outcome.warm
    assert elapsed < 2.0 + 1.0
    assert again.warm
    assert after is not None


def _cold_through(preload: tuple[str, ...]) -> tuple[WarmPool, ChildOutcome]:
    """A child asked of a pool whose zygote starts with `preload` (the pool, closed, and the
    child's outcome)."""
    return child_of_a_fresh_pool(preload, "tests.support.sandbox_probe", {"probe": "env"})


def test_a_child_that_needs_a_mount_its_zygote_lacks_starts_cold(
    pool: WarmPool, tmp_path: Path
) -> None:
    """A zygote's sandbox binds the pool's mounts: a child asking for another (a profiler's
    installation) starts in a sandbox of its own that binds it, never warm without it."""
    (tmp_path / "tool").mkdir()
    (tmp_path / "tool" / "marker").write_text("bound")
    with pool.folders("session-") as folders:
        outcome = run_child(
            CHILD,
            {"entry": "tests.support.warm_probe:echo_phase"},
            workdir=folders.fresh("work"),
            limits=Limits(timeout_s=60, memory_mb=None),
            isolation=pool.isolation,
            mounts=Mounts(read_only=(str(tmp_path / "tool"),)),
            warm=pool,
        )
        warm, same = run(pool, folders, "echo_phase")
    assert outcome.result, outcome.stderr_tail
    assert not outcome.warm
    assert same.warm  # the pool itself still serves children that need nothing more
    assert warm is not None
    assert Mounts(read_only=("/a",)).within(Mounts(read_only=("/a", "/b")))
    assert not Mounts(system=True).within(Mounts())


def test_the_fingerprint_counts_every_child_that_started_cold(pool: WarmPool) -> None:
    for number in range(12):
        pool.failed(warm_module.ZygoteFailed(f"failure {number}"))
    assert pool.describe().endswith("; 12 started cold, the last: failure 11")
    assert len(pool.failures) == 10  # the reasons kept are the last few


def test_children_go_cold_where_a_zygote_cannot_start() -> None:
    broken, outcome = _cold_through(("tests.support.no_such_module",))
    assert not outcome.warm
    assert outcome.returncode == 0, outcome.stderr_tail
    assert json.loads(outcome.result or b"{}")["cwd"].startswith(str(broken.root))
    assert broken.disabled is not None
    assert "no_such_module" in broken.disabled
    assert broken.describe().startswith("cold")


def test_triton_imported_by_the_zygote_compiles_into_the_childs_folder() -> None:
    """Triton reads HOME once, at import (in the zygote): the child's environment names its
    own folder for it, or every compile would write into the zygote's folder, and fail. A
    candidate that poisons its compile cache poisons only its own: the next child's cache is
    another, empty folder, and the zygote's cannot be written."""
    isolation = Isolation.detect()
    if WarmPool.possible(isolation) is not None:
        pytest.skip("no warm processes here")
    warm = WarmPool(isolation, Mounts(), {}, (CHILD, "triton", "tests.support.warm_probe"))
    try:
        with warm.folders("session-") as folders:
            poisoner, one = run(warm, folders, "triton_cache_phase")
            victim, two = run(warm, folders, "triton_cache_phase")
    finally:
        warm.close()
    assert one.warm, one.stderr_tail
    assert two.warm, two.stderr_tail
    assert poisoner is not None
    assert victim is not None
    assert poisoner["cache"].startswith(poisoner["cwd"] + "/"), poisoner
    assert poisoner["planted"].startswith("done")
    assert poisoner["zygote_cache"].startswith("refused"), poisoner["zygote_cache"]
    assert victim["cache"] != poisoner["cache"]
    assert victim["seen"] == []


def test_a_killed_parent_takes_its_zygote_and_the_warm_child_with_it(tmp_path: Path) -> None:
    """SIGKILL the parent while a warm child hangs with two grandchildren (one left its
    group): the zygote, the child and both grandchildren are gone."""
    isolation = Isolation.detect()
    if WarmPool.possible(isolation) is not None:
        pytest.skip("no warm processes here")
    marker = uuid.uuid4().hex
    spawner = subprocess.Popen(
        [sys.executable, "-m", "tests.support.spawner", str(tmp_path), marker, "warm"],
        cwd=REPOSITORY,
        stdout=subprocess.PIPE,
    )
    try:
        assert spawner.stdout is not None
        assert spawner.stdout.readline() == b"spawning\n"
        deadline = time.monotonic() + 60
        # bubblewrap (twice), the zygote, the child and its two sleeps
        while len(wait_for_none(marker, 0.0)) < 6:
            assert time.monotonic() < deadline, wait_for_none(marker, 0.0)
            time.sleep(0.05)
    finally:
        spawner.kill()
        spawner.wait()
    assert wait_for_none(marker, 3.0) == []


def test_a_zygote_silent_at_its_start_is_stopped_and_children_go_cold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(warm_module, "START_TIMEOUT_S", 2.0)
    silent, outcome = _cold_through(("tests.support.warm_probe:stall",))
    assert not outcome.warm
    assert outcome.returncode == 0, outcome.stderr_tail
    assert silent.disabled is not None
    assert "did not answer in 2 s" in silent.disabled
